// A replay schedule as the GPU side reads it (written by `zfetch run --replay-schedule`,
// sim/export/replay_schedule.h): the operations to execute and the simulator's own step times,
// which are the prediction the replay's measurements are compared with (the GPU side has no cost
// model of its own). Host-only (no CUDA), unit-tested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zfetch::gpu {

/// The constants of a calibration (sim/timeline/calibration.h) that the replay reports and
/// compares: collectives `alpha + (W-1)/W * bytes / busbw` or a measured curve, h2d `alpha + bytes
/// / bandwidth`.
struct ReplayCalibration {
  std::string machine;
  std::int64_t allgather_alpha_ns = 0;
  std::int64_t allgather_busbw = 0;  ///< bytes/s
  std::int64_t rs_alpha_ns = 0;
  std::int64_t rs_busbw = 0;  ///< bytes/s
  std::int64_t h2d_bytes_per_s = 0;
  std::int64_t h2d_alpha_ns = 0;  ///< fixed cost per h2d copy (0 in files without h2d.alpha_ns)
  std::size_t allgather_curve_points = 0;  ///< points of the measured curve the timeline used

  /// True when both describe the same costs (the machine's name aside).
  [[nodiscard]] bool same_costs(const ReplayCalibration& o) const {
    return allgather_alpha_ns == o.allgather_alpha_ns && allgather_busbw == o.allgather_busbw &&
           rs_alpha_ns == o.rs_alpha_ns && rs_busbw == o.rs_busbw &&
           h2d_bytes_per_s == o.h2d_bytes_per_s && h2d_alpha_ns == o.h2d_alpha_ns &&
           allgather_curve_points == o.allgather_curve_points;
  }
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
  std::int64_t start_ns = -1;         ///< Compute: the simulator's start (-1 in older files)
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
  ReplayCalibration calibration;  ///< the one the simulator predicted with
  std::vector<ReplayParam> params;
  std::vector<ReplayOp> ops;
  std::vector<ReplayStep> sim_steps;  ///< the simulator's step times: the prediction
};

/// Parses schedule JSON; throws std::runtime_error with a message on bad input.
ReplaySchedule parse_replay_schedule(std::string_view text);

/// Reads the calibration constants from a `zfetch-calibration` file's text, as
/// sim/timeline/calibration.cc does: allgather/reduce_scatter alpha_ns and busbw_GBps
/// (reduce_scatter defaults to allgather), h2d.bandwidth_GBps (or the rate of h2d.beside_gather,
/// as the simulator takes it) and h2d.alpha_ns (0 when absent);
/// GB/s rounded to bytes/s, alpha to the nearest ns. Throws on bad input.
ReplayCalibration parse_replay_calibration(std::string_view text);

}  // namespace zfetch::gpu
