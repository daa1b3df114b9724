"""A small YAML writer for scenarios (no dependency beyond the standard library): block style for
structure, flow style for short mappings and lists, so a generated scenario reads like a written one."""

import json
import re

_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./-]*$")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}
FLOW_WIDTH = 96


def scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if value is None:
        return "null"
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text)


def flow(value):
    if isinstance(value, dict):
        return "{" + ", ".join(f"{scalar(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return scalar(value)


def _fits(value, indent):
    return indent + len(flow(value)) <= FLOW_WIDTH


def _block(value, indent, out):
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item and not _fits(item, indent + len(str(key)) + 2):
                out.append(f"{pad}{scalar(key)}:")
                _block(item, indent + 2, out)
            else:
                out.append(f"{pad}{scalar(key)}: {flow(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item and not _fits(item, indent + 2):
                if isinstance(item, dict):
                    lines = []
                    _block(item, indent + 2, lines)
                    lines[0] = pad + "- " + lines[0][indent + 2:]
                    out.extend(lines)
                else:
                    out.append(f"{pad}-")
                    _block(item, indent + 2, out)
            else:
                out.append(f"{pad}- {flow(item)}")
    else:
        out.append(pad + scalar(value))


def dump(document, header_comment=""):
    """``document`` (dicts, lists, scalars) as YAML text, with ``header_comment`` lines first."""
    out = [f"# {line}" if line else "#" for line in header_comment.splitlines()]
    _block(document, 0, out)
    return "\n".join(out) + "\n"
