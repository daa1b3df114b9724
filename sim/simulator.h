// Simulates a scenario through the modeled ZeRO-3 partitioner and coordinator, emitting events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/outcome.h"
#include "model/scenario.h"
#include "trace/event.h"
#include "trace/sink.h"

namespace zfetch::sim {

// The policy and outcome vocabulary is the expect block's (model/outcome.h).
using model::Discovery;
using model::OutcomeKind;

/// Where and why a run failed.
struct Failure {
  std::string message;      ///< DeepSpeed's exact exception text
  std::string explanation;  ///< what a person can act on (several lines)
  trace::Phase phase = trace::Phase::None;
  int32_t rank = 0;
  int32_t engine = 0;
  int32_t step = 0;
  int32_t micro_step = 0;
  int32_t trace_step = -1;
  model::ModuleIndex module = model::kNone;
  /// A fetch-queue mismatch: the params `module` fetches that the queue did not deliver
  /// (canonical, by ds_id), what a remedy has to put into the trace.
  std::vector<model::ParamIndex> missing;
};

/// Counters of one run.
struct RunStats {
  uint64_t events = 0;
  uint64_t fetches = 0;
  uint64_t gathers = 0;  ///< coalesced gather calls (fetch + prefetch)
  uint64_t gathered_params = 0;
  int64_t gathered_bytes = 0;
  uint64_t getter_gathers = 0;      ///< the getter's synchronous gathers (and dangling returns')
  uint64_t persistent_gathers = 0;  ///< persistent params regathered by _post_step or a checkpoint
  uint64_t releases = 0;
  uint64_t passes = 0;
  uint64_t optimizer_steps = 0;
};

/// A latent hazard (issue #8874's shape): an external access in an engine forward that the
/// getter did not discover because its parameter was AVAILABLE or INFLIGHT at that moment. The
/// run did not depend on the dependency then; it does once the parameter is NOT_AVAILABLE at
/// the same access while the trace holds no entry for it.
struct Hazard {
  model::ModuleIndex module = model::kNone;    ///< the module on top of the stack (the accessor)
  model::ParamIndex param = model::kNone;      ///< canonical (tied params count once)
  trace::Status status = trace::Status::None;  ///< AVAILABLE or INFLIGHT
  bool persistent = false;                     ///< below the persistence threshold: resident
  trace::Phase phase = trace::Phase::None;
  int32_t rank = 0;
  int32_t engine = 0;
  int32_t step = 0;
  int32_t micro_step = 0;
};

/// Why the coordinator threw its trace away.
enum class InvalidationCause : uint8_t {
  ModuleMismatch,        ///< another module ran where the trace has `expected` (semantics 3.4 #1)
  TraceTooShort,         ///< `found` ran past the trace's end (3.4 #2)
  HooksRegisteredAgain,  ///< the hooks were registered on the model again (PR #8043); no module
};

/// One trace invalidation: where the module order of a replay left the recorded one, or where
/// the hooks' re-registration dropped the trace.
struct Invalidation {
  InvalidationCause cause = InvalidationCause::ModuleMismatch;
  trace::Phase phase = trace::Phase::None;
  int32_t rank = 0;
  int32_t engine = 0;
  int32_t step = 0;
  int32_t micro_step = 0;
  int32_t trace_step = 0;
  model::ModuleIndex found = model::kNone;     ///< the module whose forward ran (none: rehook)
  model::ModuleIndex expected = model::kNone;  ///< ModuleMismatch: the trace's module there
  int32_t trace_length = 0;                    ///< modules in the recorded trace
  trace::Phase recorded_phase = trace::Phase::None;  ///< the pass the trace was recorded in
};

struct Outcome {
  OutcomeKind kind = OutcomeKind::Pass;
  int64_t invalidations = 0;
  std::optional<Failure> failure;
  RunStats stats;
  std::vector<std::string> warnings;  ///< log_trace_cache_warnings texts (rank 0, at most 100)
  /// The first invalidations of rank 0, in simulation order, for their explanation.
  std::vector<Invalidation> invalidation_details;
  static constexpr size_t kMaxInvalidationDetails = 10;
  /// The first undiscovered access of each (module, parameter), in simulation order, every
  /// simulated rank (at most kMaxHazards).
  std::vector<Hazard> hazards;
  static constexpr size_t kMaxHazards = 100;
};

/// The accelerator DeepSpeed runs on, where it changes an outcome: the CPU accelerator (CPU
/// ranks with gloo, as the real-DeepSpeed recordings run) fails where a GPU drops a gradient.
enum class Accelerator : uint8_t { Gpu, Cpu };

struct Options {
  Discovery discovery = Discovery::ResidentSkip;
  Accelerator accelerator = Accelerator::Gpu;
};

/// Runs the scenario's schedule on every rank that behaves differently (one rank when the
/// program never depends on the rank) and returns how it ended. Events go to `sink` in
/// simulation order. Deterministic: the same inputs give the same events and outcome.
Outcome simulate(const model::Scenario& scenario, const Options& options, trace::EventSink& sink);

/// For each world rank, the simulated rank whose schedule it runs: itself when simulate() runs
/// it, else the simulated rank that no `when: {rank: ...}` names (such ranks behave alike).
/// Sized world_size; for exporters that write one file per rank.
std::vector<int32_t> simulated_rank_of_each_rank(const model::Scenario& scenario);

}  // namespace zfetch::sim
