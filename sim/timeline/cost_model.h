// What each simulated operation costs, in integer nanoseconds (design.md "Time and cost").
#pragma once

#include <cstdint>
#include <vector>

#include "model/scenario.h"
#include "sim/timeline/calibration.h"
#include "trace/event.h"

namespace zfetch::sim {

/// The timeline asks this interface for every duration. Implementations are pure functions
/// of their inputs (same arguments, same ticks), so a run is deterministic.
class CostModel {
 public:
  virtual ~CostModel() = default;
  /// All-gather producing `bytes` (the gathered, padded size: world_size * shard bytes), of which
  /// `odd_bytes` belong to odd params (odd_param()).
  [[nodiscard]] virtual Tick all_gather(int64_t bytes, int64_t odd_bytes,
                                        int64_t world_size) const = 0;
  /// Reduce-scatter of `bytes` of gradients (the full, padded size) over `world_size` ranks.
  [[nodiscard]] virtual Tick reduce_scatter(int64_t bytes, int64_t world_size) const = 0;
  /// Host-to-device copy of `bytes` (offloaded partitions before a gather): alpha + bytes / bw.
  [[nodiscard]] virtual Tick h2d_copy(int64_t bytes) const = 0;
  /// Compute of one call of `module` in `phase` (Fwd, Eval, Recompute or Bwd).
  [[nodiscard]] virtual Tick compute(model::ModuleIndex module, trace::Phase phase) const = 0;
  /// Fixed cost at the start of each optimizer step, on the compute stream.
  [[nodiscard]] virtual Tick step_fixed() const = 0;
};

/// Whether a param of `numel` elements of `element_bytes` is odd over `world_size` ranks: its
/// rank slices (numel / W elements each) are not whole 16-byte vectors, which the replay's gather
/// copies by slower paths (allgather.odd_points).
bool odd_param(int64_t numel, int64_t element_bytes, int64_t world_size);

/// Time to move `bytes` at `bytes_per_s`, rounded to the nearest ns (halves up); 0 when the
/// bandwidth is 0 or less (not modelled). Exact integer arithmetic (128-bit intermediate).
Tick transfer_ns(int64_t bytes, int64_t bytes_per_s);

/// Cost of one host-to-device copy of `bytes`: alpha_ns + bytes / bandwidth (transfer_ns), the
/// fixed cost of a dependent pinned cudaMemcpyAsync plus its transfer; 0 for no bytes (no copy).
Tick h2d_copy_ns(Tick alpha_ns, int64_t bytes, int64_t bytes_per_s);

/// The host-to-device copy of `bytes` with `calibration`'s constants: h2d_copy_ns, except below
/// the line's first measured size when the file has a small copy, where the cost is interpolated
/// between the small copy (flat below it) and the line at that size.
Tick h2d_copy_ns(const Calibration& calibration, int64_t bytes);

/// Cost of a ring-style collective in the nccl-tests bus-bandwidth model:
///   t = alpha + ((N-1)/N) * B / busbw
/// NVIDIA/nccl-tests doc/PERFORMANCE.md defines busbw = algbw * (N-1)/N for AllGather and
/// ReduceScatter (algbw = B / t, B the size of the full buffer), so that busbw is comparable
/// to the link peak whatever N is. Inverting gives the formula above. N <= 1 costs nothing:
/// DeepSpeed skips the collective when the partition group has one rank (semantics 4.6).
///
/// A calibration with a measured curve (CollectiveCalibration::curve) is interpolated instead:
/// linearly between the two measured sizes around `bytes` (the first or last segment extended
/// beyond them, never below 0), whatever N > 1 is: the curve was timed at the file's world size.
Tick collective_ns(const CollectiveCalibration& c, int64_t bytes, int64_t world_size);

/// An all-gather of `bytes` of which `odd_bytes` are odd params': collective_ns, plus, when the
/// calibration has an odd curve, the odd share of the two curves' difference:
///   t = curve(B) + (odd_curve(B) - curve(B)) * odd_bytes / B   (rounded once, never below 0).
Tick gather_ns(const CollectiveCalibration& c, int64_t bytes, int64_t odd_bytes,
               int64_t world_size);

/// The analytical model: collective times from a Calibration, compute times from the
/// scenario (ModuleSpec::compute_us, or derived from parameter counts and tokens).
///
/// Compute of one call, per phase (fwd, eval, recompute: x1; bwd: x2):
///   compute_us given: compute_us * 1000 ns
///   class *Embedding (a lookup): tokens * row bytes / d2d copy bandwidth
///   class *LayerNorm, *RMSNorm (elementwise): 2 * tokens * row bytes / d2d copy bandwidth
///   otherwise (a matmul): 2 * numel * tokens * 1e9 / flops_per_s ns  (rounded once)
/// (row bytes: the last dimension of the module's first param, in its dtype; docs/timeline.md).
/// where numel counts the module's own parameters (its whole subtree for a z3 leaf, whose
/// children have no hooks) and tokens = timing.tokens_per_micro_batch, or
/// train_micro_batch_size_per_gpu when that is 0.
class AnalyticalCostModel final : public CostModel {
 public:
  /// Precomputes every module's compute time, so compute() is a table lookup.
  AnalyticalCostModel(const model::Scenario& scenario, const Calibration& calibration);

  [[nodiscard]] Tick all_gather(int64_t bytes, int64_t odd_bytes,
                                int64_t world_size) const override;
  [[nodiscard]] Tick reduce_scatter(int64_t bytes, int64_t world_size) const override;
  [[nodiscard]] Tick h2d_copy(int64_t bytes) const override;
  [[nodiscard]] Tick compute(model::ModuleIndex module, trace::Phase phase) const override;
  [[nodiscard]] Tick step_fixed() const override { return calibration_.step_fixed_ns; }

  [[nodiscard]] const Calibration& calibration() const { return calibration_; }

 private:
  Calibration calibration_;
  std::vector<Tick> forward_ns_;  ///< per module, one forward call
};

}  // namespace zfetch::sim
