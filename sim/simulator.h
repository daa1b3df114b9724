// Simulates a scenario through the modeled ZeRO-3 partitioner and coordinator, emitting events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/scenario.h"
#include "trace/event.h"
#include "trace/sink.h"

namespace zfetch::sim {

/// How the parameter getter discovers external accesses (semantics 5.2 and 5.7).
enum class Discovery : uint8_t {
  ResidentSkip,          ///< DeepSpeed up to 0.19.9: only NOT_AVAILABLE params are discovered
  ResidencyIndependent,  ///< PR #8875: discovered whatever their residency
};

std::string_view format_as(Discovery discovery);
std::optional<Discovery> parse_discovery(std::string_view name);

/// How a run ended. The names (format_as) are the `outcome` values of expect blocks.
enum class OutcomeKind : uint8_t {
  Pass,                ///< every step completed, the trace was never invalidated
  TraceInvalidated,    ///< completed, with N soft trace invalidations (3.4 #1/#2)
  FetchQueueMismatch,  ///< the hard `tracing error at step N` (3.4 #3)
  InflightParams,      ///< an in-flight / status assertion (3.4 #9-#11)
  RankDivergence,      ///< ranks disagree at an agreement check (3.4 #8)
  Hang,                ///< ranks issue different collectives: DeepSpeed would hang
  NotAvailable,        ///< a module computed with a parameter that was not gathered
  Error,               ///< any other DeepSpeed error (message says which)
};

std::string_view format_as(OutcomeKind kind);
std::optional<OutcomeKind> parse_outcome(std::string_view name);

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
};

/// Counters of one run.
struct RunStats {
  uint64_t events = 0;
  uint64_t fetches = 0;
  uint64_t gathers = 0;  ///< coalesced gather calls (fetch + prefetch)
  uint64_t gathered_params = 0;
  int64_t gathered_bytes = 0;
  uint64_t getter_gathers = 0;
  uint64_t releases = 0;
  uint64_t passes = 0;
  uint64_t optimizer_steps = 0;
};

struct Outcome {
  OutcomeKind kind = OutcomeKind::Pass;
  int64_t invalidations = 0;
  std::optional<Failure> failure;
  RunStats stats;
  std::vector<std::string> warnings;  ///< log_trace_cache_warnings texts (rank 0, at most 100)
};

struct Options {
  Discovery discovery = Discovery::ResidentSkip;
};

/// Runs the scenario's schedule on every rank that behaves differently (one rank when the
/// program never depends on the rank) and returns how it ended. Events go to `sink` in
/// simulation order. Deterministic: the same inputs give the same events and outcome.
Outcome simulate(const model::Scenario& scenario, const Options& options, trace::EventSink& sink);

}  // namespace zfetch::sim
