// Small JSON output helpers shared by the timeline's writers (summary, Chrome trace).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string_view>

namespace zfetch::sim::detail {

/// Appends `text` as a quoted JSON string: escapes `"`, `\` and control bytes; other bytes
/// (UTF-8 included) are copied.
inline void append_json_string(fmt::memory_buffer& out, std::string_view text) {
  out.push_back('"');
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(u));
    } else {
      out.push_back(c);
    }
  }
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
