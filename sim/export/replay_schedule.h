// The schedule `zfetch-gpu replay` executes: one rank's recorded timeline as operations in issue
// order, with what the GPU needs to run them and the simulator's own step times.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/scenario.h"
#include "sim/timeline/calibration.h"
#include "sim/timeline/timeline.h"
#include "trace/sink.h"

namespace zfetch::sim {

/// A pipeline stage placed right after the Timeline: notes where, in the recording's slice
/// order, each OptimizerStep of `rank` drained the streams (slices recorded before it), since
/// slices alone do not show it (persistent gathers after the optimizer step, say).
class ReplayDrainMarks final : public trace::EventSink {
 public:
  explicit ReplayDrainMarks(trace::EventSink& next, int32_t rank = 0) : next_(next), rank_(rank) {}
  /// The timeline whose recording is counted; set before the first event.
  void attach(const Timeline* timeline) { timeline_ = timeline; }
  void on_event(const trace::Event& event) override;
  [[nodiscard]] const std::vector<uint32_t>& drains() const { return drains_; }
  /// Each Wait of `rank` on a known param: (slices recorded before it, param).
  [[nodiscard]] const std::vector<std::pair<uint32_t, uint32_t>>& waits() const { return waits_; }

 private:
  trace::EventSink& next_;
  int32_t rank_;
  const Timeline* timeline_ = nullptr;
  std::vector<uint32_t> drains_;
  std::vector<std::pair<uint32_t, uint32_t>> waits_;
};

/// The replay schedule of `rank` as JSON (`format: zfetch-replay-schedule`, version 1; docs/gpu.md
/// "Replay"), from a timeline run with TimelineOptions::record. Operations, in issue order:
///   {"op":"step","step":s}                        a step begins (compute-stream time)
///   {"op":"gather","kind":K,"sync":b,"params":[..],"shard_bytes":n,"full_bytes":n}
///       one coalesced gather (h2d copy of shard_bytes first when "offload"); K is gather,
///       prefetch, getter or persistent; sync gathers stall compute until they end
///   {"op":"compute","dur_ns":d,"waits":[op,..]}   compute after the gathers (op indices) end
///   {"op":"rs","bytes":n}                         reduce-scatter of gradients on its stream
///   {"op":"drain"}                                compute waits for every stream
/// Waits ({"op":"wait","on":gather op}: compute stalls until it ends) and drains come from
/// `marks`, placed where the timeline applied them; a drain also ends the last step (finish()), and
/// at the end of the last step (finish()), plus "params" ([numel, element bytes] per scenario
/// param), the calibration the timeline used, and "steps": the simulator's step_ns of this rank.
std::string replay_schedule_json(const Recording& recording, const TimelineSummary& summary,
                                 const model::Scenario& scenario, const Calibration& calibration,
                                 const ReplayDrainMarks& marks, int32_t rank = 0);

}  // namespace zfetch::sim
