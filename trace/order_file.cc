// Order files: parsing with located errors, and the streaming check.
#include "trace/order_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "base/spellcheck.h"
#include "base/text_bytes.h"
#include "trace/names.h"
#include "trace/text_format.h"

namespace zfetch::trace {
namespace {

constexpr std::array<std::string_view, 5> kDirectiveNames = {
    "CHECK", "CHECK-NEXT", "CHECK-NOT", "CHECK-DAG", "CHECK-LABEL",
};

constexpr std::array<std::string_view, 17> kKeys = {
    "seq",      "t_ns",   "rank",       "engine", "step",      "micro_step",
    "phase",    "kind",   "trace_step", "module", "module_id", "param",
    "param_id", "status", "numel",      "bytes",  "group",
};

bool is_integer_key(std::string_view key) {
  return key != "phase" && key != "kind" && key != "module" && key != "param" && key != "status";
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// Splits `text` into whitespace-separated fields; a double-quoted value keeps its spaces.
std::vector<std::pair<size_t, std::string_view>> split_fields(std::string_view text) {
  std::vector<std::pair<size_t, std::string_view>> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) {
      ++i;
    }
    if (i == text.size()) {
      break;
    }
    const size_t start = i;
    bool quoted = false;
    while (i < text.size() && (quoted || !is_space(text[i]))) {
      if (text[i] == '"') {
        quoted = !quoted;
      } else if (text[i] == '\\' && quoted && i + 1 < text.size()) {
        ++i;
      }
      ++i;
    }
    out.emplace_back(start, text.substr(start, i - start));
  }
  return out;
}

// The directive a line starts with: its type and where its pattern begins, or nullopt when the
// line has none. A word that looks like a directive but is not one is reported in `misspelled`.
std::optional<OrderDirective::Type> find_directive(std::string_view line, size_t& pattern_at,
                                                   size_t& word_at, std::string& misspelled) {
  size_t i = 0;
  while (i < line.size() && is_space(line[i])) {
    ++i;
  }
  word_at = i;
  const size_t colon = line.find(':', i);
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view word = line.substr(i, colon - i);
  for (size_t k = 0; k < kDirectiveNames.size(); ++k) {
    if (word == kDirectiveNames[k]) {
      pattern_at = colon + 1;
      return static_cast<OrderDirective::Type>(k);
    }
  }
  // `CHECK-NXT:`, `CHEK:`, `check:`: a directive the author meant, never a comment.
  const bool looks_like_one = word.find(' ') == std::string_view::npos &&
                              (word.find("CHECK") != std::string_view::npos ||
                               word.find("check") != std::string_view::npos ||
                               base::closest_word(word, kDirectiveNames).has_value());
  if (looks_like_one && !word.empty()) {
    misspelled = std::string(word);
  }
  return std::nullopt;
}

}  // namespace

std::string_view format_as(OrderDirective::Type type) {
  return kDirectiveNames[static_cast<size_t>(type)];
}

OrderParseResult parse_order_file(std::string file, std::string_view text) {
  text = base::without_byte_order_mark(text);
  OrderParseResult result;
  OrderFile order;
  order.file = file;
  uint32_t line_number = 0;
  size_t at = 0;
  const auto error = [&](std::string_view line, size_t col, size_t length, std::string message) {
    diag::Diagnostic d;
    d.file = file;
    d.loc = {line_number, static_cast<uint32_t>(col + 1)};
    d.length = static_cast<uint32_t>(std::max<size_t>(length, 1));
    d.message = std::move(message);
    d.source_line = std::string(line);
    result.diagnostics.push_back(std::move(d));
  };
  bool positive_before = false;
  while (at <= text.size()) {
    const size_t newline = text.find('\n', at);
    const std::string_view line =
        text.substr(at, newline == std::string_view::npos ? std::string_view::npos : newline - at);
    ++line_number;
    at = newline == std::string_view::npos ? text.size() + 1 : newline + 1;
    size_t pattern_at = 0;
    size_t word_at = 0;
    std::string misspelled;
    const auto type = find_directive(line, pattern_at, word_at, misspelled);
    if (!type) {
      if (!misspelled.empty()) {
        std::string message = fmt::format("misspelled directive '{}:'", misspelled);
        if (auto suggestion = base::closest_word(misspelled, kDirectiveNames)) {
          message += fmt::format("; did you mean '{}:'?", *suggestion);
        }
        error(line, word_at, misspelled.size() + 1, std::move(message));
      }
      continue;
    }
    OrderDirective d;
    d.type = *type;
    d.line = line_number;
    d.source_line = std::string(line);
    std::string_view pattern = line.substr(pattern_at);
    size_t lead = 0;
    while (lead < pattern.size() && is_space(pattern[lead])) {
      ++lead;
    }
    d.col = static_cast<uint32_t>(pattern_at + lead + 1);
    pattern.remove_prefix(lead);
    while (!pattern.empty() && is_space(pattern.back())) {
      pattern.remove_suffix(1);
    }
    d.pattern = std::string(pattern);
    const size_t base = pattern_at + lead;
    if (pattern.empty()) {
      error(line, word_at, pattern_at - word_at,
            fmt::format("{}: empty pattern (expected key=value fields)", format_as(d.type)));
      continue;
    }
    if (d.type == OrderDirective::Type::Next && !positive_before) {
      error(line, word_at, pattern_at - word_at,
            "found 'CHECK-NEXT:' without a previous 'CHECK:' (or another directive that matches)");
      continue;
    }
    bool ok = true;
    std::vector<std::string_view> keys;
    for (const auto& [offset, field] : split_fields(pattern)) {
      const size_t col = base + offset;
      const size_t equals = field.find('=');
      if (equals == std::string_view::npos || equals == 0) {
        error(line, col, field.size(), fmt::format("expected key=value, got '{}'", field));
        ok = false;
        break;
      }
      const std::string_view key = field.substr(0, equals);
      const std::string_view value = field.substr(equals + 1);
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        std::string message = fmt::format("unknown key '{}'", key);
        if (auto suggestion = base::closest_word(key, kKeys)) {
          message += fmt::format("; did you mean '{}'?", *suggestion);
        }
        error(line, col, key.size(), std::move(message));
        ok = false;
        break;
      }
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
        error(line, col, key.size(), fmt::format("duplicate key '{}'", key));
        ok = false;
        break;
      }
      keys.push_back(key);
      const size_t value_col = col + equals + 1;
      std::string problem;
      if (value.empty()) {
        problem = fmt::format("empty value for '{}'", key);
      } else if (is_integer_key(key)) {
        int64_t parsed = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
        if (ec != std::errc() || end != value.data() + value.size()) {
          problem = fmt::format("expected an integer for '{}', got '{}'", key, value);
        }
      } else {
        const auto check_name = [&](bool valid, std::span<const std::string_view> names) {
          if (!valid) {
            problem = fmt::format("unknown {} '{}'", key, value);
            if (auto suggestion = base::closest_word(value, names)) {
              problem += fmt::format("; did you mean '{}'?", *suggestion);
            }
          }
        };
        if (key == "kind") {
          check_name(parse_event_kind(value).has_value(), event_kind_names());
        } else if (key == "phase") {
          check_name(parse_phase(value).has_value(), phase_names());
        } else if (key == "status") {
          check_name(parse_status(value).has_value(), status_names());
        }
      }
      if (!problem.empty()) {
        error(line, value_col, value.size(), std::move(problem));
        ok = false;
        break;
      }
      if (key == "module" && value == "\"\"") {
        // The root as a trace written before it was named `<root>` names it.
        d.fields.push_back(fmt::format("module={}", kRootModuleName));
      } else {
        d.fields.emplace_back(field);
      }
    }
    if (!ok) {
      continue;
    }
    if (d.type != OrderDirective::Type::Not) {
      positive_before = true;
    }
    order.directives.push_back(std::move(d));
  }
  if (result.diagnostics.empty() && order.directives.empty()) {
    diag::Diagnostic d;
    d.file = file;
    d.message = "no directive found (expected lines such as 'CHECK: kind=fetch module=adapter')";
    result.diagnostics.push_back(std::move(d));
  }
  if (result.diagnostics.empty()) {
    result.order = std::move(order);
  }
  return result;
}

OrderChecker::OrderChecker(const OrderFile& order, std::string trace_file)
    : order_(order), trace_file_(std::move(trace_file)), dag_matched_(order.directives.size()) {
  skip_nots();
}

void OrderChecker::skip_nots() {
  while (pos_ < order_.directives.size() &&
         order_.directives[pos_].type == OrderDirective::Type::Not) {
    nots_.push_back(pos_++);
  }
}

size_t OrderChecker::next_label(size_t from) const {
  for (size_t i = from; i < order_.directives.size(); ++i) {
    if (order_.directives[i].type == OrderDirective::Type::Label) {
      return i;
    }
  }
  return order_.directives.size();
}

bool OrderChecker::matches(const OrderDirective& directive) const {
  return std::all_of(
      directive.fields.begin(), directive.fields.end(), [this](const std::string& f) {
        return std::find(tokens_.begin(), tokens_.end(), std::string_view(f)) != tokens_.end();
      });
}

void OrderChecker::fail(const OrderDirective& directive, std::string message, std::string note,
                        uint64_t note_line) {
  diag::Diagnostic d;
  d.file = order_.file;
  d.loc = {directive.line, directive.col};
  d.length = static_cast<uint32_t>(std::max<size_t>(directive.pattern.size(), 1));
  d.message = std::move(message);
  d.source_line = directive.source_line;
  if (!note.empty()) {
    d.notes.push_back({{static_cast<uint32_t>(note_line), 0}, std::move(note), "", 1, trace_file_});
  }
  failure_ = std::move(d);
}

void OrderChecker::on_event(const Event& event, uint64_t line) {
  if (failure_) {
    return;
  }
  ++events_;
  rendered_ = format_event(event);
  tokens_.clear();
  for (const auto& [offset, field] : split_fields(rendered_)) {
    tokens_.push_back(field);
  }
  const bool was_after_match = after_match_;
  after_match_ = false;
  const auto matched = [&](size_t next_pos) {
    pos_ = next_pos;
    nots_.clear();
    after_match_ = true;
    last_match_line_ = line;
    last_match_text_ = rendered_;
    skip_nots();
  };
  if (pos_ < order_.directives.size()) {
    const OrderDirective& d = order_.directives[pos_];
    switch (d.type) {
    case OrderDirective::Type::Next:
      if (!was_after_match) {
        break;  // unreachable: a CHECK-NEXT is only current right after a match
      }
      if (matches(d)) {
        matched(pos_ + 1);
        return;
      }
      fail(d,
           fmt::format("CHECK-NEXT: expected {} on the event after the previous match", d.pattern),
           fmt::format("found instead: {}", rendered_), line);
      return;
    case OrderDirective::Type::Dag: {
      size_t end = pos_;
      while (end < order_.directives.size() &&
             order_.directives[end].type == OrderDirective::Type::Dag) {
        ++end;
      }
      for (size_t i = pos_; i < end; ++i) {
        if (!dag_matched_[i] && matches(order_.directives[i])) {
          dag_matched_[i] = true;
          if (std::all_of(dag_matched_.begin() + static_cast<std::ptrdiff_t>(pos_),
                          dag_matched_.begin() + static_cast<std::ptrdiff_t>(end),
                          [](bool b) { return b; })) {
            matched(end);
          } else {
            after_match_ = true;
            last_match_line_ = line;
          }
          return;
        }
      }
      break;
    }
    case OrderDirective::Type::Check:
    case OrderDirective::Type::Label:
      if (matches(d)) {
        matched(pos_ + 1);
        return;
      }
      break;
    case OrderDirective::Type::Not:
      break;
    }
  }
  for (size_t i : nots_) {
    if (matches(order_.directives[i])) {
      fail(order_.directives[i],
           fmt::format("CHECK-NOT: excluded event {} found", order_.directives[i].pattern),
           fmt::format("found here: {}", rendered_), line);
      return;
    }
  }
  // A label the current directive comes before: that directive was not found in its block.
  const size_t label = next_label(pos_ + 1);
  if (pos_ < order_.directives.size() && label < order_.directives.size() &&
      matches(order_.directives[label])) {
    const OrderDirective* d = &order_.directives[pos_];
    for (size_t i = pos_; d->type == OrderDirective::Type::Dag && dag_matched_[i]; ++i) {
      d = &order_.directives[i + 1];  // the first CHECK-DAG of the group still unmatched
    }
    fail(*d,
         fmt::format("{}: expected {} before the event of line {} of the order file ({})",
                     format_as(d->type), d->pattern, order_.directives[label].line,
                     order_.directives[label].pattern),
         fmt::format("the label's event: {}", rendered_), line);
  }
}

std::optional<diag::Diagnostic> OrderChecker::finish() {
  if (!failure_ && pos_ < order_.directives.size()) {
    const OrderDirective* d = &order_.directives[pos_];
    if (d->type == OrderDirective::Type::Dag) {
      for (size_t i = pos_;
           i < order_.directives.size() && order_.directives[i].type == OrderDirective::Type::Dag;
           ++i) {
        if (!dag_matched_[i]) {
          d = &order_.directives[i];
          break;
        }
      }
    }
    if (last_match_line_ == 0) {
      fail(*d,
           fmt::format("{}: expected {} not found in {}", format_as(d->type), d->pattern,
                       trace_file_),
           "", 0);
    } else {
      fail(*d,
           fmt::format("{}: expected {} not found in {}", format_as(d->type), d->pattern,
                       trace_file_),
           fmt::format("scanning from after the previous match: {}", last_match_text_),
           last_match_line_);
    }
  }
  return failure_;
}

}  // namespace zfetch::trace
