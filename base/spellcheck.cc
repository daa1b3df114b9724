// Edit distance and the closest-word search behind every "did you mean" note.
#include "base/spellcheck.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

namespace zfetch::base {

namespace {

// The edit distance of `a` and `b` if it is at most `bound`, otherwise a number above `bound`:
// the table is filled one row at a time, and a row's minimum never decreases further down, so
// the fill stops at the first row whose minimum exceeds `bound`.
int edit_distance_within(std::string_view a, std::string_view b, int bound) {
  std::vector<int> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    int row_min = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      const int replace = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, replace});
      row_min = std::min(row_min, row[j]);
      diagonal = above;
    }
    if (row_min > bound) {
      return row_min;
    }
  }
  return row[b.size()];
}

// ninja's SpellcheckStringV limit: farther words are more noise than help.
constexpr int kMaxSuggestionDistance = 3;

template <typename Word>
std::optional<std::string> closest_of(std::string_view word, std::span<const Word> candidates) {
  std::optional<std::string> best;
  int best_distance = kMaxSuggestionDistance + 1;
  for (const Word& candidate : candidates) {
    const std::string_view text{candidate};
    if (text == word) {
      return std::nullopt;  // the word is valid: nothing to suggest
    }
    // Only a closer candidate matters: skip what cannot be, without filling its whole table
    // (an unknown key is common in fuzzed and mistyped input, and the key lists are long).
    const size_t shorter = std::min(word.size(), text.size());
    if (std::max(word.size(), text.size()) - shorter >= static_cast<size_t>(best_distance)) {
      continue;  // the distance is at least the difference in length
    }
    const int distance = edit_distance_within(word, text, best_distance - 1);
    // Strictly less: the first candidate keeps a tie, so suggestions are deterministic.
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(text);
    }
  }
  return best;
}

}  // namespace

int edit_distance(std::string_view a, std::string_view b) {
  return edit_distance_within(a, b, std::numeric_limits<int>::max());
}

std::optional<std::string> closest_word(std::string_view word,
                                        std::span<const std::string_view> candidates) {
  return closest_of(word, candidates);
}

std::optional<std::string> closest_word(std::string_view word,
                                        std::span<const std::string> candidates) {
  return closest_of(word, candidates);
}

}  // namespace zfetch::base
