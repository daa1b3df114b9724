// The analytical cost model: nccl-tests bus bandwidth for collectives, flops for compute.
#include "sim/timeline/cost_model.h"

#include <algorithm>
#include <string_view>

#include "model/leaves.h"
#include "model/partition.h"

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

// round(num / den) for either sign of num, den > 0, halves up: floor((num + den / 2) / den).
Int128 round_div_signed(Int128 num, Int128 den) {
  const Int128 n = num + den / 2;
  return n >= 0 ? n / den : -((-n + den - 1) / den);
}

Tick clamp_tick(Int128 t) {
  return t <= 0 ? 0 : t > kTickMax ? kTickMax : static_cast<Tick>(t);
}

// Linear interpolation of the measured points at `bytes`: between the two measured sizes around
// it, the first or last segment extended beyond the measured range (at least two points).
Int128 interpolate(const std::vector<CollectiveCalibration::Point>& curve, int64_t bytes) {
  size_t i = 1;
  while (i + 1 < curve.size() && curve[i].bytes < bytes) {
    ++i;
  }
  const CollectiveCalibration::Point& a = curve[i - 1];
  const CollectiveCalibration::Point& b = curve[i];
  const Int128 rise = static_cast<Int128>(b.time_ns - a.time_ns) * (bytes - a.bytes);
  return a.time_ns + round_div_signed(rise, b.bytes - a.bytes);
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
    return clamp_tick(interpolate(c.curve, bytes));
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

Tick gather_ns(const CollectiveCalibration& c, int64_t bytes, int64_t odd_bytes,
               int64_t world_size) {
  const Tick aligned = collective_ns(c, bytes, world_size);
  if (aligned == 0 || c.curve.size() < 2 || c.odd_curve.size() < 2 || odd_bytes <= 0) {
    return aligned;
  }
  const Int128 odd = std::min(odd_bytes, bytes);
  const Int128 extra = round_div_signed((interpolate(c.odd_curve, bytes) - aligned) * odd, bytes);
  return clamp_tick(aligned + extra);
}

bool odd_param(int64_t numel, int64_t element_bytes, int64_t world_size) {
  if (element_bytes <= 0 || element_bytes >= 16 || 16 % element_bytes != 0) {
    return false;
  }
  // Rank r's slice starts at r * ceil(numel / W) elements; the last one ends at numel.
  const int64_t vector = 16 / element_bytes;  // elements of one 16-byte vector
  const int64_t slice = model::partition_numel<int64_t>(numel, std::max<int64_t>(1, world_size));
  return numel % vector != 0 || slice % vector != 0;
}

Tick AnalyticalCostModel::all_gather(int64_t bytes, int64_t odd_bytes, int64_t world_size) const {
  return gather_ns(calibration_.allgather, bytes, odd_bytes, world_size);
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

Tick h2d_copy_ns(const Calibration& calibration, int64_t bytes) {
  const Tick line = h2d_copy_ns(calibration.h2d_alpha_ns, bytes, calibration.h2d_bytes_per_s);
  const CollectiveCalibration::Point& small = calibration.h2d_small_copy;
  const int64_t knee = calibration.h2d_line_from_bytes;
  if (line == 0 || small.bytes <= 0 || bytes >= knee) {
    return line;
  }
  if (bytes <= small.bytes) {
    return small.time_ns;
  }
  const CollectiveCalibration::Point at_knee{
      knee, h2d_copy_ns(calibration.h2d_alpha_ns, knee, calibration.h2d_bytes_per_s)};
  return clamp_tick(interpolate({small, at_knee}, bytes));
}

Tick AnalyticalCostModel::h2d_copy(int64_t bytes) const {
  return h2d_copy_ns(calibration_, bytes);
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
