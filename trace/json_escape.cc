// JSON string escaping; the fast path copies 8 clean bytes at a time.
#include "trace/json_escape.h"

#include <cstdint>
#include <cstring>

namespace zfetch::trace {
namespace {

bool needs_escape(char c) {
  return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
}

char* escape_byte(char c, char* out) {
  constexpr char kHex[] = "0123456789abcdef";
  *out++ = '\\';
  switch (c) {
  case '"':
    *out++ = '"';
    break;
  case '\\':
    *out++ = '\\';
    break;
  case '\b':
    *out++ = 'b';
    break;
  case '\f':
    *out++ = 'f';
    break;
  case '\n':
    *out++ = 'n';
    break;
  case '\r':
    *out++ = 'r';
    break;
  case '\t':
    *out++ = 't';
    break;
  default: {
    const auto byte = static_cast<unsigned char>(c);
    *out++ = 'u';
    *out++ = '0';
    *out++ = '0';
    *out++ = kHex[byte >> 4];
    *out++ = kHex[byte & 0xF];
  }
  }
  return out;
}

}  // namespace

char* escape_json(std::string_view text, char* out) {
  const char* src = text.data();
  const size_t size = text.size();
  size_t i = 0;
  while (i < size) {
    // Copy clean 8-byte words, then handle one byte the slow way and try words again.
    while (i + 8 <= size) {
      uint64_t word = 0;
      std::memcpy(&word, src + i, 8);
      if (json_special_mask(word) != 0) {
        break;
      }
      std::memcpy(out, &word, 8);
      out += 8;
      i += 8;
    }
    if (i == size) {
      break;
    }
    const char c = src[i++];
    if (needs_escape(c)) {
      out = escape_byte(c, out);
    } else {
      *out++ = c;
    }
  }
  return out;
}

}  // namespace zfetch::trace
