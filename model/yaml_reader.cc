// Typed, located reads from a yaml-cpp tree (see yaml_reader.h).
#include "model/yaml_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "base/spellcheck.h"

namespace zfetch::model::detail {

SourceText::SourceText(std::string file, std::string_view text) : file_(std::move(file)) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    const size_t stop = end == std::string_view::npos ? text.size() : end;
    std::string_view line = text.substr(start, stop - start);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    line_starts_.push_back(start);
    lines_.emplace_back(line);
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
}

std::string SourceText::line(uint32_t line) const {
  if (line == 0 || line > lines_.size()) {
    return {};
  }
  return lines_[line - 1];
}

SourceLoc SourceText::loc_of_offset(size_t offset) const {
  // The last line that starts at or before `offset`.
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  const size_t col = std::min(offset - line_starts_[index], lines_[index].size());
  return SourceLoc{static_cast<uint32_t>(index + 1), static_cast<uint32_t>(col + 1)};
}

SourceLoc YamlReader::loc(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0 || mark.column < 0) {
    return {};
  }
  return SourceLoc{static_cast<uint32_t>(mark.line + 1), static_cast<uint32_t>(mark.column + 1)};
}

SourceLoc YamlReader::locate(const YAML::Node& node) const {
  const SourceLoc at = loc(node);
  if (line_origins_.empty() || at.line == 0 || at.line > line_origins_.size()) {
    return at;
  }
  return source_.loc_of_offset(line_origins_[at.line - 1]);
}

const YAML::Node& YamlReader::where(const Field& field) {
  // yaml-cpp places an empty value at the next token, often on the next line; the key is
  // where the user looks.
  if (field.value.IsNull() && loc(field.key).line != 0) {
    return field.key;
  }
  return field.value;
}

uint32_t YamlReader::caret_length(const YAML::Node& node) const {
  const SourceLoc at = locate(node);
  if (at.line == 0 || !node.IsScalar()) {
    return 1;
  }
  const std::string text = source_.line(at.line);
  const size_t start = at.col - 1;
  if (start >= text.size()) {
    return 1;
  }
  size_t length = node.Scalar().size();
  const char first = text[start];
  if (first == '"' || first == '\'') {
    const size_t close = text.find(first, start + 1);
    length = close == std::string::npos ? 1 : close - start + 1;
  }
  length = std::clamp<size_t>(length, 1, text.size() - start);
  return static_cast<uint32_t>(length);
}

void YamlReader::error(const YAML::Node& node, std::string message, std::vector<Note> notes) {
  error_at(locate(node), caret_length(node), std::move(message), std::move(notes));
}

void YamlReader::error_at(SourceLoc at, uint32_t length, std::string message,
                          std::vector<Note> notes) {
  Diagnostic diagnostic;
  diagnostic.file = source_.file();
  diagnostic.loc = at;
  diagnostic.length = std::max<uint32_t>(length, 1);
  diagnostic.message = std::move(message);
  diagnostic.source_line = source_.line(at.line);
  diagnostic.notes = std::move(notes);
  out_.push_back(std::move(diagnostic));
}

void YamlReader::warning(const YAML::Node& node, std::string message) {
  error(node, std::move(message));
  out_.back().severity = diag::Severity::Warning;
}

Note YamlReader::quoting_note(const YAML::Node& node, std::string message) const {
  Note note;
  note.loc = locate(node);
  note.length = caret_length(node);
  note.message = std::move(message);
  note.source_line = source_.line(note.loc.line);
  return note;
}

namespace {

template <typename Word>
std::vector<Note> suggestion_notes(SourceLoc at, std::string_view word,
                                   std::span<const Word> candidates) {
  const std::optional<std::string> best = base::closest_word(word, candidates);
  if (!best) {
    return {};
  }
  Note note;
  note.loc = at;
  note.message = fmt::format("did you mean '{}'?", *best);
  return {note};
}

}  // namespace

bool YamlReader::spend_suggestion_work(size_t candidates) {
  if (!can_suggest(candidates)) {
    return false;
  }
  suggestion_work_left_ -= candidates;
  return true;
}

std::vector<Note> YamlReader::did_you_mean(const YAML::Node& node, std::string_view word,
                                           std::span<const std::string_view> candidates) {
  if (!spend_suggestion_work(candidates.size())) {
    return {};
  }
  return suggestion_notes(locate(node), word, candidates);
}

std::vector<Note> YamlReader::did_you_mean(const YAML::Node& node, std::string_view word,
                                           std::span<const std::string> candidates) {
  if (!spend_suggestion_work(candidates.size())) {
    return {};
  }
  return suggestion_notes(locate(node), word, candidates);
}

std::optional<std::string> YamlReader::closest(std::string_view word,
                                               std::span<const std::string> candidates) {
  if (!spend_suggestion_work(candidates.size())) {
    return std::nullopt;
  }
  return base::closest_word(word, candidates);
}

std::string describe_value(const YAML::Node& node) {
  switch (node.Type()) {
  case YAML::NodeType::Scalar:
    return fmt::format("'{}'", node.Scalar());
  case YAML::NodeType::Sequence:
    return "a list";
  case YAML::NodeType::Map:
    return "a mapping";
  default:
    return "nothing";
  }
}

bool YamlReader::expect_map(const Field& field) {
  if (field.value.IsMap()) {
    return true;
  }
  error(where(field), fmt::format("expected a mapping for '{}', got {}", field.name,
                                  describe_value(field.value)));
  return false;
}

bool YamlReader::expect_seq(const Field& field) {
  if (field.value.IsSequence()) {
    return true;
  }
  error(where(field),
        fmt::format("expected a list for '{}', got {}", field.name, describe_value(field.value)));
  return false;
}

bool YamlReader::expect_nonempty_seq(const Field& field, std::string_view if_empty) {
  if (!expect_seq(field)) {
    return false;
  }
  if (field.value.size() == 0) {
    error(field.value, std::string(if_empty));
    return false;
  }
  return true;
}

void YamlReader::check_keys(const YAML::Node& map, std::span<const std::string_view> known,
                            std::string_view context) {
  // Each key by name, so that 10^5 keys take a hash lookup each instead of a scan of the others.
  std::unordered_map<std::string_view, YAML::Node> seen;
  for (const auto& entry : map) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      error(key, fmt::format("expected a name as key in {}, got {}", context, describe_value(key)));
      continue;
    }
    const std::string& name = key.Scalar();
    const auto [previous, inserted] = seen.emplace(name, key);
    if (!inserted) {
      error(key, fmt::format("duplicate key '{}' in {}", name, context),
            {quoting_note(previous->second, "previous definition here")});
      continue;
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      error(key, fmt::format("unknown key '{}' in {}", name, context),
            did_you_mean(key, name, known));
    }
  }
}

namespace {

std::optional<int64_t> parse_int(const std::string& text, bool allow_float_form) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc{} && ptr == end && !text.empty()) {
    return value;
  }
  if (!allow_float_form) {
    return std::nullopt;
  }
  double number = 0;
  auto [fptr, fec] = std::from_chars(text.data(), end, number);
  // 2^63 is exactly representable; anything at or above it does not fit in int64_t.
  constexpr double kLimit = 9223372036854775808.0;
  if (fec != std::errc{} || fptr != end || !std::isfinite(number) || number != std::trunc(number) ||
      number >= kLimit || number < -kLimit) {
    return std::nullopt;
  }
  return static_cast<int64_t>(number);
}

}  // namespace

std::optional<int64_t> YamlReader::read_int(const Field& field, int64_t min, bool allow_float_form,
                                            int64_t max) {
  const char* kind = min >= 0 ? "unsigned integer" : "integer";
  const YAML::Node& value = field.value;
  if (allow_float_form && value.IsScalar() && value.Scalar() == "auto") {
    error(value, fmt::format("'auto' is not filled by the HF integration for '{}'; give a number",
                             field.name));
    return std::nullopt;
  }
  const std::optional<int64_t> number =
      value.IsScalar() ? parse_int(value.Scalar(), allow_float_form) : std::nullopt;
  if (!number) {
    error(where(field),
          fmt::format("expected {} for '{}', got {}", kind, field.name, describe_value(value)));
    return std::nullopt;
  }
  if (*number < min) {
    if (min == 0) {
      error(value, fmt::format("expected {} for '{}', got {}", kind, field.name, *number));
    } else {
      error(value, fmt::format("'{}' must be at least {}, got {}", field.name, min, *number));
    }
    return std::nullopt;
  }
  if (*number > max) {
    error(value, fmt::format("'{}' must be at most {} (zfetch's limit), got {}", field.name, max,
                             *number));
    return std::nullopt;
  }
  return number;
}

std::optional<bool> YamlReader::read_bool(const Field& field) {
  const YAML::Node& value = field.value;
  if (value.IsScalar()) {
    const std::string& text = value.Scalar();
    if (text == "true" || text == "True" || text == "TRUE") {
      return true;
    }
    if (text == "false" || text == "False" || text == "FALSE") {
      return false;
    }
    if (text == "auto") {
      error(value,
            fmt::format("'auto' is not filled by the HF integration for '{}'; give a boolean",
                        field.name));
      return std::nullopt;
    }
  }
  error(where(field),
        fmt::format("expected true or false for '{}', got {}", field.name, describe_value(value)));
  return std::nullopt;
}

std::optional<std::string> YamlReader::read_string(const Field& field) {
  if (field.value.IsScalar()) {
    return field.value.Scalar();
  }
  error(where(field),
        fmt::format("expected a string for '{}', got {}", field.name, describe_value(field.value)));
  return std::nullopt;
}

std::optional<std::vector<int64_t>> YamlReader::read_int_list(const Field& field, int64_t min) {
  if (!field.value.IsSequence()) {
    std::optional<int64_t> one = read_int(field, min);
    if (!one) {
      return std::nullopt;
    }
    return std::vector<int64_t>{*one};
  }
  std::vector<int64_t> values;
  bool ok = true;
  for (const YAML::Node& item : field.value) {
    const std::optional<int64_t> one = read_int(Field{item, field.name, {}}, min);
    ok = ok && one.has_value();
    if (one) {
      values.push_back(*one);
    }
  }
  if (!ok) {
    return std::nullopt;
  }
  return values;
}

std::optional<std::string> YamlReader::read_choice(const Field& field, std::string_view what,
                                                   std::span<const std::string_view> choices) {
  const std::optional<std::string> text = read_string(field);
  if (!text) {
    return std::nullopt;
  }
  if (std::find(choices.begin(), choices.end(), *text) != choices.end()) {
    return text;
  }
  error(field.value,
        fmt::format("unknown {} '{}'; valid values are: {}", what, *text, fmt::join(choices, ", ")),
        did_you_mean(field.value, *text, choices));
  return std::nullopt;
}

}  // namespace zfetch::model::detail
