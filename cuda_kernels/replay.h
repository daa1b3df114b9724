// `zfetch-gpu replay`: a replay schedule executed on the GPU (see docs/gpu.md "Replay").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_kernels/replay_schedule_file.h"

namespace zfetch::gpu {

/// What a replay's operations cost on this GPU, measured the way the replay runs them (in CUDA
/// graphs, each op a dependent round trip from the compute stream), on sizes of its own: this
/// is the calibration `zfetch-gpu bench --replay-world W` writes, measured apart from any schedule.
struct ReplayCosts {
  /// W * shard bytes of each timed bucket (what the timeline costs): 4 bf16 params of a multiple
  /// of 8 * W elements, 256 B (512 B at W = 8) to 1 GiB in x2 steps, round trips cycling over
  /// enough buckets of a size to hold 4x L2 (a replay's gathers find their buffers cold).
  std::vector<double> gather_bytes;
  std::vector<double> gather_ns;  ///< per dependent round trip compute -> gather -> compute
  double gather_alpha_ns = 0;     ///< line fit of the points (reported beside the curve)
  double gather_bw_gbps = 0;
  std::vector<double> h2d_bytes;  ///< dependent pinned copies compute -> h2d -> compute
  std::vector<double> h2d_ns;
  double h2d_alpha_ns = 0;  ///< fit: alpha + bytes / bandwidth
  double h2d_bw_gbps = 0;
  double spin_gap_ns = 0;  ///< back-to-back compute kernels: period - spin time
};

/// Measures ReplayCosts for gathers over `world` simulated ranks' shards on the current GPU.
ReplayCosts measure_replay_costs(std::uint32_t world);

struct ReplayConfig {
  int repeats = 15;
  int warmup = 2;
  double spin_gap_ns = -1;   ///< < 0: measure
  bool reduce_edges = true;  ///< leave out implied dependencies (replay_deps.h)
};

struct ReplayMeasurement {
  std::string device;
  double spin_gap_ns = 0;                         ///< what a compute kernel adds to its spin
  std::vector<std::int32_t> steps;                ///< step numbers, in order
  std::vector<std::vector<double>> step_samples;  ///< [step][repeat] ns
  std::vector<double> step_median_ns;
  double run_median_ns = 0;  ///< whole schedule per repeat
  std::int64_t gather_ops = 0;
  std::int64_t compute_kernels = 0;
  std::int64_t compute_skipped = 0;  ///< compute shorter than the launch gap: no kernel
  std::uint64_t device_bytes = 0;
  std::uint64_t graph_nodes = 0;  ///< captured ops (a bucket of several dtypes counts once)
  std::uint64_t graph_edges = 0;  ///< dependencies between them
};

/// Builds the schedule as one CUDA graph (streams compute, comm, h2d, and the timing marks off
/// compute's chain) and runs it `warmup` + `repeats` times. Fits nothing: the prediction to
/// compare with is the schedule's own (the simulator's) step times.
ReplayMeasurement run_replay(const ReplaySchedule& schedule, const ReplayConfig& config);

}  // namespace zfetch::gpu
