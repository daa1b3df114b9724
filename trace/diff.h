// The difference between a recorded trace and an expected one, as data (tools/cmd_diff.cc
// renders it): divergences with the events and lines on both sides, and counts by type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diag/diagnostic.h"
#include "trace/event.h"
#include "trace/project.h"
#include "trace/reader.h"

namespace zfetch::trace {

/// An event copied out of a reader, with the line it was read from.
struct LocatedEvent {
  Event event;  ///< its names view `module` and `param` below
  uint64_t line = 0;
  std::string module;
  std::string param;

  LocatedEvent() = default;
  LocatedEvent(const Event& e, uint64_t at);
  LocatedEvent(const LocatedEvent& other);
  LocatedEvent& operator=(const LocatedEvent& other);
  LocatedEvent(LocatedEvent&& other) noexcept;
  LocatedEvent& operator=(LocatedEvent&& other) noexcept;
  ~LocatedEvent() = default;
  /// Becomes a copy of `e`, reusing the storage of the names.
  void assign(const Event& e, uint64_t at);

 private:
  void point_names();
};

/// One place where the recorded trace and the expected one differ.
struct Divergence {
  enum class Type : uint8_t {
    Missing,  ///< an expected event the recorded trace does not have
    Extra,    ///< a recorded event that was not expected
    Changed,  ///< a recorded event in the place of a different expected one
  };
  Type type = Type::Changed;
  /// Extra, Changed: the recorded event. Missing: the recorded event found where the expected
  /// one should have been (none at the end of a pass or of the trace).
  std::optional<LocatedEvent> recorded;
  /// Missing, Changed: the expected event. Extra: the expected event at that place, if any.
  std::optional<LocatedEvent> expected;
  /// The line of the recorded trace the divergence is reported at.
  uint64_t recorded_line = 0;
  /// Up to kContext compared events of the recorded trace before and after it.
  std::vector<LocatedEvent> before;
  std::vector<LocatedEvent> after;
};

/// "missing", "extra" or "changed".
std::string_view format_as(Divergence::Type type);

struct DiffOptions {
  Projection projection;
  /// Divergences kept with their events; all of them are counted.
  size_t max_divergences = 1000;
  size_t context = 2;
};

struct DiffReport {
  std::vector<Divergence> divergences;  ///< in the recorded trace's order
  uint64_t missing = 0;
  uint64_t extra = 0;
  uint64_t changed = 0;
  uint64_t recorded_events = 0;  ///< events compared (selected by the projection)
  uint64_t expected_events = 0;
  /// A read error of either trace: the comparison stopped there, and what came before it
  /// is in `divergences`.
  std::optional<diag::Diagnostic> error;

  [[nodiscard]] uint64_t divergence_count() const { return missing + extra + changed; }
  [[nodiscard]] bool equal() const { return divergence_count() == 0 && !error; }
};

/// Compares the events of `recorded` with those of `expected` under `options.projection`.
/// Both are read as streams, and both traces are cut into blocks at pass and engine boundaries
/// (a pass_start, engine_init or restart event, or a new engine, step or micro-step). Inside a
/// block, events are compared one by one while they agree, so a long equal stretch costs no
/// memory; from the first difference on, the rest of the block is aligned with Myers' algorithm
/// (trace/align.h). Events of one coalesced gather, wait or release compare as a set.
/// Both readers must have read their header.
DiffReport diff_traces(TraceReader& recorded, TraceReader& expected, const DiffOptions& options);

}  // namespace zfetch::trace
