// Tests of FlatJsonParser: values of each type, strings whose quote or escape falls anywhere in
// an 8-byte word, and errors with their columns.
#include "trace/flat_json.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zfetch::trace {
TEST_SUITE("trace") {
  namespace {

  struct Field {
    std::string key;
    JsonValue::Type type;
    std::string text;
    int64_t integer;
  };

  // All fields of `line`, or the error text as the only field's key (type Null).
  std::vector<Field> parse(std::string line) {
    FlatJsonParser parser(line.data(), line.data() + line.size());
    std::vector<Field> fields;
    std::string_view key;
    JsonValue value;
    while (true) {
      const auto result = parser.next(key, value);
      if (result == FlatJsonParser::Result::End) {
        return fields;
      }
      if (result == FlatJsonParser::Result::Error) {
        return {Field{"column " + std::to_string(parser.error_column()) + ": " + parser.error(),
                      JsonValue::Type::Null, "", 0}};
      }
      fields.push_back(Field{std::string(key), value.type, std::string(value.text), value.integer});
      if (value.type == JsonValue::Type::Object || value.type == JsonValue::Type::Array) {
        return fields;  // not consumed: the caller must stop
      }
    }
  }

  std::string first_error(const std::string& line) {
    const auto fields = parse(line);
    return fields.size() == 1 && fields[0].type == JsonValue::Type::Null ? fields[0].key : "";
  }

  }  // namespace

  TEST_CASE("flat_json: each value type") {
    const auto fields =
        parse(R"({"s":"x","i":-12,"f":1.5,"e":2E3,"t":true,"n":null,"z":0,"o":{"a":1}})");
    REQUIRE(fields.size() == 8);
    CHECK(fields[0].type == JsonValue::Type::String);
    CHECK(fields[0].text == "x");
    CHECK(fields[1].type == JsonValue::Type::Integer);
    CHECK(fields[1].integer == -12);
    CHECK(fields[2].type == JsonValue::Type::Float);
    CHECK(fields[3].type == JsonValue::Type::Float);
    CHECK(fields[4].type == JsonValue::Type::Bool);
    CHECK(fields[5].type == JsonValue::Type::Null);
    CHECK(fields[6].integer == 0);
    CHECK(fields[7].type == JsonValue::Type::Object);
    CHECK(type_name(JsonValue::Type::Array) == "array");
  }

  TEST_CASE("flat_json: integer limits") {
    CHECK(parse(R"({"a":9223372036854775807})")[0].integer == INT64_MAX);
    CHECK(parse(R"({"a":-9223372036854775808})")[0].integer == INT64_MIN);
    CHECK(first_error(R"({"a":9223372036854775808})") ==
          "column 6: integer 9223372036854775808 out of range for 'a'");
    CHECK(first_error(R"({"a":-9223372036854775809})") ==
          "column 6: integer -9223372036854775809 out of range for 'a'");
  }

  TEST_CASE("flat_json: a closing quote or escape at every position of the word") {
    for (size_t size = 0; size <= 20; ++size) {
      const std::string plain(size, 'n');
      CAPTURE(size);
      auto fields = parse(R"({"k":")" + plain + R"("})");
      REQUIRE(fields.size() == 1);
      CHECK(fields[0].text == plain);
      for (size_t at = 0; at < size; ++at) {
        std::string escaped = plain;
        escaped.replace(at, 1, "\\n");
        std::string expected = plain;
        expected[at] = '\n';
        CAPTURE(at);
        fields = parse(R"({"k":")" + escaped + R"(","after":1})");
        REQUIRE(fields.size() == 2);
        CHECK(fields[0].text == expected);
        CHECK(fields[1].integer == 1);
      }
    }
  }

  TEST_CASE("flat_json: errors point at a column") {
    CHECK(first_error("") ==
          "column 1: malformed JSON: expected '{' to start an object, got end of line");
    CHECK(first_error(R"({"a" 1})") ==
          "column 6: malformed JSON: expected ':' after a key, got '1'");
    CHECK(first_error(R"({"a":1,})") ==
          "column 8: malformed JSON: expected '\"' to start a key, got '}'");
    CHECK(first_error("{\"a\":\"x\ty\"}") ==
          "column 8: malformed JSON: control character byte 0x09 in a string (escape it)");
    CHECK(first_error(R"({"a":"\u12"})") ==
          "column 11: malformed JSON: expected 4 hex digits after '\\u', got '\"'");
    CHECK(first_error(R"({"a":-})") == "column 7: malformed JSON: expected a digit, got '}'");
    CHECK(first_error(R"({"a":tru})") == "column 6: malformed JSON: expected a value, got 't'");
    CHECK(first_error(R"({"a":1} x)") ==
          "column 9: malformed JSON: unexpected 'x' after the object");
  }

}  // TEST_SUITE
}  // namespace zfetch::trace
