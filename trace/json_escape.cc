// JSON string escaping; the fast path copies runs of bytes that need no escape in one memcpy.
#include "trace/json_escape.h"

#include <cstring>

namespace zfetch::trace {
namespace {

bool needs_escape(char c) {
  return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
}

}  // namespace

char* escape_json(std::string_view text, char* out) {
  constexpr char kHex[] = "0123456789abcdef";
  size_t run_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!needs_escape(c)) {
      continue;
    }
    std::memcpy(out, text.data() + run_start, i - run_start);
    out += i - run_start;
    run_start = i + 1;
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
  }
  std::memcpy(out, text.data() + run_start, text.size() - run_start);
  return out + (text.size() - run_start);
}

}  // namespace zfetch::trace
