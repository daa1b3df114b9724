// Edit distance and the closest-word search behind every "did you mean" note.
#include "base/spellcheck.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

namespace zfetch::base {

namespace {

// The edit distance of `a` and `b` if it is at most `bound`, otherwise a number above `bound`.
// A path through the table that costs at most `bound` never leaves the band of cells whose row
// and column differ by at most `bound`, so only that band is filled (cells outside it count as
// farther than the band); a row's minimum never decreases further down, so the fill stops at
// the first row whose minimum exceeds `bound`. `row` is the caller's, so that a search over
// many candidates allocates it once.
int edit_distance_within(std::string_view a, std::string_view b, int bound, std::vector<int>& row) {
  const size_t band =
      std::min(static_cast<size_t>(std::max(bound, 0)), std::max(a.size(), b.size()));
  const size_t length_difference = std::max(a.size(), b.size()) - std::min(a.size(), b.size());
  if (length_difference > band) {
    return static_cast<int>(length_difference);  // the distance is at least that
  }
  const int far = static_cast<int>(band) + 1;
  row.assign(b.size() + 1, far);
  for (size_t j = 0; j <= std::min(b.size(), band); ++j) {
    row[j] = static_cast<int>(j);
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    const size_t first = i > band ? i - band : 1;  // the band's columns in this row
    const size_t last = std::min(b.size(), i + band);
    int diagonal = row[first - 1];
    int left = first == 1 && i <= band ? static_cast<int>(i) : far;
    row[first - 1] = left;
    int row_min = left;
    for (size_t j = first; j <= last; ++j) {
      const int above = row[j];
      const int replace = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      left = std::min({above + 1, left + 1, replace});
      row[j] = left;
      row_min = std::min(row_min, left);
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
  std::vector<int> row;
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
    const int distance = edit_distance_within(word, text, best_distance - 1, row);
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
  std::vector<int> row;
  return edit_distance_within(a, b, std::numeric_limits<int>::max(), row);
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
