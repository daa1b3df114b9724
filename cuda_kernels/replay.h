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
  /// The same round trips for buckets of one odd fp32 param (every rank slice 8 bytes short of
  /// whole 16-byte vectors), 64 B to 1 GiB in x4 steps: what a gather of odd params costs.
  std::vector<double> odd_gather_bytes;
  std::vector<double> odd_gather_ns;
  double gather_bw_gbps = 0;
  std::vector<double> h2d_bytes;  ///< dependent pinned copies compute -> h2d -> compute
  std::vector<double> h2d_ns;
  double h2d_alpha_ns = 0;  ///< fit: alpha + bytes / bandwidth
  double h2d_bw_gbps = 0;
  double spin_gap_ns = 0;  ///< back-to-back compute kernels: period - spin time
  /// Fixed costs of the smallest operations, each the median per op of a chain of many in one
  /// graph (docs/gpu.md "Fixed costs"): what latency-bound schedules spend beyond the curves.
  struct TinyGather {
    std::uint32_t params = 0;  ///< params in the bucket
    std::uint32_t elem_bytes = 0;
    std::uint64_t numel = 0;  ///< each param's elements
    double bytes = 0;         ///< W * shard bytes, as the timeline costs it
    double ns = 0;            ///< per dependent round trip
  };
  std::vector<TinyGather> tiny_gathers;  ///< buckets of 1 to 64 small params, odd and aligned
  double gather_after_compute_ns = 0;    ///< a round trip issued after a compute kernel, less it
  double h2d_tiny_ns = 0;                ///< a dependent pinned copy of h2d_tiny_bytes
  double h2d_tiny_bytes = 0;             ///< the smallest bucket's shard (64 B)
  double h2d_gather_ns = 0;              ///< compute -> that h2d copy -> its gather -> compute
  double marked_gather_ns = 0;           ///< the smallest round trip with a step mark before it
  double smallest_gather_ns = 0;         ///< the smallest round trip alone (beside the above)
  /// The old chain's h2d_tiny_ns measured again with a fresh pinned buffer each time (its spread).
  std::vector<double> h2d_tiny_repeats_ns;
  /// The smallest ops as a replay incurs them: synthetic schedules run by run_replay itself (its
  /// walk, lead-in, marks and launches), steps of 8, 16, 32 and 64 sync gathers of one bucket
  /// shape (4 bf16 params of a multiple of 8 * W elements); per gather, the slope of the step
  /// time over the gathers, without and with each gather's shard copied from pinned memory first.
  struct PatternPoint {
    double shard_bytes = 0;            ///< one rank's shard: what an offloaded gather copies
    double bytes = 0;                  ///< W * shard bytes, as the timeline costs the gather
    std::vector<double> gather_ns;     ///< per gather, one value per repetition
    std::vector<double> offloaded_ns;  ///< per copy + gather, one value per repetition
    std::vector<double> step_ns;       ///< the plain fit's intercept, one value per repetition
  };
  std::vector<PatternPoint> pattern;  ///< shards of 64 B, 512 B and 4 KiB
  /// What the copy adds to a gather in that pattern at the 64-byte shard, the median over the
  /// repetitions of offloaded_ns - gather_ns: the calibration's h2d.small_copy.
  double pattern_small_copy_ns = 0;
  /// Copies of one 16 MiB shard back to back on h2d, per copy: alone, and each followed by its
  /// bucket's gather on comm (a copy beside the previous gather, as a prefetching replay runs).
  double h2d_pipelined_bytes = 0;
  double h2d_pipelined_ns = 0;
  double h2d_beside_gather_ns = 0;
  /// Those 16 MiB shards' copies, their buckets' gathers and compute stand-ins overlapping, per
  /// op of a chain (each op waits for compute's point, compute waits for what it issued).
  struct Overlap {
    double copy_ns = 0;              ///< a copy alone (compute waits for it)
    double gather_ns = 0;            ///< a gather alone
    double copy_and_gather_ns = 0;   ///< a copy and another bucket's gather side by side
    double spin_beside_ns = 0;       ///< the long compute kernel's spin (longer than the copy)
    double spin_ns = 0;              ///< that kernel alone
    double spin_beside_copy_ns = 0;  ///< a copy beside it, then compute waits for the copy
    double short_spin_ns = 0;        ///< the short kernel's spin (shorter than copy or gather)
    double copy_beside_short_spin_ns = 0;    ///< a copy beside it, then the wait
    double gather_beside_short_spin_ns = 0;  ///< a gather beside it, then the wait
  };
  Overlap overlap;
  /// 16 MiB shards' copies in a synthetic prefetching replay run by run_replay (copies back to
  /// back on h2d, each issued at compute's point, gathers and compute kernels beside them): per
  /// copy, the slope of step time over 2 to 8 copies, one value per repetition, and their median.
  double prefetch_copy_bytes = 0;
  std::vector<double> prefetch_copy_repeats_ns;
  double prefetch_copy_ns = 0;
};

/// Measures ReplayCosts for gathers over `world` simulated ranks' shards on the current GPU.
ReplayCosts measure_replay_costs(std::uint32_t world);

struct ReplayConfig {
  int repeats = 15;
  int warmup = 2;
  double spin_gap_ns = -1;   ///< < 0: measure
  bool reduce_edges = true;  ///< leave out implied dependencies (replay_deps.h)
  /// A compute kernel this long before the first step: a graph's launch hands its nodes to the
  /// GPU as it runs, and without a lead the first step's tiny ops wait for that hand-over.
  std::uint64_t lead_in_ns = 50'000;
  /// Every compute kernel writes the global timer at its start and end (a per-op trace to set
  /// beside the simulator's timeline; it adds no node to the graph).
  bool trace_compute = false;
};

/// One compute kernel of a traced replay: the median over the timed launches of its start and
/// end, in ns after the lead-in kernel's end (the graph's time zero).
struct ReplayComputeTime {
  std::uint32_t op = 0;  ///< index of its compute op in the schedule
  double start_ns = 0;
  double end_ns = 0;
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
  std::vector<ReplayComputeTime> compute_trace;  ///< with ReplayConfig::trace_compute
};

/// Builds the schedule as one CUDA graph (streams compute, comm, h2d, and the timing marks off
/// compute's chain) and runs it `warmup` + `repeats` times. Fits nothing: the prediction to
/// compare with is the schedule's own (the simulator's) step times.
ReplayMeasurement run_replay(const ReplaySchedule& schedule, const ReplayConfig& config);

}  // namespace zfetch::gpu
