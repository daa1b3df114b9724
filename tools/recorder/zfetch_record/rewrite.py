"""Writes a recording's scenario again from its observations, with this version of the writer:

    python3 -m zfetch_record.rewrite DIR/scenario.rank0.observed.json [--out DIR/scenario.rank0.yaml]

(stdout without --out). Needs neither torch nor DeepSpeed: a writer fix applies to runs recorded
before it without running the model again."""

import argparse
import json
import sys

from .scenario_writer import scenario_from_observations


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m zfetch_record.rewrite")
    parser.add_argument("observed", help="a scenario.rankR.observed.json written by a recording")
    parser.add_argument("--out", help="the scenario to write (default: stdout)")
    args = parser.parse_args(argv)
    try:
        with open(args.observed, encoding="utf-8") as f:
            text = scenario_from_observations(json.load(f))
    except (OSError, ValueError, KeyError) as exc:
        print(f"{args.observed}: error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
