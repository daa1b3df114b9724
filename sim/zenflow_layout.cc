// ZenFlow's transposed storage (semantics section 6).
#include "sim/zenflow_layout.h"

#include <algorithm>

namespace zfetch::sim {

void ZenflowLayout::transpose(ModuleIndex m, std::span<const ParamIndex> params, bool to_compute) {
  if (!scenario_.zenflow) {
    return;
  }
  const int64_t id = modules_.ds_id[m];
  for (ParamIndex p : params) {
    // `data.t()` of a partitioned param's 0-element placeholder changes nothing; 1-D params
    // are never transposed.
    if (!params_.multi_dim[p] || params_.status[p] != Status::Available) {
      continue;
    }
    if (discovery_ == Discovery::ResidentSkip) {
      params_.compute_layout[p] ^= 1;  // old hooks: every pre- and post-hook flips
    } else {
      // [PR] semantics 6, fixed hooks: only the sole consumer flips (to compute layout before,
      // back to storage after); [I] the recompute owner added by attribution is not a consumer
      // in the transpose sense.
      const IdSet& consumers = params_.consumers[p];
      const bool sole = consumers.contains(id) &&
                        std::all_of(consumers.ids().begin(), consumers.ids().end(), [&](int64_t c) {
                          return c == id || c == params_.attributed_owner[p];
                        });
      if (!sole || params_.compute_layout[p] == (to_compute ? 1 : 0)) {
        continue;
      }
      params_.compute_layout[p] = to_compute ? 1 : 0;
    }
    emitter_.emit(trace::EventKind::Transpose, m, p, -1, -1, Status::None);
  }
}

std::optional<ParamIndex> ZenflowLayout::param_in_storage_layout(ModuleIndex m) const {
  if (!scenario_.zenflow) {
    return std::nullopt;
  }
  for (ParamIndex p : modules_.own_params[m]) {
    if (params_.multi_dim[p] && !params_.compute_layout[p]) {
      return p;
    }
  }
  return std::nullopt;
}

}  // namespace zfetch::sim
