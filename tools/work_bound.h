// A bound on the work of one simulation: `repeat` counts, gradient accumulation and step counts
// can ask for more events than any machine has time for; past the bound the run stops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/scenario.h"
#include "sim/simulator.h"
#include "trace/sink.h"

namespace zfetch::tools {

/// Default of --max-events: a few seconds of simulation and a few hundred MB, far above every
/// scenario of the
/// repository (the largest emits about 10^5 events).
inline constexpr uint64_t kDefaultMaxEvents = 50'000'000;

/// Passes events on to `next`. When stderr is a terminal it keeps a progress line there
/// (rewritten in place, erased by the destructor), so a long run shows that it is alive;
/// elsewhere it prints nothing. The bound itself is a trace::BoundedSink in front of it.
class ProgressSink final : public trace::EventSink {
 public:
  explicit ProgressSink(trace::EventSink& next);
  ~ProgressSink() override;
  ProgressSink(const ProgressSink&) = delete;
  ProgressSink& operator=(const ProgressSink&) = delete;

  void on_event(const trace::Event& event) override;

 private:
  uint64_t events_ = 0;
  bool progress_;
  bool progress_shown_ = false;
  trace::EventSink& next_;
};

/// The operations one run executes, counted from the scenario before anything runs (so work
/// that emits few events, such as nested repeats of resident accesses, is bounded too): one
/// per op of each forward, repeats multiplied out, calls expanded, times every forward pass
/// of the schedule (steps * gradient_accumulation_steps, eval passes). Saturates at
/// UINT64_MAX instead of wrapping.
uint64_t planned_operations(const model::Scenario& scenario);

/// `file: error: ...` for a run whose planned operations exceed the bound.
std::string planned_work_message(const std::string& file, uint64_t operations, uint64_t max_events);

/// `file: error: ...` for a run stopped by the bound, naming the option that raises it.
std::string work_bound_message(const std::string& file, uint64_t max_events);

/// Simulates `scenario` into `sink` (through a ProgressSink) within the bound: its planned
/// operations first, then its events as they are simulated. Nothing, after the message naming
/// `file` on stderr, when it asks for more than `max_events`.
std::optional<sim::Outcome> simulate_within_bound(const model::Scenario& scenario,
                                                  const sim::Options& options,
                                                  trace::EventSink& sink, uint64_t max_events,
                                                  const std::string& file);

}  // namespace zfetch::tools
