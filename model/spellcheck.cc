// Edit distance and the closest-word search behind every "did you mean" note.
#include "model/spellcheck.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace zfetch::model {

namespace {

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
    const int distance = edit_distance(word, text);
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
  // One row of the dynamic-programming table at a time.
  std::vector<int> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      const int replace = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, replace});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_word(std::string_view word,
                                        std::span<const std::string_view> candidates) {
  return closest_of(word, candidates);
}

std::optional<std::string> closest_word(std::string_view word,
                                        std::span<const std::string> candidates) {
  return closest_of(word, candidates);
}

}  // namespace zfetch::model
