// Typed, located reads from a yaml-cpp tree; every problem becomes a Diagnostic (internal).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/diagnostic.h"

namespace zfetch::model::detail {

/// One input file's name and lines, so diagnostics can quote the offending line.
class SourceText {
 public:
  SourceText(std::string file, std::string_view text);
  [[nodiscard]] const std::string& file() const { return file_; }
  /// Line `line` (1-based) without its newline, or "" when out of range.
  [[nodiscard]] std::string line(uint32_t line) const;
  /// 1-based line and column of byte `offset` (clamped to the text).
  [[nodiscard]] SourceLoc loc_of_offset(size_t offset) const;

 private:
  std::string file_;
  std::vector<std::string> lines_;
  std::vector<size_t> line_starts_;
};

/// A value to read: the node, the key name the user wrote (for messages), and the key node,
/// where the error points when the value is empty (`world_size:` with nothing after it).
struct Field {
  YAML::Node value;
  std::string_view name;
  YAML::Node key;
};

/// Reads values of a YAML tree and reports what is wrong with them in `out`.
class YamlReader {
 public:
  YamlReader(const SourceText& source, DiagnosticList& out) : source_(source), out_(out) {}

  [[nodiscard]] const SourceText& source() const { return source_; }
  /// 1-based location of `node`, or {0, 0} for a node that did not come from the text.
  [[nodiscard]] static SourceLoc loc(const YAML::Node& node);

  /// For a tree read from text rewritten with one node per line (read_hjson): the byte offset
  /// in the source of the node on each line, where locations are then looked up.
  void set_line_origins(std::vector<size_t> line_origins) {
    line_origins_ = std::move(line_origins);
  }
  /// Where `node` is in the source: loc(), through the line origins when there are some.
  [[nodiscard]] SourceLoc locate(const YAML::Node& node) const;

  /// The node an error about `field` points at: the value, or the key when the value is empty.
  [[nodiscard]] static const YAML::Node& where(const Field& field);

  /// Reports an error at `node`, with a caret as wide as its scalar text.
  void error(const YAML::Node& node, std::string message, std::vector<Note> notes = {});
  void error_at(SourceLoc loc, uint32_t length, std::string message, std::vector<Note> notes = {});
  /// Reports a warning at `node`: the file loads, but something in it cannot mean what it says.
  void warning(const YAML::Node& node, std::string message);
  /// A note at `node` that quotes its line ("previous definition here").
  [[nodiscard]] Note quoting_note(const YAML::Node& node, std::string message) const;
  /// A "did you mean 'x'?" note at `node` when `word` is close to a candidate; none otherwise,
  /// and none once the file's suggestion work is spent (see kSuggestionWork).
  [[nodiscard]] std::vector<Note> did_you_mean(const YAML::Node& node, std::string_view word,
                                               std::span<const std::string_view> candidates);
  [[nodiscard]] std::vector<Note> did_you_mean(const YAML::Node& node, std::string_view word,
                                               std::span<const std::string> candidates);
  /// closest_word within the same budget: nullopt once it is spent.
  [[nodiscard]] std::optional<std::string> closest(std::string_view word,
                                                   std::span<const std::string> candidates);
  /// Whether `candidates` more may still be scored; callers that build a long candidate list
  /// ask first, so that a file of 10^4 misspellings does not build 10^4 lists of 10^5 names.
  [[nodiscard]] bool can_suggest(size_t candidates) const {
    return candidates <= suggestion_work_left_;
  }

  /// How many candidates the suggestions of one file may score in all: far more than a
  /// scenario with a handful of mistakes needs (a suggestion for each of 20 misspelled names
  /// among 10^5 params), and a bound on the quadratic work of 10^4 misspellings among 10^4
  /// names: past it, errors come without a suggestion.
  static constexpr size_t kSuggestionWork = 2'000'000;

  /// True if the value is a mapping; otherwise reports "expected a mapping for 'name', got ...".
  bool expect_map(const Field& field);
  bool expect_seq(const Field& field);
  /// True if the value is a list with at least one entry; otherwise reports what expect_seq
  /// does, or `if_empty` at the empty list.
  bool expect_nonempty_seq(const Field& field, std::string_view if_empty);

  /// Reports every key of `map` not in `known` (with a suggestion) and every repeated key.
  /// `context` names the block in messages: "unknown key 'x' in <context>".
  void check_keys(const YAML::Node& map, std::span<const std::string_view> known,
                  std::string_view context);

  /// Integer at least `min` and at most `max`. Accepts a plain integer; with
  /// `allow_float_form`, also a number like 5e8 with no fractional part (ds_config files use it).
  std::optional<int64_t> read_int(const Field& field, int64_t min, bool allow_float_form = false,
                                  int64_t max = INT64_MAX);
  std::optional<bool> read_bool(const Field& field);
  std::optional<std::string> read_string(const Field& field);
  /// One integer or a list of them, each at least `min`.
  std::optional<std::vector<int64_t>> read_int_list(const Field& field, int64_t min);
  /// One of `choices`; otherwise "unknown <what> 'x'; valid values are: a, b" + did you mean.
  std::optional<std::string> read_choice(const Field& field, std::string_view what,
                                         std::span<const std::string_view> choices);

 private:
  [[nodiscard]] uint32_t caret_length(const YAML::Node& node) const;

  // Spends `candidates` of the budget; false (nothing spent) when it does not cover them.
  bool spend_suggestion_work(size_t candidates);

  const SourceText& source_;
  DiagnosticList& out_;
  size_t suggestion_work_left_ = kSuggestionWork;
  std::vector<size_t> line_origins_;
};

/// The text a user wrote for `node`, for "got '...'" in messages.
std::string describe_value(const YAML::Node& node);

}  // namespace zfetch::model::detail
