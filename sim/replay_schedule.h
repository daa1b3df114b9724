// The schedule `zfetch-gpu replay` executes: one rank's recorded timeline as operations in issue
// order, with what the GPU needs to run them and the simulator's own step times.
#pragma once

#include <cstdint>
#include <string>

#include "model/scenario.h"
#include "sim/calibration.h"
#include "sim/timeline.h"

namespace zfetch::sim {

/// The replay schedule of `rank` as JSON (`format: zfetch-replay-schedule`, version 1; docs/gpu.md
/// "Replay"), from a timeline run with TimelineOptions::record. Operations, in issue order:
///   {"op":"step","step":s}                        a step begins (compute-stream time)
///   {"op":"gather","kind":K,"sync":b,"params":[..],"shard_bytes":n,"full_bytes":n}
///       one coalesced gather (h2d copy of shard_bytes first when "offload"); K is gather,
///       prefetch, getter or persistent; sync gathers stall compute until they end
///   {"op":"compute","dur_ns":d,"waits":[op,..]}   compute after the gathers (op indices) end
///   {"op":"rs","bytes":n}                         reduce-scatter of gradients on its stream
///   {"op":"drain"}                                compute waits for every stream
/// plus "params" ([numel, element bytes] per scenario param), the calibration the timeline used,
/// and "steps": the simulator's step_ns of this rank.
std::string replay_schedule_json(const Recording& recording, const TimelineSummary& summary,
                                 const model::Scenario& scenario, const Calibration& calibration,
                                 int32_t rank = 0);

}  // namespace zfetch::sim
