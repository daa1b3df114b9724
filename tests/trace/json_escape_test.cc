// Tests of escape_json and json_special_mask: the word-at-a-time path must give the same bytes
// as a byte-at-a-time reference wherever the special byte falls in the word.
#include "trace/json_escape.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

namespace zfetch::trace {
TEST_SUITE("trace") {
  namespace {

  std::string reference_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
      switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
      }
    }
    return out;
  }

  std::string escape(std::string_view text) {
    std::string out(max_escaped_size(text), '\0');
    out.resize(static_cast<size_t>(escape_json(text, out.data()) - out.data()));
    return out;
  }

  }  // namespace

  TEST_CASE("json_escape: every special byte at every position of strings up to 20 bytes") {
    for (char special : {'"', '\\', '\n', '\t', '\x01', '\x1f'}) {
      for (size_t size = 1; size <= 20; ++size) {
        for (size_t at = 0; at < size; ++at) {
          std::string text(size, 'a');
          text[at] = special;
          CAPTURE(size);
          CAPTURE(at);
          CHECK(escape(text) == reference_escape(text));
        }
      }
    }
  }

  TEST_CASE("json_escape: clean text, UTF-8 and bytes just above the specials pass through") {
    CHECK(escape("") == "");
    CHECK(escape("adapter.adapter_A.weight") == "adapter.adapter_A.weight");
    CHECK(escape("\xc3\xa9t\xc3\xa9 \x7f !#[]") == "\xc3\xa9t\xc3\xa9 \x7f !#[]");
    CHECK(escape("\x1f\x20") == "\\u001f ");
  }

  TEST_CASE("json_escape: json_special_mask flags the first special byte exactly") {
    CHECK(json_special_mask(0x6161616161616161ULL) == 0);  // "aaaaaaaa"
    CHECK(json_special_mask(0x2061616161616161ULL) == 0);  // a space is not special
    // '"' in byte 3 (little-endian): the lowest flag is bit 31.
    const uint64_t mask = json_special_mask(0x6161616122616161ULL);
    CHECK((mask & -mask) == (uint64_t{0x80} << 24));
  }

}  // TEST_SUITE
}  // namespace zfetch::trace
