// Tests of align(): Myers' shortest edit script on small sequences of letters.
#include "trace/align.h"

#include <doctest/doctest.h>

#include <string>

namespace zfetch::trace {
TEST_SUITE("trace") {
  namespace {

  // The script as text: "=3" equal, "-1" only in a, "+2" only in b.
  std::string script(const std::string& a, const std::string& b, size_t max_edits = 1024) {
    const auto runs = align(
        a.size(), b.size(), [&](size_t i, size_t j) { return a[i] == b[j]; }, max_edits);
    std::string out;
    for (const AlignRun& run : runs) {
      const char* sign = run.type == AlignRun::Type::Equal   ? "="
                         : run.type == AlignRun::Type::OnlyA ? "-"
                                                             : "+";
      out += (out.empty() ? "" : " ") + std::string(sign) + std::to_string(run.count);
    }
    return out;
  }

  }  // namespace

  TEST_CASE("align: one missing, one extra, one changed item each make one run") {
    CHECK(script("abcdef", "abcdef") == "=6");
    CHECK(script("abdef", "abcdef") == "=2 +1 =3");    // c missing from a
    CHECK(script("abcxdef", "abcdef") == "=3 -1 =3");  // x extra in a
    CHECK(script("abXdef", "abcdef") == "=2 -1 +1 =3");
    CHECK(script("", "abc") == "+3");
    CHECK(script("abc", "") == "-3");
    CHECK(script("", "") == "");
  }

  TEST_CASE("align: the edit distance is the shortest (Myers' example ABCABBA / CBABAC)") {
    const auto runs = align(7, 6, [](size_t i, size_t j) { return "ABCABBA"[i] == "CBABAC"[j]; });
    size_t edits = 0;
    size_t equal = 0;
    for (const AlignRun& run : runs) {
      (run.type == AlignRun::Type::Equal ? equal : edits) += run.count;
    }
    CHECK(edits == 5);  // D = 5 in the paper
    CHECK(equal == 4);  // the longest common subsequence, CABA, has 4
  }

  TEST_CASE("align: past max_edits the middle is one deletion and one insertion") {
    CHECK(script("xaaaay", "xbbbby", 2) == "=1 -4 +4 =1");
  }
}
}  // namespace zfetch::trace
