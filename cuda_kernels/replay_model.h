// A replay schedule (written by `zfetch run --replay-schedule`, sim/export/replay_schedule.h) and
// its predicted step times: the simulator's stream rules (sim/timeline/timeline.cc,
// docs/timeline.md) applied to the schedule's operations with a given calibration. Host-only (no
// CUDA), unit-tested.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zfetch::gpu {

/// The constants the timeline's cost model takes from a calibration (sim/timeline/calibration.h),
/// as integers: collectives `alpha + (W-1)/W * bytes / busbw`, h2d `alpha + bytes / bandwidth`.
struct ReplayCalibration {
  std::string machine;
  std::int64_t allgather_alpha_ns = 0;
  std::int64_t allgather_busbw = 0;  ///< bytes/s
  std::int64_t rs_alpha_ns = 0;
  std::int64_t rs_busbw = 0;  ///< bytes/s
  std::int64_t h2d_bytes_per_s = 0;
  std::int64_t h2d_alpha_ns = 0;  ///< fixed cost per h2d copy (0 in files without h2d.alpha_ns)
};

struct ReplayOp {
  enum class Kind { Step, Gather, Wait, Compute, Rs, Drain };
  Kind kind = Kind::Compute;
  std::int32_t step = 0;              ///< Step
  bool sync = false;                  ///< Gather: getter/persistent, compute waits at once
  std::string gather_kind;            ///< Gather: gather, prefetch, getter, persistent
  std::vector<std::uint32_t> params;  ///< Gather
  std::int64_t shard_bytes = 0;       ///< Gather: sum of ceil(N/W) * element bytes
  std::int64_t full_bytes = 0;        ///< Gather: sum of N * element bytes
  std::int64_t dur_ns = 0;            ///< Compute
  std::vector<std::uint32_t> waits;   ///< Compute: indices of Gather ops
  std::int64_t bytes = 0;             ///< Rs
};

struct ReplayParam {
  std::uint64_t numel = 0;
  std::uint32_t elem_bytes = 2;
};

struct ReplayStep {
  std::int32_t step = 0;
  std::int64_t step_ns = 0;
};

struct ReplaySchedule {
  std::string scenario;
  std::int64_t world_size = 1;
  bool offload = false;
  ReplayCalibration calibration;  ///< the one the simulator used
  std::vector<ReplayParam> params;
  std::vector<ReplayOp> ops;
  std::vector<ReplayStep> sim_steps;  ///< the simulator's step times (its calibration)
};

/// Parses schedule JSON; throws std::runtime_error with a message on bad input.
ReplaySchedule parse_replay_schedule(std::string_view text);

/// Reads the calibration constants from a `zfetch-calibration` file's text, as
/// sim/timeline/calibration.cc does: allgather/reduce_scatter alpha_ns and busbw_GBps
/// (reduce_scatter defaults to allgather), h2d.bandwidth_GBps and h2d.alpha_ns (0 when absent);
/// GB/s rounded to bytes/s, alpha to the nearest ns. Throws on bad input.
ReplayCalibration parse_replay_calibration(std::string_view text);

/// `collective_ns`, `transfer_ns` and `h2d_copy_ns` of sim/timeline/cost_model.cc (same integer
/// arithmetic).
std::int64_t replay_collective_ns(std::int64_t alpha_ns, std::int64_t busbw, std::int64_t bytes,
                                  std::int64_t world_size);
std::int64_t replay_transfer_ns(std::int64_t bytes, std::int64_t bytes_per_s);
std::int64_t replay_h2d_ns(std::int64_t alpha_ns, std::int64_t bytes, std::int64_t bytes_per_s);

/// Per-step prediction: the timeline's rules over the schedule's operations. A gather is issued
/// at compute's current time; with offload its h2d copy (shard bytes; alpha + bytes / bandwidth)
/// runs on the h2d stream first; then the all-gather of W * shard bytes on comm when comm is free
/// (none when it costs 0); a sync gather stalls compute until it ends; a wait stalls compute until
/// its gather ends; compute first waits for the gathers it waits on, then runs its duration; rs
/// runs on its own stream from compute's time; drain waits for every stream. step_ns = compute time
/// at the next step's start (or the end) minus at this step's start.
struct PredictedStep {
  std::int32_t step = 0;
  std::int64_t step_ns = 0;
  std::int64_t compute_ns = 0;
};
std::vector<PredictedStep> predict_steps(const ReplaySchedule& schedule,
                                         const ReplayCalibration& calibration);

}  // namespace zfetch::gpu
