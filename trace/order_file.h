// Order files: hand-written expectations over a trace's events, with FileCheck's directives
// (CHECK, CHECK-NEXT, CHECK-NOT, CHECK-DAG, CHECK-LABEL) over the `key=value` rendering.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diag/diagnostic.h"
#include "trace/event.h"

namespace zfetch::trace {

/// One directive line: `CHECK-NEXT: kind=fetch module=adapter`.
struct OrderDirective {
  enum class Type : uint8_t { Check, Next, Not, Dag, Label };
  Type type = Type::Check;
  /// The `key=value` fields an event must all have (whole fields, as format_event writes them).
  std::vector<std::string> fields;
  std::string pattern;  ///< the pattern as written
  uint32_t line = 0;
  uint32_t col = 0;  ///< where the pattern starts
  std::string source_line;
};

/// "CHECK", "CHECK-NEXT", "CHECK-NOT", "CHECK-DAG" or "CHECK-LABEL".
std::string_view format_as(OrderDirective::Type type);

struct OrderFile {
  std::string file;
  std::vector<OrderDirective> directives;
};

struct OrderParseResult {
  std::optional<OrderFile> order;  ///< nullopt when `diagnostics` has an error
  diag::DiagnosticList diagnostics;
};

/// Parses and validates an order file: every directive spelled right, every field a known key
/// with a value of its type, a CHECK-NEXT only after another positive directive, at least one
/// directive. Lines without a directive (comments, blank lines) are ignored.
OrderParseResult parse_order_file(std::string file, std::string_view text);

/// Checks a stream of events against an order file, one event at a time, FileCheck's way:
/// CHECK finds the next matching event, CHECK-NEXT must match the very next event, CHECK-NOT
/// must match no event between the matches around it, CHECK-DAG directives in a row match in
/// any order, and a CHECK-LABEL bounds the search of the directives before it.
class OrderChecker {
 public:
  /// `trace_file` names the events' file in the notes.
  OrderChecker(const OrderFile& order, std::string trace_file);

  /// Feeds the next event, read from line `line` of the trace. After a failure, does nothing.
  void on_event(const Event& event, uint64_t line);
  /// Ends the stream; returns the first violated directive as an error located in the order
  /// file, with notes into the trace; nullopt when every directive held.
  std::optional<diag::Diagnostic> finish();

  [[nodiscard]] bool failed() const { return failure_.has_value(); }
  [[nodiscard]] uint64_t events() const { return events_; }

 private:
  [[nodiscard]] bool matches(const OrderDirective& directive) const;
  void fail(const OrderDirective& directive, std::string message, std::string note,
            uint64_t note_line);
  void skip_nots();
  size_t next_label(size_t from) const;

  const OrderFile& order_;
  std::string trace_file_;
  size_t pos_ = 0;                 // the directive to satisfy next
  std::vector<size_t> nots_;       // CHECK-NOTs active since the last match
  std::vector<bool> dag_matched_;  // per directive, for the current CHECK-DAG group
  bool after_match_ = false;       // the last event fed was a match (for CHECK-NEXT)
  uint64_t last_match_line_ = 0;
  std::string last_match_text_;
  std::string rendered_;                  // the current event as key=value text
  std::vector<std::string_view> tokens_;  // its fields
  uint64_t events_ = 0;
  std::optional<diag::Diagnostic> failure_;
};

}  // namespace zfetch::trace
