// The analytical cost model: nccl-tests bus bandwidth for collectives, flops for compute.
#include "sim/timeline/cost_model.h"

#include "model/leaves.h"

namespace zfetch::sim {

namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

// 128-bit intermediates keep bytes * 1e9 exact (`__extension__` silences -Wpedantic).
__extension__ typedef __int128 Int128;

// round(num / den) for num >= 0, den > 0, halves rounded up; one rounding per duration.
Tick round_div(Int128 num, Int128 den) {
  return static_cast<Tick>((num + den / 2) / den);
}

// Sum of numel of `module`'s own params, and of its whole subtree's when `subtree`.
int64_t params_numel(const model::Scenario& scenario, model::ModuleIndex module, bool subtree) {
  const model::ModuleSpec& spec = scenario.modules[module];
  int64_t numel = 0;
  for (model::ParamIndex p : spec.params) {
    numel += scenario.params[p].numel;
  }
  if (subtree) {
    for (model::ModuleIndex child : spec.children) {
      numel += params_numel(scenario, child, true);
    }
  }
  return numel;
}

}  // namespace

Tick transfer_ns(int64_t bytes, int64_t bytes_per_s) {
  if (bytes <= 0 || bytes_per_s <= 0) {
    return 0;
  }
  return round_div(static_cast<Int128>(bytes) * kNsPerSecond, bytes_per_s);
}

Tick collective_ns(const CollectiveCalibration& c, int64_t bytes, int64_t world_size) {
  if (world_size <= 1 || bytes <= 0) {
    return 0;
  }
  if (c.busbw_bytes_per_s <= 0) {
    return c.alpha_ns;
  }
  // ((N-1)/N) * B / busbw in ns, with one rounding: (N-1) * B * 1e9 / (N * busbw).
  const Int128 num = static_cast<Int128>(world_size - 1) * bytes * kNsPerSecond;
  const Int128 den = static_cast<Int128>(world_size) * c.busbw_bytes_per_s;
  return c.alpha_ns + round_div(num, den);
}

AnalyticalCostModel::AnalyticalCostModel(const model::Scenario& scenario,
                                         const Calibration& calibration)
    : calibration_(calibration), forward_ns_(scenario.modules.size(), 0) {
  const int64_t tokens = scenario.timing.tokens_per_micro_batch > 0
                             ? scenario.timing.tokens_per_micro_batch
                             : scenario.config.train_micro_batch_size_per_gpu;
  // A z3 leaf's descendants run inside its hooks, so their compute is the leaf's.
  const std::vector<uint8_t> leaves = model::z3_leaf_modules(scenario);
  for (size_t m = 0; m < scenario.modules.size(); ++m) {
    const model::ModuleSpec& spec = scenario.modules[m];
    if (spec.compute_us >= 0) {
      forward_ns_[m] = spec.compute_us * 1000;
    } else if (calibration_.flops_per_s > 0) {
      // 2 flops (multiply + add) per parameter element per token for a forward.
      const int64_t numel =
          params_numel(scenario, static_cast<model::ModuleIndex>(m), leaves[m] != 0);
      forward_ns_[m] = round_div(static_cast<Int128>(2) * numel * tokens * kNsPerSecond,
                                 calibration_.flops_per_s);
    }
  }
}

Tick AnalyticalCostModel::all_gather(int64_t bytes, int64_t world_size) const {
  return collective_ns(calibration_.allgather, bytes, world_size);
}

Tick AnalyticalCostModel::reduce_scatter(int64_t bytes, int64_t world_size) const {
  return collective_ns(calibration_.reduce_scatter, bytes, world_size);
}

Tick h2d_copy_ns(Tick alpha_ns, int64_t bytes, int64_t bytes_per_s) {
  if (bytes <= 0) {
    return 0;
  }
  return alpha_ns + transfer_ns(bytes, bytes_per_s);
}

Tick AnalyticalCostModel::h2d_copy(int64_t bytes) const {
  return h2d_copy_ns(calibration_.h2d_alpha_ns, bytes, calibration_.h2d_bytes_per_s);
}

Tick AnalyticalCostModel::compute(model::ModuleIndex module, trace::Phase phase) const {
  if (module >= forward_ns_.size()) {
    return 0;
  }
  // Backward computes input and weight gradients: twice the forward's flops.
  return phase == trace::Phase::Bwd ? 2 * forward_ns_[module] : forward_ns_[module];
}

}  // namespace zfetch::sim
