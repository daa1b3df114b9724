// "Did you mean" suggestions: the closest known word within a small edit distance.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace zfetch::base {

/// Levenshtein distance between `a` and `b` (insertions, deletions and replacements cost 1).
int edit_distance(std::string_view a, std::string_view b);

/// The word of `candidates` closest to `word`, if its edit distance is at most 3. The first
/// candidate wins a tie, so the suggestion depends only on the order of `candidates` (ninja
/// SpellcheckStringV). An exact match is not a suggestion.
std::optional<std::string> closest_word(std::string_view word,
                                        std::span<const std::string_view> candidates);
std::optional<std::string> closest_word(std::string_view word,
                                        std::span<const std::string> candidates);

}  // namespace zfetch::base
