// The analytical cost model: nccl-tests bus bandwidth for collectives, flops for compute.
#include "sim/timeline/cost_model.h"

#include <string_view>

#include "model/leaves.h"

namespace zfetch::sim {

namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

// 128-bit intermediates keep bytes * 1e9 exact (`__extension__` silences -Wpedantic).
__extension__ typedef __int128 Int128;

// round(num / den) for num >= 0, den > 0, halves rounded up; one rounding per duration. A
// duration beyond Tick saturates at kTickMax (the timeline reports the overflow).
Tick round_div(Int128 num, Int128 den) {
  const Int128 q = (num + den / 2) / den;
  return q > kTickMax ? kTickMax : static_cast<Tick>(q);
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

// What a module computes, from its `class` (docs/timeline.md "Compute"): an embedding looks up one
// row per token, a norm is elementwise over its input, anything else multiplies by its weights.
enum class ComputeKind : uint8_t { Matmul, Lookup, Elementwise };

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) {
    return false;
  }
  for (size_t i = 0; i < suffix.size(); ++i) {
    const char a = s[s.size() - suffix.size() + i];
    const char b = suffix[i];
    if ((a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) != (b >= 'A' && b <= 'Z' ? b - 'A' + 'a' : b)) {
      return false;
    }
  }
  return true;
}

ComputeKind compute_kind(const model::ModuleSpec& spec) {
  if (ends_with_ci(spec.class_name, "Embedding")) {
    return ComputeKind::Lookup;
  }
  if (ends_with_ci(spec.class_name, "LayerNorm") || ends_with_ci(spec.class_name, "RMSNorm")) {
    return ComputeKind::Elementwise;
  }
  return ComputeKind::Matmul;
}

// Bytes one forward of a lookup or elementwise module writes: per token, one row of its first
// param (the last dimension: an embedding's [vocab, hidden] weight gives hidden elements, a
// norm's [hidden] weight too), in that param's dtype.
int64_t row_bytes_per_token(const model::Scenario& scenario, const model::ModuleSpec& spec) {
  if (spec.params.empty()) {
    return 0;
  }
  const model::ParamSpec& p = scenario.params[spec.params.front()];
  const int64_t row = p.shape.empty() ? p.numel : p.shape.back();
  return row * model::dtype_bytes(p.dtype);
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
  if (c.curve.size() >= 2) {
    // The segment holding `bytes` (the first or last one extended beyond the measured range).
    size_t i = 1;
    while (i + 1 < c.curve.size() && c.curve[i].bytes < bytes) {
      ++i;
    }
    const CollectiveCalibration::Point& a = c.curve[i - 1];
    const CollectiveCalibration::Point& b = c.curve[i];
    const Int128 rise = static_cast<Int128>(b.time_ns - a.time_ns) * (bytes - a.bytes);
    const Int128 run = b.bytes - a.bytes;
    // round(rise / run) for either sign, halves up: floor((rise + run / 2) / run).
    const Int128 num = rise + run / 2;
    const Int128 step = num >= 0 ? num / run : -((-num + run - 1) / run);
    const Int128 t = a.time_ns + step;
    return t <= 0 ? 0 : t > kTickMax ? kTickMax : static_cast<Tick>(t);
  }
  if (c.busbw_bytes_per_s <= 0) {
    return c.alpha_ns;
  }
  // ((N-1)/N) * B / busbw in ns, with one rounding: (N-1) * B * 1e9 / (N * busbw).
  const Int128 num = static_cast<Int128>(world_size - 1) * bytes * kNsPerSecond;
  const Int128 den = static_cast<Int128>(world_size) * c.busbw_bytes_per_s;
  return saturating_add(c.alpha_ns, round_div(num, den));
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
    const ComputeKind kind = compute_kind(spec);
    if (spec.compute_us >= 0) {
      forward_ns_[m] = round_div(static_cast<Int128>(spec.compute_us) * 1000, 1);
    } else if (kind != ComputeKind::Matmul) {
      // Memory-bound: the output rows move at the device's copy bandwidth (bytes counted once,
      // as d2d_copy_GBps is); an elementwise module also reads its input, as many bytes again.
      const int64_t copy = calibration_.d2d_bytes_per_s > 0 ? calibration_.d2d_bytes_per_s
                                                            : kDefaultCopyBytesPerSecond;
      const Int128 bytes = static_cast<Int128>(tokens) * row_bytes_per_token(scenario, spec) *
                           (kind == ComputeKind::Elementwise ? 2 : 1);
      forward_ns_[m] = bytes <= 0 ? 0 : round_div(bytes * kNsPerSecond, copy);
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
  return saturating_add(alpha_ns, transfer_ns(bytes, bytes_per_s));
}

Tick AnalyticalCostModel::h2d_copy(int64_t bytes) const {
  return h2d_copy_ns(calibration_.h2d_alpha_ns, bytes, calibration_.h2d_bytes_per_s);
}

Tick AnalyticalCostModel::compute(model::ModuleIndex module, trace::Phase phase) const {
  if (module >= forward_ns_.size()) {
    return 0;
  }
  // Backward computes input and weight gradients: twice the forward's flops.
  const Tick forward = forward_ns_[module];
  return phase == trace::Phase::Bwd ? saturating_add(forward, forward) : forward;
}

}  // namespace zfetch::sim
