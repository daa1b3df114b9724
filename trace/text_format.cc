// format_event: the key=value event text; the key order matches the JSON writer.
#include "trace/text_format.h"

#include <iterator>

#include "trace/names.h"

namespace zfetch::trace {
namespace {

bool needs_quotes(std::string_view name) {
  return name.empty() || name.find_first_of(" \t=\"\\") != std::string_view::npos ||
         name == kRootModuleName;
}

// The root module (`<root>`, or "" as named_modules() names it) is shown as <root>; any other
// empty name (never a real param) as "".
void append_name(std::string_view name, bool is_module, fmt::memory_buffer& out) {
  if (is_module && display_module_name(name) == kRootModuleName) {
    out.append(kRootModuleName);
    return;
  }
  if (!needs_quotes(name)) {
    out.append(name);
    return;
  }
  out.push_back('"');
  for (char c : name) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  out.push_back('"');
}

}  // namespace

void append_event(const Event& e, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "seq={} t_ns={} rank={} engine={} step={} micro_step={} phase={} kind={}",
                 e.seq, e.t_ns, e.rank, e.engine, e.step, e.micro_step, format_as(e.phase),
                 format_as(e.kind));
  if (e.trace_step >= 0) {
    fmt::format_to(it, " trace_step={}", e.trace_step);
  }
  if (e.module_id >= 0) {
    out.append(std::string_view(" module="));
    append_name(e.module, true, out);
    fmt::format_to(it, " module_id={}", e.module_id);
  }
  if (e.param_id >= 0) {
    out.append(std::string_view(" param="));
    append_name(e.param, false, out);
    fmt::format_to(it, " param_id={}", e.param_id);
  }
  if (e.status != Status::None) {
    fmt::format_to(it, " status={}", format_as(e.status));
  }
  if (e.numel >= 0) {
    fmt::format_to(it, " numel={}", e.numel);
  }
  if (e.bytes >= 0) {
    fmt::format_to(it, " bytes={}", e.bytes);
  }
  if (e.group >= 0) {
    fmt::format_to(it, " group={}", e.group);
  }
}

std::string format_event(const Event& event) {
  fmt::memory_buffer out;
  append_event(event, out);
  return fmt::to_string(out);
}

}  // namespace zfetch::trace
