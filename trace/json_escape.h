// JSON string escaping shared by the trace writer and its tests: the exact bytes the writer emits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace zfetch::trace {

/// A mask with the high bit set in (at least) the lowest byte of `word` that is special inside
/// a JSON string: below 0x20, '"' or '\\'; 0 if there is none. Bytes above the first special
/// one may be flagged falsely, so only the lowest flag is exact (zero-byte test from "Bit
/// Twiddling Hacks"). Names are almost always clean, so testing 8 bytes at once is what makes
/// the writer's escaping and the reader's string scan fast.
constexpr uint64_t json_special_mask(uint64_t word) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  const auto zero_bytes = [](uint64_t w) { return (w - kOnes) & ~w & kHighs; };
  const uint64_t control = (word - kOnes * 0x20) & ~word & kHighs;
  return control | zero_bytes(word ^ (kOnes * '"')) | zero_bytes(word ^ (kOnes * '\\'));
}

/// json_special_mask, with every byte of 0x80 or above flagged too: the readers' string scans
/// leave their fast paths at a non-ASCII byte, so that the slow path checks its UTF-8.
constexpr uint64_t json_special_or_non_ascii_mask(uint64_t word) {
  return json_special_mask(word) | (word & 0x8080808080808080ULL);
}

/// The most bytes escape_json can write for `text`: every byte may become `\u00XX`.
constexpr size_t max_escaped_size(std::string_view text) {
  return text.size() * 6;
}

/// Writes `text` JSON-escaped (without quotes) at `out` and returns the end. Escapes `"`, `\`
/// and control bytes (\b \f \n \r \t, others as \u00XX); other bytes, UTF-8 included, are
/// copied as they are so that names stay readable.
char* escape_json(std::string_view text, char* out);

}  // namespace zfetch::trace
