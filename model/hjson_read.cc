// read_hjson (see hjson_read.h). Each member follows the hjson-py decoder function with the
// same job (getNext, scanKeyName, scantfnns, mlscanstring, JSONObject, ...), so that what is
// accepted, and how a quoteless value is split from what follows it, is hjson-py's.
#include "model/hjson_read.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "base/text_bytes.h"

namespace zfetch::model::detail {

namespace {

constexpr int kEnd = -1;

// The first error; thrown inside Reader and caught by read_hjson, so every scan can stop at once.
struct Failure {
  HjsonError error;
};

bool is_hjson_space(int ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

// The whitespace Python's str.strip() removes, in UTF-8: the byte length of the character that
// starts (or, with `backwards`, ends) at `text`'s edge, 0 when it is not whitespace.
size_t python_space_length(std::string_view text, bool backwards) {
  constexpr std::array<std::string_view, 17> kWide = {
      "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
      "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
      "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
      "\xE2\x80\xA9", "\xE2\x80\xAF"};
  constexpr std::array<std::string_view, 2> kMoreWide = {"\xE2\x81\x9F", "\xE3\x80\x80"};
  if (text.empty()) {
    return 0;
  }
  const auto byte = static_cast<unsigned char>(backwards ? text.back() : text.front());
  if ((byte >= '\t' && byte <= '\r') || (byte >= 0x1C && byte <= 0x1F) || byte == ' ') {
    return 1;
  }
  // Every wide space is 2 or 3 bytes of UTF-8: an ASCII byte at the end looked at is none.
  if (byte < 0x80) {
    return 0;
  }
  auto matches = [&](std::string_view space) {
    return backwards ? text.ends_with(space) : text.starts_with(space);
  };
  for (std::string_view space : kWide) {
    if (matches(space)) {
      return space.size();
    }
  }
  for (std::string_view space : kMoreWide) {
    if (matches(space)) {
      return space.size();
    }
  }
  return 0;
}

std::string_view python_strip(std::string_view text, bool front = true) {
  while (front && python_space_length(text, false) > 0) {
    text.remove_prefix(python_space_length(text, false));
  }
  while (python_space_length(text, true) > 0) {
    text.remove_suffix(python_space_length(text, true));
  }
  return text;
}

void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// A YAML double-quoted scalar holding `text` exactly: control characters and the characters
// YAML does not allow raw (C1 controls, line and paragraph separators, U+FEFF) are escaped.
void append_yaml_string(std::string& out, std::string_view text) {
  out += '"';
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // Plain ASCII is by far the common byte: it skips the comparisons below.
    if (byte >= 0x20 && byte < 0x7F && byte != '"' && byte != '\\') {
      out += static_cast<char>(byte);
      continue;
    }
    const std::string_view rest = text.substr(i);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += static_cast<char>(byte);
    } else if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02X}", byte);
    } else if (byte == 0xC2 && rest.size() > 1 && static_cast<unsigned char>(rest[1]) <= 0x9F) {
      out += fmt::format("\\u00{:02X}", static_cast<unsigned char>(rest[1]));
      i += 1;
    } else if (rest.starts_with("\xE2\x80\xA8") || rest.starts_with("\xE2\x80\xA9") ||
               rest.starts_with("\xEF\xBB\xBF") || rest.starts_with("\xEF\xBF\xBE") ||
               rest.starts_with("\xEF\xBF\xBF")) {
      const uint32_t code = ((byte & 0x0Fu) << 12) |
                            ((static_cast<unsigned char>(rest[1]) & 0x3Fu) << 6) |
                            (static_cast<unsigned char>(rest[2]) & 0x3Fu);
      out += fmt::format("\\u{:04X}", code);
      i += 2;
    } else {
      out += static_cast<char>(byte);
    }
  }
  out += '"';
}

std::optional<uint32_t> hex4(std::string_view digits) {
  if (digits.size() < 4) {
    return std::nullopt;
  }
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    const char c = digits[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) {
      return std::nullopt;
    }
    value = value * 16 + static_cast<uint32_t>(digit);
  }
  return value;
}

// How far hjson-py's NUMBER_RE, `[\t ]*(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?[\t ]*`, matches
// from `begin`; `number` is the match without its blanks, `is_float` whether it has a fraction
// or an exponent. npos when it does not match.
size_t number_match_end(std::string_view s, size_t begin, std::string_view& number,
                        bool& is_float) {
  auto at = [&](size_t i) { return i < s.size() ? s[i] : '\0'; };
  auto digit = [&](size_t i) { return at(i) >= '0' && at(i) <= '9'; };
  size_t i = begin;
  while (at(i) == ' ' || at(i) == '\t') {
    ++i;
  }
  const size_t start = i;
  if (at(i) == '-') {
    ++i;
  }
  if (at(i) == '0') {
    ++i;
  } else if (at(i) >= '1' && at(i) <= '9') {
    while (digit(i)) {
      ++i;
    }
  } else {
    return std::string_view::npos;
  }
  is_float = false;
  if (at(i) == '.' && digit(i + 1)) {
    i += 1;
    while (digit(i)) {
      ++i;
    }
    is_float = true;
  }
  if (at(i) == 'e' || at(i) == 'E') {
    const size_t sign = at(i + 1) == '-' || at(i + 1) == '+' ? 1 : 0;
    if (digit(i + 1 + sign)) {
      i += 1 + sign;
      while (digit(i)) {
        ++i;
      }
      is_float = true;
    }
  }
  number = s.substr(start, i - start);
  while (at(i) == ' ' || at(i) == '\t') {
    ++i;
  }
  return i;
}

class Reader {
 public:
  Reader(std::string_view text, size_t max_depth, uint64_t max_nodes)
      : s_(text), max_depth_(max_depth), max_nodes_(max_nodes) {}

  // raw_decode, then decode's check that only blanks and comments follow the document.
  HjsonDocument read() {
    HjsonDocument document;
    try {
      size_t start = s_.size() - base::without_byte_order_mark(s_).size();
      start = next(start);
      size_t end = 0;
      if (at(start) == '{' || at(start) == '[' || s_.find('\n') == std::string_view::npos) {
        end = value(start, 0);
      } else {
        // Several lines not starting with a brace: an object without its root braces.
        end = object(start, 1, /*braces=*/false, start);
      }
      end = next(end);
      if (end != s_.size()) {
        fail(end, "extra text after the document");
      }
      document.yaml = std::move(yaml_);
      document.line_origins = std::move(origins_);
    } catch (const Failure& failure) {
      document.error = failure.error;
    }
    return document;
  }

 private:
  [[nodiscard]] int at(size_t i) const {
    return i < s_.size() ? static_cast<unsigned char>(s_[i]) : kEnd;
  }

  [[noreturn]] static void fail(size_t offset, std::string message) {
    throw Failure{HjsonError{offset, std::move(message), std::nullopt}};
  }

  // getNext: the next character that is neither whitespace nor in a comment.
  [[nodiscard]] size_t next(size_t end) const {
    while (true) {
      while (is_hjson_space(at(end))) {
        ++end;
      }
      if (at(end) == '#' || (at(end) == '/' && at(end + 1) == '/')) {
        end = end_of_line(end);
      } else if (at(end) == '/' && at(end + 1) == '*') {
        const size_t close = s_.find("*/", end + 2);
        if (close == std::string_view::npos) {
          fail(end, "unterminated /* comment");
        }
        end = close + 2;
      } else {
        return end;
      }
    }
  }

  [[nodiscard]] size_t end_of_line(size_t end) const {
    while (at(end) != '\r' && at(end) != '\n' && at(end) != kEnd) {
      ++end;
    }
    return end;
  }

  // Starts the YAML line of one node found at `origin`, after a comma when it follows a
  // sibling.
  void begin_node(size_t origin) {
    if (++nodes_ > max_nodes_) {
      fail(origin, fmt::format("more than {} keys and values", max_nodes_));
    }
    begin_line(origin);
  }

  void begin_line(size_t origin) {
    if (!yaml_.empty()) {
      yaml_ += "\n ";
    }
    origins_.push_back(origin);
    if (after_sibling_) {
      yaml_ += ',';
      after_sibling_ = false;
    }
  }

  // scan_once: one value at `end` (a non-blank character); returns the offset after it.
  size_t value(size_t end, size_t depth) {
    const int ch = at(end);
    if (ch == kEnd) {
      fail(end, "expected a value");
    }
    if (ch == '"') {
      std::string text;
      const size_t after = quoted(end + 1, text);
      begin_node(end);
      append_yaml_string(yaml_, text);
      return after;
    }
    if (ch == '{' || ch == '[') {
      if (depth + 1 > max_depth_) {
        fail(end, fmt::format("nesting deeper than {} levels", max_depth_));
      }
      return ch == '{' ? object(end + 1, depth + 1, /*braces=*/true, end)
                       : array(end + 1, depth + 1, end);
    }
    if (s_.substr(end).starts_with("'''")) {
      std::string text;
      const size_t after = multiline(end, text);
      begin_node(end);
      append_yaml_string(yaml_, text);
      return after;
    }
    return quoteless(end);
  }

  // scanstring: a JSON string whose opening quote is just before `end`; returns the offset
  // after its closing quote.
  size_t quoted(size_t end, std::string& out) const {
    const size_t begin = end - 1;
    while (true) {
      const int ch = at(end);
      if (ch == kEnd) {
        fail(begin, "unterminated string");
      }
      if (ch == '"') {
        return end + 1;
      }
      if (ch < 0x20) {
        fail(end,
             fmt::format("control character U+{:04X} in a string (write it as an escape)", ch));
      }
      if (ch != '\\') {
        out += static_cast<char>(ch);
        ++end;
        continue;
      }
      const int escape = at(end + 1);
      if (escape == kEnd) {
        fail(begin, "unterminated string");
      }
      if (escape != 'u') {
        constexpr std::string_view kEscapes = "\"\"\\\\//b\bf\fn\nr\rt\t";
        size_t row = 0;
        while (row < kEscapes.size() && kEscapes[row] != escape) {
          row += 2;
        }
        if (row >= kEscapes.size()) {
          fail(end, fmt::format("invalid escape '\\{}' in a string", static_cast<char>(escape)));
        }
        out += kEscapes[row + 1];
        end += 2;
        continue;
      }
      end = unicode_escape(end, out);
    }
  }

  // `\uXXXX` at `end`, joined with a following `\uXXXX` into one character when the two are a
  // surrogate pair.
  size_t unicode_escape(size_t end, std::string& out) const {
    const std::optional<uint32_t> code = hex4(s_.substr(std::min(end + 2, s_.size())));
    if (!code) {
      fail(end, "invalid \\u escape: expected four hex digits");
    }
    uint32_t character = *code;
    size_t after = end + 6;
    if ((character & 0xFC00) == 0xD800 && at(after) == '\\' && at(after + 1) == 'u') {
      const std::optional<uint32_t> low = hex4(s_.substr(std::min(after + 2, s_.size())));
      if (!low) {
        fail(after, "invalid \\u escape: expected four hex digits");
      }
      if ((*low & 0xFC00) == 0xDC00) {
        character = 0x10000 + (((character - 0xD800) << 10) | (*low - 0xDC00));
        after += 6;
      }
    }
    if (character >= 0xD800 && character <= 0xDFFF) {
      fail(end, fmt::format("unpaired surrogate \\u{:04X} in a string (it has no UTF-8 form)",
                            character));
    }
    append_utf8(out, character);
    return after;
  }

  // mlscanstring: a ''' string at `start`; each line loses as much leading blank as the
  // column of the opening quotes.
  size_t multiline(size_t start, std::string& out) const {
    const size_t line_start = s_.rfind('\n', start);
    size_t indent = line_start == std::string_view::npos ? start : start - line_start - 1;
    auto skip_indent = [&](size_t end, size_t most) {
      while (most > 0 && (at(end) == ' ' || at(end) == '\t' || at(end) == '\r')) {
        ++end;
        --most;
      }
      return end;
    };
    size_t end = skip_indent(start + 3, std::string_view::npos);
    if (at(end) == '\n') {
      end = skip_indent(end + 1, indent);
    }
    size_t quotes = 0;
    while (true) {
      const int ch = at(end);
      if (ch == kEnd) {
        fail(start, "unterminated multi-line string");
      }
      if (ch == '\'') {
        ++end;
        if (++quotes == 3) {
          if (out.empty()) {
            fail(start, "empty multi-line string (hjson-py fails on it; write \"\")");
          }
          if (out.back() == '\n') {
            out.pop_back();
          }
          return end;
        }
        continue;
      }
      out.append(quotes, '\'');
      quotes = 0;
      if (ch == '\n') {
        out += '\n';
        end = skip_indent(end + 1, indent);
      } else {
        if (ch != '\r') {
          out += static_cast<char>(ch);
        }
        ++end;
      }
    }
  }

  // scantfnns: a value without quotes. It is true, false, null or a number when one of those
  // ends where a comma, a closing bracket or a comment could follow; otherwise a string to the
  // end of the line, commas, brackets and comment marks included.
  size_t quoteless(size_t end) {
    const size_t begin = next(end);
    const int first = at(begin);
    for (size_t e = begin;; ++e) {
      const int ch = at(e);
      const bool eol = ch == '\r' || ch == '\n' || ch == kEnd;
      if (!(eol || ch == ',' || ch == '}' || ch == ']' || ch == '#' ||
            (ch == '/' && (at(e + 1) == '/' || at(e + 1) == '*')))) {
        continue;
      }
      const std::string_view word = python_strip(s_.substr(begin, e - begin));
      if ((first == 'n' && word == "null") || (first == 't' && word == "true") ||
          (first == 'f' && word == "false")) {
        begin_node(begin);
        yaml_ += word;
        return e;
      }
      if (first == '-' || (first >= '0' && first <= '9')) {
        std::string_view number;
        bool is_float = false;
        if (number_match_end(s_, begin, number, is_float) == e) {
          begin_node(begin);
          append_number(begin, number, is_float);
          return e;
        }
      }
      if (eol) {
        begin_node(begin);
        append_yaml_string(yaml_, word);
        return e;
      }
    }
  }

  // A number as hjson-py returns it: a float with no fraction below 10^10 is an int.
  void append_number(size_t begin, std::string_view number, bool is_float) {
    if (!is_float) {
      yaml_ += number;
      return;
    }
    const double value = std::strtod(std::string(number).c_str(), nullptr);
    if (!std::isfinite(value)) {
      fail(begin, fmt::format("number out of range: {}", number));
    }
    if (value == std::trunc(value) && std::fabs(value) < 1e10) {
      yaml_ += fmt::format("{}", static_cast<int64_t>(value));
    } else {
      yaml_ += number;
    }
  }

  // scanKeyName: a quoted key, or the text up to ':' (blanks before the ':' allowed, none
  // inside). Returns the offset after the key; `key_start` is where it starts.
  size_t key(size_t end, std::string& out, size_t& key_start) const {
    const size_t begin = next(end);
    key_start = begin;
    if (at(begin) == '"') {
      return quoted(begin + 1, out);
    }
    size_t space = std::string_view::npos;
    for (size_t e = begin;; ++e) {
      const int ch = at(e);
      if (ch == kEnd) {
        fail(e, "end of input where a key was expected");
      }
      if (ch == ':') {
        if (e == begin) {
          fail(begin, "':' with no key before it (quote an empty key: \"\")");
        }
        if (space != std::string_view::npos && space != e - 1) {
          fail(space, "whitespace in a key (quote the key to include it)");
        }
        const std::string_view name = s_.substr(begin, e - begin);
        out = space == std::string_view::npos ? name : python_strip(name, /*front=*/false);
        return e;
      }
      if (is_hjson_space(ch)) {
        if (space == std::string_view::npos || space == e - 1) {
          space = e;
        }
      } else if (ch == '{' || ch == '}' || ch == '[' || ch == ']' || ch == ',') {
        fail(e, fmt::format("'{}' where a key was expected (quote a key that holds "
                            "{{}}[],: or whitespace)",
                            static_cast<char>(ch)));
      }
    }
  }

  // JSONObject, with DeepSpeed's object_pairs_hook: a key given twice is an error once the
  // object is read. `end` is after the opening brace, or at the first key without braces.
  size_t object(size_t end, size_t depth, bool braces, size_t open) {
    begin_node(open);
    yaml_ += '{';
    std::unordered_map<std::string, size_t> first_offset;
    std::vector<std::string> order;
    std::unordered_set<std::string> repeated;
    std::optional<HjsonError> duplicate;
    size_t e = next(end);
    if (braces && at(e) == '}') {
      ++e;
    } else {
      while (true) {
        std::string name;
        size_t key_start = 0;
        e = key(e, name, key_start);
        begin_node(key_start);
        append_yaml_string(yaml_, name);
        yaml_ += ':';
        const auto [it, added] = first_offset.emplace(name, key_start);
        if (added) {
          order.push_back(name);
        } else {
          repeated.insert(name);
          if (!duplicate) {
            duplicate = HjsonError{key_start, name, it->second};
          }
        }
        e = next(e);
        if (at(e) != ':') {
          fail(e, "expected ':' after the key");
        }
        e = value(next(e + 1), depth);
        e = next(e);
        if (at(e) == ',') {
          e = next(e + 1);
        }
        if (braces ? at(e) == '}' : at(e) == kEnd) {
          e += braces ? 1 : 0;
          break;
        }
        after_sibling_ = true;
      }
    }
    if (duplicate) {
      fail_duplicate(*duplicate, order, repeated);
    }
    begin_line(braces ? e - 1 : e);
    yaml_ += '}';
    return e;
  }

  // DeepSpeed's dict_raise_error_on_duplicate_keys message: every repeated key, in the order
  // of first use, reported at the second use of the first one.
  [[noreturn]] static void fail_duplicate(HjsonError error, const std::vector<std::string>& order,
                                          const std::unordered_set<std::string>& repeated) {
    std::string listed;
    for (const std::string& name : order) {
      if (repeated.contains(name)) {
        listed += fmt::format("{}{}", listed.empty() ? "" : ", ", python_repr(name));
      }
    }
    error.message = fmt::format("Duplicate keys in DeepSpeed config: [{}]", listed);
    throw Failure{std::move(error)};
  }

  // How Python's repr() writes a key (single quotes unless the key holds one and no double).
  static std::string python_repr(std::string_view text) {
    const char quote =
        text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos
            ? '"'
            : '\'';
    std::string out(1, quote);
    for (const char c : text) {
      if (c == '\\' || c == quote) {
        out += '\\';
      }
      out += c;
    }
    out += quote;
    return out;
  }

  // JSONArray. `end` is after the opening bracket.
  size_t array(size_t end, size_t depth, size_t open) {
    begin_node(open);
    yaml_ += '[';
    size_t e = next(end);
    if (at(e) == ']') {
      ++e;
    } else {
      if (at(e) == kEnd) {
        fail(e, "end of input in a list (is a closing ']' missing?)");
      }
      while (true) {
        e = next(value(e, depth));
        if (at(e) == ',') {
          e = next(e + 1);
        }
        if (at(e) == ']') {
          ++e;
          break;
        }
        after_sibling_ = true;
      }
    }
    begin_line(e - 1);
    yaml_ += ']';
    return e;
  }

  std::string_view s_;
  size_t max_depth_;
  uint64_t max_nodes_;
  uint64_t nodes_ = 0;
  bool after_sibling_ = false;
  std::string yaml_;
  std::vector<size_t> origins_;
};

}  // namespace

HjsonDocument read_hjson(std::string_view text, size_t max_depth, uint64_t max_nodes) {
  return Reader(text, max_depth, max_nodes).read();
}

}  // namespace zfetch::model::detail
