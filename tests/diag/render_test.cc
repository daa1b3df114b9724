// Tests of the diagnostic renderer: every location form, the caret, tabs, notes and severities.
#include "diag/render.h"

#include <doctest/doctest.h>

#include <string>

namespace zfetch::diag {
TEST_SUITE("diag") {
  TEST_CASE("render: error with a quoted line, a caret and a note in another file") {
    Diagnostic d;
    d.file = "recorded.jsonl";
    d.loc = {7, 5};
    d.length = 3;
    d.message = "expected fetch of 'a'";
    d.source_line = "abc\tdefgh";
    d.notes.push_back({{2, 2}, "expected here", "xyz", 2, "expected.jsonl"});
    d.notes.push_back({{}, "no location", "", 1, ""});
    CHECK(render(d) ==
          "recorded.jsonl:7:5: error: expected fetch of 'a'\n"
          "abc\tdefgh\n"
          "   \t^~~\n"
          "expected.jsonl:2:2: note: expected here\n"
          "xyz\n"
          " ^~\n"
          "recorded.jsonl: note: no location\n");
  }

  TEST_CASE("render: a line without a column has no caret; no line, no quote") {
    Diagnostic d;
    d.file = "f";
    d.loc = {3, 0};
    d.message = "m";
    d.source_line = "text";
    CHECK(render(d) == "f:3: error: m\ntext\n");
    d.loc = {};
    CHECK(render(d) == "f: error: m\n");
    d.severity = Severity::Warning;
    CHECK(render(d) == "f: warning: m\n");
  }

  TEST_CASE("render: a long line is quoted around the column, cut between characters") {
    Diagnostic d;
    d.file = "f";
    d.message = "m";
    d.length = 400;
    // 1000 bytes: 'a' to byte 499, then two-byte characters; the column is byte 500.
    d.source_line = std::string(500, 'a');
    for (int i = 0; i < 250; ++i) {
      d.source_line += "\xC3\xA9";
    }
    d.loc = {1, 501};
    const std::string shown = d.source_line.substr(420, 160);
    CHECK(render(d) == "f:1:501: error: m\n..." + shown + "...\n" + std::string(83, ' ') + "^" +
                           std::string(79, '~') + "\n");
    // Near the start: no leading cut; near the end: no trailing cut, the cut moved off the
    // middle of a character.
    d.length = 1;
    d.loc = {1, 3};
    CHECK(render(d) == "f:1:3: error: m\n" + d.source_line.substr(0, 160) + "...\n  ^\n");
    d.loc = {1, 999};
    CHECK(render(d) == "f:1:999: error: m\n..." + d.source_line.substr(840) + "\n" +
                           std::string(3 + 998 - 840, ' ') + "^\n");
    d.loc = {1, 990};
    d.source_line += "b";
    CHECK(render(d).find("\n..." + d.source_line.substr(840) + "\n") != std::string::npos);
  }

  TEST_CASE("render: bytes of the quoted line that are not printable text show as '?'") {
    Diagnostic d;
    d.file = "f";
    d.message = "m";
    d.loc = {1, 9};
    d.source_line = std::string("a\0b\x1B[31m\xFF\xC3\xA9\tc", 13);
    CHECK(render(d) == "f:1:9: error: m\na?b?[31m?\xC3\xA9\tc\n        ^\n");
  }

  TEST_CASE("render: a list, and the one-line form for table cells") {
    Diagnostic a;
    a.file = "a.yaml";
    a.loc = {1, 2};
    a.message = "first";
    a.notes.push_back({{}, "left out", "", 1, ""});
    Diagnostic b;
    b.file = "b.yaml";
    b.message = "second";
    CHECK(render(DiagnosticList{a, b}) ==
          "a.yaml:1:2: error: first\na.yaml: note: left out\nb.yaml: error: second\n");
    CHECK(render_one_line(a) == "a.yaml:1:2: first");
    CHECK(render_one_line(b) == "b.yaml: second");
  }
}
}  // namespace zfetch::diag
