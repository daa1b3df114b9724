// Tests of the "did you mean" search.
#include "base/spellcheck.h"

#include <doctest/doctest.h>

#include <array>
#include <string_view>

namespace zfetch::base {

TEST_SUITE("base") {
  TEST_CASE("spellcheck: edit distance counts insertions, deletions and replacements") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("call", "cal") == 1);
    CHECK(edit_distance("train", "trian") == 2);
    CHECK(edit_distance("kitten", "sitting") == 3);
  }

  TEST_CASE("spellcheck: closest word within distance 3, first wins a tie") {
    using namespace std::string_view_literals;
    const std::array words = {"fp32"sv, "bf16"sv, "fp16"sv};
    CHECK(closest_word("fp23", words) == "fp32");
    CHECK(closest_word("fp8", words) == "fp32");  // fp32 and fp16 tie at 2: the first wins
    CHECK_FALSE(closest_word("float32", words).has_value());
    CHECK_FALSE(closest_word("fp32", words).has_value());  // an exact match is no suggestion
    // "av" is 2 edits from each of AV, NA and IF; AV comes first.
    const std::array statuses = {"AV"sv, "NA"sv, "IF"sv};
    CHECK(closest_word("av", statuses) == "AV");
  }

  TEST_CASE("spellcheck: the search skips far candidates but finds the same word") {
    using namespace std::string_view_literals;
    CHECK(edit_distance("abc", "abcdefgh") == 5);  // the plain distance has no bound
    const std::array keys = {"stage"sv, "offload_param"sv, "zero_optimization"sv, "fp16"sv};
    CHECK(closest_word("zero_optimisation", keys) == "zero_optimization");
    CHECK(closest_word("fp1600", keys) == "fp16");                    // 2 longer, 2 edits
    CHECK(closest_word("offload_parameters", keys) == std::nullopt);  // 5 longer
    CHECK(closest_word("xxxxxxxxxxxxxxxxxxxxxxxxx", keys) == std::nullopt);
    CHECK_FALSE(closest_word("fp16", keys).has_value());  // an exact match, after the skipped ones
  }

  TEST_CASE("spellcheck: the search's band still finds shifted words") {
    using namespace std::string_view_literals;
    // One insertion in front and one deletion at the end: every letter moved one column.
    const std::array shifted = {"bcdefghijk"sv, "abcdefghij"sv};
    CHECK(closest_word("xabcdefghi", shifted) == "abcdefghij");
    // Shifted by one column (2 edits) the word is found; by two (4 edits, the same length) not.
    const std::array words = {"stage3_max_live_parameters"sv};
    CHECK(closest_word("xstage3_max_live_parameter", words) == "stage3_max_live_parameters");
    CHECK_FALSE(closest_word("xystage3_max_live_paramete", words).has_value());
  }
}

}  // namespace zfetch::base
