// ZenFlow's transposed parameter storage: which hooks flip a param's layout, and whether a
// module computes with a param in compute layout (semantics section 6).
#pragma once

#include <optional>
#include <span>

#include "model/scenario.h"
#include "sim/emitter.h"
#include "sim/simulator.h"
#include "sim/state.h"

namespace zfetch::sim {

class ZenflowLayout {
 public:
  ZenflowLayout(const model::Scenario& scenario, ParamState& params, const ModuleState& modules,
                Emitter& emitter, Discovery discovery)
      : scenario_(scenario),
        params_(params),
        modules_(modules),
        emitter_(emitter),
        discovery_(discovery) {}

  /// The transposes of `m`'s pre-hook (`to_compute`) or post-hook over its fetch list `params`;
  /// nothing without ZenFlow.
  void transpose(ModuleIndex m, std::span<const ParamIndex> params, bool to_compute);
  /// The first own param of `m` still in storage layout, if any: computing with it is the
  /// layout defect.
  [[nodiscard]] std::optional<ParamIndex> param_in_storage_layout(ModuleIndex m) const;

 private:
  const model::Scenario& scenario_;
  ParamState& params_;
  const ModuleState& modules_;
  Emitter& emitter_;
  Discovery discovery_;
};

}  // namespace zfetch::sim
