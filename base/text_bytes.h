// What every text input of zfetch must be: UTF-8 without NUL bytes. One check, used by the whole
// file reader, the trace reader's strings and the diagnostic renderer's quoted lines, so that
// every output (JSON included) stays valid text.
#pragma once

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace zfetch::base {

/// A byte that no zfetch input may hold, and why.
struct NonTextByte {
  size_t offset = 0;
  std::string what;  ///< "a NUL byte (...)", "invalid UTF-8 (byte 0xFF; ...)"
};

/// utf8_length_at(text): the length in bytes of the UTF-8 character at the start of `text`, or
/// 0 when `text` does not start with one (a stray continuation byte, an overlong form, a UTF-16
/// surrogate, a code point past U+10FFFF, a sequence cut short), as RFC 3629 defines UTF-8.
/// describe_invalid_utf8(lead): "invalid UTF-8 (byte 0xFF; zfetch reads UTF-8 text)".
/// find_non_text_byte(text): the first NUL byte, or byte that is not part of valid UTF-8.
inline size_t utf8_length_at(std::string_view text) {
  if (text.empty()) {
    return 0;
  }
  const auto lead = static_cast<unsigned char>(text[0]);
  if (lead < 0x80) {
    return 1;
  }
  // The length of the sequence and the range of its second byte, which excludes overlong
  // forms (E0, F0), UTF-16 surrogates (ED) and code points past U+10FFFF (F4).
  size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    low = lead == 0xE0 ? 0xA0 : 0x80;
    high = lead == 0xED ? 0x9F : 0xBF;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    low = lead == 0xF0 ? 0x90 : 0x80;
    high = lead == 0xF4 ? 0x8F : 0xBF;
  }
  if (length == 0 || text.size() < length) {
    return 0;
  }
  for (size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[k]);
    if (k == 1 ? next < low || next > high : next < 0x80 || next > 0xBF) {
      return 0;
    }
  }
  return length;
}

/// The byte order mark some editors (Notepad, Excel's CSV export) put before a UTF-8 file's first
/// line. It is not part of the text, so zfetch's own readers (the trace reader, order files, the
/// hjson reader, the trace sniffer) skip it: without that, a trace header or an order file's first
/// directive would not be recognised. yaml-cpp and nlohmann-json skip it themselves.
inline constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

inline std::string_view without_byte_order_mark(std::string_view text) {
  if (text.starts_with(kUtf8ByteOrderMark)) {
    text.remove_prefix(kUtf8ByteOrderMark.size());
  }
  return text;
}

inline std::string describe_invalid_utf8(unsigned char lead) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", lead);
  return std::string("invalid UTF-8 (byte ") + hex + "; zfetch reads UTF-8 text)";
}

inline std::optional<NonTextByte> find_non_text_byte(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == 0) {
      return NonTextByte{i, "a NUL byte (zfetch reads UTF-8 text; is the file binary or UTF-16?)"};
    }
    if (byte < 0x80) {
      ++i;
      continue;
    }
    const size_t length = utf8_length_at(text.substr(i));
    if (length == 0) {
      return NonTextByte{i, describe_invalid_utf8(byte)};
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace zfetch::base
