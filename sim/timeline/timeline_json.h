// Small JSON output helpers shared by the timeline's writers (summary, Chrome trace).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string_view>

#include "trace/json_escape.h"

namespace zfetch::sim::detail {

/// Appends `text` as a quoted JSON string, escaped as the trace writer escapes names.
inline void append_json_string(fmt::memory_buffer& out, std::string_view text) {
  out.push_back('"');
  const size_t start = out.size();
  out.resize(start + trace::max_escaped_size(text));
  const char* end = trace::escape_json(text, out.data() + start);
  out.resize(static_cast<size_t>(end - out.data()));
  out.push_back('"');
}

/// Appends ns as us with exactly 3 decimals, from the integer (no float rounding).
inline void append_us(fmt::memory_buffer& out, int64_t ns) {
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;
  }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

}  // namespace zfetch::sim::detail
