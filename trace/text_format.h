// The compact `key=value` rendering of an event, for people and for check files (style.md 7.6).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "trace/event.h"

namespace zfetch::trace {

/// Renders `event` on one line, fields in the trace file's order:
/// `seq=7 t_ns=1200 rank=0 engine=1 step=0 micro_step=1 phase=recompute kind=fetch trace_step=6
/// module=adapter module_id=5`. Absent fields are left out; the root module is `module=<root>`.
/// A name that is empty (other than the root module), or has whitespace, '=' or '"' (never a Python
/// attribute path) is written in double quotes with `\"` and `\\` escaped.
std::string format_event(const Event& event);

/// Appends the same text as format_event to `out` (no newline); allocates only if `out` grows.
void append_event(const Event& event, fmt::memory_buffer& out);

}  // namespace zfetch::trace
