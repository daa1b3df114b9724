// FlatJsonParser: the subset of JSON that trace lines use, with errors that give a column.
#include "trace/flat_json.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "base/enum_names.h"
#include "base/text_bytes.h"
#include "trace/json_escape.h"

namespace zfetch::trace {
namespace {

// json_special_mask finds the first special byte with countr_zero, which needs the lowest
// address in the lowest bits.
static_assert(std::endian::native == std::endian::little, "the string scan assumes little-endian");

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Writes `code` as UTF-8 at `out`; returns the end.
char* put_utf8(uint32_t code, char* out) {
  if (code < 0x80) {
    *out++ = static_cast<char>(code);
  } else if (code < 0x800) {
    *out++ = static_cast<char>(0xC0 | (code >> 6));
    *out++ = static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    *out++ = static_cast<char>(0xE0 | (code >> 12));
    *out++ = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    *out++ = static_cast<char>(0x80 | (code & 0x3F));
  } else {
    *out++ = static_cast<char>(0xF0 | (code >> 18));
    *out++ = static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    *out++ = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    *out++ = static_cast<char>(0x80 | (code & 0x3F));
  }
  return out;
}

// How a character is named in "got ..." parts of messages.
std::string describe(const char* p, const char* end) {
  if (p == end) {
    return "end of line";
  }
  const auto c = static_cast<unsigned char>(*p);
  if (c < 0x20 || c >= 0x7F) {
    return fmt::format("byte 0x{:02x}", c);
  }
  return fmt::format("'{}'", static_cast<char>(c));
}

}  // namespace

std::string_view type_name(JsonValue::Type type) {
  static constexpr base::EnumNames<JsonValue::Type::Array> kNames(
      "string", "integer", "float", "boolean", "null", "object", "array");
  return kNames[type];
}

FlatJsonParser::Result FlatJsonParser::fail(std::string_view what) {
  error_at_ = p_;
  error_ = fmt::format("malformed JSON: {}", what);
  return Result::Error;
}

FlatJsonParser::Result FlatJsonParser::fail_expected(std::string_view expected) {
  return fail(fmt::format("expected {}, got {}", expected, describe(p_, end_)));
}

void FlatJsonParser::skip_whitespace() {
  while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) {
    ++p_;
  }
}

// Parses a string starting at the opening quote. The fast path finds the closing quote 8 bytes
// at a time and returns a view of the line as it is; only a string with an escape is rewritten
// (unescaped in place, since an escape is never shorter than what it stands for).
bool FlatJsonParser::parse_string(std::string_view& out) {
  char* const quote = p_;
  char* const start = p_ + 1;
  char* p = start;
  char* const end = end_;  // a local, so that writes through `char*` don't force reloads
  while (end - p >= 8) {
    uint64_t word = 0;
    std::memcpy(&word, p, 8);
    const uint64_t mask = json_special_or_non_ascii_mask(word);
    if (mask != 0) {
      p += std::countr_zero(mask) / 8;  // the lowest flagged byte is exact
      break;
    }
    p += 8;
  }
  if (end - p < 8) {
    while (p != end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20 &&
           static_cast<unsigned char>(*p) < 0x80) {
      ++p;
    }
  }
  if (p != end && *p == '"') {
    out = std::string_view(start, static_cast<size_t>(p - start));
    p_ = p + 1;
    return true;
  }
  // Slow path: an escape, a control character or a non-ASCII byte at `p`.
  char* write = p;
  while (true) {
    if (p == end) {
      p_ = quote;  // point at where the string began
      fail("unterminated string");
      return false;
    }
    const char c = *p;
    if (c == '"') {
      ++p;
      break;
    }
    if (static_cast<unsigned char>(c) < 0x20) {
      p_ = p;
      fail(fmt::format("control character {} in a string (escape it)", describe(p, end)));
      return false;
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      // Names must be UTF-8: every output that prints them stays valid text and JSON.
      const size_t length = base::utf8_length_at(std::string_view(p, static_cast<size_t>(end - p)));
      if (length == 0) {
        p_ = p;
        fail(base::describe_invalid_utf8(static_cast<unsigned char>(c)));
        return false;
      }
      for (size_t k = 0; k < length; ++k) {
        *write++ = *p++;
      }
      continue;
    }
    if (c != '\\') {
      *write++ = *p++;
      continue;
    }
    ++p;
    if (p == end) {
      p_ = quote;
      fail("unterminated string");
      return false;
    }
    const char escape = *p++;
    switch (escape) {
    case '"':
      *write++ = '"';
      break;
    case '\\':
      *write++ = '\\';
      break;
    case '/':
      *write++ = '/';
      break;
    case 'b':
      *write++ = '\b';
      break;
    case 'f':
      *write++ = '\f';
      break;
    case 'n':
      *write++ = '\n';
      break;
    case 'r':
      *write++ = '\r';
      break;
    case 't':
      *write++ = '\t';
      break;
    case 'u': {
      uint32_t code = 0;
      for (int i = 0; i < 4; ++i) {
        const int digit = p == end ? -1 : hex_value(*p);
        if (digit < 0) {
          p_ = p;
          fail_expected("4 hex digits after '\\u'");
          return false;
        }
        code = code * 16 + static_cast<uint32_t>(digit);
        ++p;
      }
      // A high surrogate followed by \uDC00-\uDFFF makes one code point.
      if (code >= 0xD800 && code <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
        uint32_t low = 0;
        bool ok = true;
        for (int i = 2; i < 6; ++i) {
          const int digit = hex_value(p[i]);
          ok = ok && digit >= 0;
          low = low * 16 + static_cast<uint32_t>(digit < 0 ? 0 : digit);
        }
        if (ok && low >= 0xDC00 && low <= 0xDFFF) {
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          p += 6;
        }
      }
      if (code >= 0xD800 && code <= 0xDFFF) {
        p_ = p - 6;  // point at the escape
        fail(fmt::format("unpaired surrogate \\u{:04X} in a string (it has no UTF-8 form)", code));
        return false;
      }
      write = put_utf8(code, write);
      break;
    }
    default:
      p_ = p - 2;  // point at the backslash
      fail(fmt::format("invalid escape '\\{}' in a string", escape));
      return false;
    }
  }
  p_ = p;
  out = std::string_view(start, static_cast<size_t>(write - start));
  return true;
}

FlatJsonParser::Result FlatJsonParser::parse_number(std::string_view key, JsonValue& value) {
  const char* const start = p_;
  const bool negative = *p_ == '-';
  if (negative) {
    ++p_;
  }
  if (p_ == end_ || !is_digit(*p_)) {
    return fail_expected("a digit");
  }
  if (*p_ == '0' && p_ + 1 != end_ && is_digit(p_[1])) {
    return fail("number with a leading zero");
  }
  // Accumulate as a negative number so that INT64_MIN fits. Up to 18 digits cannot overflow,
  // so only longer numbers pay for the per-digit check (a division).
  const char* const digits_start = p_;
  int64_t acc = 0;
  bool overflow = false;
  while (p_ != end_ && is_digit(*p_)) {
    const int digit = *p_++ - '0';
    if (p_ - digits_start > 18 && acc < (INT64_MIN + digit) / 10) {
      overflow = true;
    } else if (!overflow) {
      acc = acc * 10 - digit;
    }
  }
  if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) {
    while (p_ != end_ &&
           (is_digit(*p_) || *p_ == '.' || *p_ == 'e' || *p_ == 'E' || *p_ == '+' || *p_ == '-')) {
      ++p_;
    }
    value.type = JsonValue::Type::Float;
    value.text = std::string_view(start, static_cast<size_t>(p_ - start));
    return Result::Field;
  }
  if (!negative && acc == INT64_MIN) {
    overflow = true;
  }
  if (overflow) {
    error_at_ = start;
    error_ = fmt::format("integer {} out of range for '{}'",
                         std::string_view(start, static_cast<size_t>(p_ - start)), key);
    return Result::Error;
  }
  value.type = JsonValue::Type::Integer;
  value.integer = negative ? acc : -acc;
  value.text = std::string_view(start, static_cast<size_t>(p_ - start));
  return Result::Field;
}

bool FlatJsonParser::parse_literal(std::string_view word) {
  if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
    return false;
  }
  p_ += word.size();
  return true;
}

FlatJsonParser::Result FlatJsonParser::next(std::string_view& key, JsonValue& value) {
  if (finished_) {
    return Result::End;
  }
  skip_whitespace();
  if (!started_) {
    if (p_ == end_ || *p_ != '{') {
      return fail_expected("'{' to start an object");
    }
    ++p_;
    started_ = true;
    skip_whitespace();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      finished_ = true;
    }
  } else {
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      finished_ = true;
    } else if (p_ != end_ && *p_ == ',') {
      ++p_;
      skip_whitespace();
    } else {
      return fail_expected("',' or '}'");
    }
  }
  if (finished_) {
    skip_whitespace();
    if (p_ != end_) {
      return fail(fmt::format("unexpected {} after the object", describe(p_, end_)));
    }
    return Result::End;
  }
  if (p_ == end_ || *p_ != '"') {
    return fail_expected("'\"' to start a key");
  }
  key_at_ = p_;
  if (!parse_string(key)) {
    return Result::Error;
  }
  skip_whitespace();
  if (p_ == end_ || *p_ != ':') {
    return fail_expected("':' after a key");
  }
  ++p_;
  skip_whitespace();
  if (p_ == end_) {
    return fail_expected("a value");
  }
  value_at_ = p_;
  switch (*p_) {
  case '"':
    value.type = JsonValue::Type::String;
    return parse_string(value.text) ? Result::Field : Result::Error;
  case '{':
    value.type = JsonValue::Type::Object;
    return Result::Field;
  case '[':
    value.type = JsonValue::Type::Array;
    return Result::Field;
  default:
    break;
  }
  if (*p_ == '-' || is_digit(*p_)) {
    return parse_number(key, value);
  }
  if (parse_literal("true") || parse_literal("false")) {
    value.type = JsonValue::Type::Bool;
    return Result::Field;
  }
  if (parse_literal("null")) {
    value.type = JsonValue::Type::Null;
    return Result::Field;
  }
  return fail_expected("a value");
}

}  // namespace zfetch::trace
