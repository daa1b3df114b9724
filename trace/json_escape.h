// JSON string escaping shared by the trace writer and its tests: the exact bytes the writer emits.
#pragma once

#include <cstddef>
#include <string_view>

namespace zfetch::trace {

/// The most bytes escape_json can write for `text`: every byte may become `\u00XX`.
constexpr size_t max_escaped_size(std::string_view text) {
  return text.size() * 6;
}

/// Writes `text` JSON-escaped (without quotes) at `out` and returns the end. Escapes `"`, `\`
/// and control bytes (\b \f \n \r \t, others as \u00XX); other bytes, UTF-8 included, are
/// copied as they are so that names stay readable.
char* escape_json(std::string_view text, char* out);

}  // namespace zfetch::trace
