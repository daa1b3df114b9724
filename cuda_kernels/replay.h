// `zfetch-gpu replay`: a replay schedule executed on the GPU (see docs/gpu.md "Replay").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_kernels/replay_model.h"

namespace zfetch::gpu {

/// What the replay measures besides the step times: the calibration of what it runs.
struct ReplayMeasuredCalibration {
  ReplayCalibration calibration;     ///< gathers and h2d as the timeline's model takes them
  double gather_alpha_ns = 0;        ///< fit of the dependent gather round trip
  double gather_bw_gbps = 0;         ///< bytes = W * shard bytes (what the timeline costs)
  std::vector<double> gather_bytes;  ///< the points of the fit
  std::string fit_on;                ///< which points the gather fit used
  std::vector<double> gather_ns;
  double h2d_alpha_ns = 0;  ///< fit of dependent pinned h2d copies: alpha + bytes / bw
  double h2d_bw_gbps = 0;
  std::vector<double> h2d_bytes;
  std::vector<double> h2d_ns;
  double spin_gap_ns = 0;     ///< back-to-back compute kernels: period - spin time
  double mark_period_ns = 0;  ///< back-to-back timing marks (step boundaries); reported only
};

struct ReplayConfig {
  int repeats = 15;
  int warmup = 2;
  bool measure_calibration = true;  ///< else use `calibration`
  ReplayCalibration calibration;
  double spin_gap_ns = -1;   ///< < 0: measure
  bool reduce_edges = true;  ///< leave out implied dependencies (replay_deps.h)
};

struct ReplayMeasurement {
  std::string device;
  ReplayMeasuredCalibration measured;
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

/// Measures the calibration (unless given), builds the schedule as one CUDA graph (streams
/// compute, comm, h2d; events as edges), runs it `warmup` + `repeats` times.
ReplayMeasurement run_replay(const ReplaySchedule& schedule, const ReplayConfig& config);

}  // namespace zfetch::gpu
