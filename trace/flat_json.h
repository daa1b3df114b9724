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

  FlatJsonParser(char* begin, char* end)
      : begin_(begin), p_(begin), end_(end), error_at_(begin), key_at_(begin), value_at_(begin) {}

  /// The next key/value pair; End after the closing brace (and only whitespace after it);
  /// Error with error() set on malformed input.
  Result next(std::string_view& key, JsonValue& value);

  /// What went wrong, e.g. "malformed JSON: expected ':' after a key, got ','".
  [[nodiscard]] const std::string& error() const { return error_; }
  /// The 1-based column of the error, or of the last field's key and value.
  [[nodiscard]] uint32_t error_column() const { return column(error_at_); }
  [[nodiscard]] uint32_t key_column() const { return column(key_at_); }
  [[nodiscard]] uint32_t value_column() const { return column(value_at_); }
  /// How many characters the last field's value takes in the line (quotes included).
  [[nodiscard]] uint32_t value_length() const {
    return static_cast<uint32_t>(p_ > value_at_ ? p_ - value_at_ : 1);
  }

 private:
  Result fail(std::string_view what);
  Result fail_expected(std::string_view expected);
  void skip_whitespace();
  bool parse_string(std::string_view& out);
  Result parse_number(std::string_view key, JsonValue& value);
  bool parse_literal(std::string_view word);
  [[nodiscard]] uint32_t column(const char* at) const {
    return static_cast<uint32_t>(at - begin_ + 1);
  }

  char* begin_;
  char* p_;
  char* end_;
  const char* error_at_ = nullptr;
  const char* key_at_ = nullptr;
  const char* value_at_ = nullptr;
  bool started_ = false;
  bool finished_ = false;
  std::string error_;
};

}  // namespace zfetch::trace
