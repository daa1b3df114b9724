// Turns a failure into the facts a person needs to act on it: which access registered which
// parameter, and why the recorded trace lacks it. What avoids it is re-simulated before it is
// said (sim/explore/remedies.h).
#pragma once

#include <string>
#include <vector>

#include "model/scenario.h"
#include "sim/emitter.h"
#include "sim/history.h"
#include "sim/simulator.h"
#include "sim/state.h"

namespace zfetch::sim {

struct Occurrence;
struct QueueEntry;

/// What the queue check saw when it failed (3.3 b).
struct MismatchFacts {
  ModuleIndex module;
  int32_t step_id;
  std::vector<ParamIndex> need;
  std::vector<ParamIndex> got;
  std::vector<QueueEntry> popped;
  const std::vector<Occurrence>& order;
};

/// Why `partitioned` left its param NOT_AVAILABLE, as a clause ("load_checkpoint partitioned
/// every param (engine 1, its prologue)").
std::string partition_reason(const Partitioned& partitioned);

/// What a trace invalidation means: where, the expected and the found module, and its cause
/// (an eval pass, a `when:` branch, or a changed module order). Several lines, each "- ...".
std::string explain_invalidation(const model::Scenario& scenario, const Invalidation& at);

std::string explain_mismatch(const model::Scenario& scenario, const ParamState& params,
                             const ModuleState& modules, const History& history,
                             Discovery discovery, const Context& now, const MismatchFacts& facts);

}  // namespace zfetch::sim
