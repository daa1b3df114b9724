// The replay schedule written by `zfetch run --replay-schedule` (see replay_schedule.h).
#include "sim/export/replay_schedule.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "base/enum_names.h"
#include "model/partition.h"
#include "trace/event.h"

namespace zfetch::sim {

namespace {

// A gather op's `kind` in the schedule file (docs/replay-schedule.md); only the gather slices
// have one, the other kinds never reach it.
constexpr base::EnumNames<Slice::Kind::ReduceScatter> kGatherKindNames("gather", "gather",
                                                                       "prefetch", "getter",
                                                                       "persistent", "gather",
                                                                       "gather");

bool is_sync(Slice::Kind kind) {
  return kind == Slice::Kind::GetterGather || kind == Slice::Kind::PersistentGather;
}

nlohmann::ordered_json collective(const CollectiveCalibration& c) {
  nlohmann::ordered_json j;
  j["alpha_ns"] = c.alpha_ns;
  j["busbw_bytes_per_s"] = c.busbw_bytes_per_s;
  if (!c.curve.empty()) {  // the measured curve the timeline interpolated instead of the line
    nlohmann::ordered_json curve = nlohmann::ordered_json::array();
    for (const CollectiveCalibration::Point& p : c.curve) {
      curve.push_back({p.bytes, p.time_ns});
    }
    j["curve"] = curve;
  }
  return j;
}

}  // namespace

void ReplayDrainMarks::on_event(const trace::Event& event) {
  if (event.kind == trace::EventKind::OptimizerStep && event.rank == rank_ &&
      timeline_ != nullptr) {
    drains_.push_back(static_cast<uint32_t>(timeline_->slices_recorded()));
  }
  if (event.kind == trace::EventKind::Wait && event.rank == rank_ && timeline_ != nullptr &&
      event.param_index != trace::Event::kNoIndex) {
    waits_.emplace_back(static_cast<uint32_t>(timeline_->slices_recorded()), event.param_index);
  }
  next_.on_event(event);
}

std::string replay_schedule_json(const Recording& recording, const TimelineSummary& summary,
                                 const model::Scenario& scenario, const Calibration& calibration,
                                 const ReplayDrainMarks& marks, int32_t rank) {
  const std::vector<uint32_t>& drains = marks.drains();
  const std::vector<std::pair<uint32_t, uint32_t>>& wait_marks = marks.waits();
  using nlohmann::ordered_json;
  const int64_t world = std::max<int64_t>(1, scenario.world_size);
  const bool offload = scenario.config.zero.offload_param.device != model::OffloadDevice::None;
  ordered_json j;
  j["format"] = "zfetch-replay-schedule";
  j["version"] = 1;
  j["scenario"] = scenario.name;
  j["rank"] = rank;
  j["world_size"] = world;
  j["offload"] = offload;
  ordered_json cal;
  cal["machine"] = calibration.machine;
  cal["allgather"] = collective(calibration.allgather);
  cal["reduce_scatter"] = collective(calibration.reduce_scatter);
  cal["h2d_bytes_per_s"] = calibration.h2d_bytes_per_s;
  cal["h2d_alpha_ns"] = calibration.h2d_alpha_ns;
  j["calibration"] = cal;
  ordered_json params = ordered_json::array();
  for (const model::ParamSpec& p : scenario.params) {
    params.push_back({p.numel, model::dtype_bytes(p.dtype)});
  }
  j["params"] = params;

  std::vector<const StepSummary*> steps;
  for (const StepSummary& s : summary.steps) {
    if (s.rank == rank) {
      steps.push_back(&s);
    }
  }

  ordered_json ops = ordered_json::array();
  std::unordered_map<uint32_t, int64_t> op_of_slice;         // gather and h2d slices -> op index
  std::unordered_map<uint32_t, std::vector<int64_t>> waits;  // compute slice -> gather ops
  bool in_step = false;
  int32_t step = 0;
  const auto n = static_cast<uint32_t>(recording.slices.size());
  // Flows point from a gather to a later compute slice: resolved after the gathers are numbered.
  std::vector<std::vector<uint32_t>> flows_to(n);
  for (const Flow& f : recording.flows) {
    if (f.to_slice < n) {
      flows_to[f.to_slice].push_back(f.from_slice);
    }
  }
  size_t next_drain = 0;
  size_t next_wait = 0;
  std::unordered_map<uint32_t, int64_t> last_gather;  // param -> latest gather op holding it
  // Waits noted before slice `i` stall compute on the latest gather of their param.
  auto emit_waits = [&](uint32_t i) {
    for (; next_wait < wait_marks.size() && wait_marks[next_wait].first <= i; ++next_wait) {
      const auto it = last_gather.find(wait_marks[next_wait].second);
      if (it != last_gather.end()) {
        ops.push_back({{"op", "wait"}, {"on", it->second}});
      }
    }
  };
  for (uint32_t i = 0; i < n; ++i) {
    const Slice& s = recording.slices[i];
    if (s.rank != rank) {
      continue;
    }
    emit_waits(i);
    // An optimizer step drained before this slice (its step's, or the previous step's).
    bool drain_here = false;
    while (next_drain < drains.size() && drains[next_drain] <= i) {
      drain_here = true;
      ++next_drain;
    }
    if (drain_here && in_step && s.step == step) {
      ops.push_back({{"op", "drain"}});
      drain_here = false;
    }
    if (!in_step || s.step != step) {
      if (drain_here && in_step) {
        ops.push_back({{"op", "drain"}});
      }
      in_step = true;
      step = s.step;
      ops.push_back({{"op", "step"}, {"step", step}});
    }
    switch (s.kind) {
    case Slice::Kind::Compute: {
      ordered_json w = ordered_json::array();
      for (uint32_t from : flows_to[i]) {
        const auto it = op_of_slice.find(from);
        if (it != op_of_slice.end() &&
            std::find(w.begin(), w.end(), ordered_json(it->second)) == w.end()) {
          w.push_back(it->second);
        }
      }
      // start_ns (the simulator's start of the slice, from the run's start) is for reading: a
      // replay's per-op trace (`zfetch-gpu replay --trace-compute`) is compared with it.
      ops.push_back(
          {{"op", "compute"}, {"dur_ns", s.dur_ns}, {"waits", w}, {"start_ns", s.start_ns}});
      break;
    }
    case Slice::Kind::ReduceScatter:
      ops.push_back({{"op", "rs"}, {"bytes", s.bytes}});
      break;
    case Slice::Kind::H2d:
    default: {
      // An h2d slice is followed by its gather's comm slice (same params) unless W == 1.
      const bool h2d = s.kind == Slice::Kind::H2d;
      uint32_t comm = i;
      if (h2d && i + 1 < n && recording.slices[i + 1].rank == rank &&
          recording.slices[i + 1].stream == Stream::Comm &&
          recording.slices[i + 1].params_begin == s.params_begin) {
        comm = i + 1;
      }
      const Slice& g = recording.slices[comm];
      ordered_json ps = ordered_json::array();
      int64_t shard = 0;
      int64_t full = 0;
      for (uint32_t k = 0; k < s.params_count; ++k) {
        const model::ParamIndex p = recording.slice_params[s.params_begin + k];
        ps.push_back(p);
        last_gather[p] = static_cast<int64_t>(ops.size());
        const model::ParamSpec& spec = scenario.params[p];
        const int64_t elem = model::dtype_bytes(spec.dtype);
        shard += model::partition_numel<int64_t>(spec.numel, world) * elem;
        full += spec.numel * elem;
      }
      const int64_t op = static_cast<int64_t>(ops.size());
      ops.push_back({{"op", "gather"},
                     {"kind", kGatherKindNames[g.kind]},
                     {"sync", is_sync(g.kind)},
                     {"params", ps},
                     {"shard_bytes", shard},
                     {"full_bytes", full}});
      op_of_slice[i] = op;
      op_of_slice[comm] = op;
      i = comm;
      break;
    }
    }
  }
  emit_waits(n);
  if (in_step) {
    ops.push_back({{"op", "drain"}});  // finish() drains the last step
  }
  j["ops"] = ops;
  ordered_json st = ordered_json::array();
  for (const StepSummary* s : steps) {
    st.push_back({{"step", s->step},
                  {"step_ns", s->step_ns},
                  {"compute_ns", s->compute_ns},
                  {"exposed_comm_ns", s->exposed_comm_ns},
                  {"optimizer_step", s->optimizer_step}});
  }
  j["steps"] = st;
  return j.dump() + "\n";
}

}  // namespace zfetch::sim
