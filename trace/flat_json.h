// A tokenizer for one flat JSON object (string and number values only), as trace lines are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zfetch::trace {

/// One value of a flat object. Only String and Integer are ever valid in a trace; the other
/// types are reported so that the caller can say "expected integer for 'seq', got float".
struct JsonValue {
  enum class Type : uint8_t { String, Integer, Float, Bool, Null, Object, Array };
  Type type = Type::Null;
  std::string_view text;  ///< String: the unescaped text (a view into the line)
  int64_t integer = 0;    ///< Integer
};

/// "string", "integer", "float", "boolean", "null", "object" or "array".
std::string_view type_name(JsonValue::Type type);

/// Splits `{"key":value,...}` into key/value pairs. Strings are unescaped in place (an escape
/// is never shorter than what it stands for), so the line must be mutable and the returned
/// views live as long as it does. Object and Array values are reported but not consumed:
/// the caller must stop there.
class FlatJsonParser {
 public:
  enum class Result : uint8_t { Field, End, Error };

  FlatJsonParser(char* begin, char* end) : begin_(begin), p_(begin), end_(end) {}

  /// The next key/value pair; End after the closing brace (and only whitespace after it);
  /// Error with error() set on malformed input.
  Result next(std::string_view& key, JsonValue& value);

  /// What went wrong, e.g. "malformed JSON at column 9: expected ':' after a key, got ','".
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  Result fail(std::string_view what);
  Result fail_expected(std::string_view expected);
  void skip_whitespace();
  bool parse_string(std::string_view& out);
  Result parse_number(std::string_view key, JsonValue& value);
  bool parse_literal(std::string_view word);

  char* begin_;
  char* p_;
  char* end_;
  bool started_ = false;
  bool finished_ = false;
  std::string error_;
};

}  // namespace zfetch::trace
