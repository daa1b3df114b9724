// The per-parameter and per-module state a scenario defines before any engine exists: sizes,
// tied aliases, registration order, which modules get hooks and their param lists.
#pragma once

#include "model/scenario.h"
#include "sim/state.h"

namespace zfetch::sim {

/// Every param NOT_AVAILABLE with no ds_id yet; sizes partitioned over the world size (1.3).
[[nodiscard]] ParamState initial_param_state(const model::Scenario& scenario);
/// Hooks, z3 leaves and param lists (2.1); module ds_ids are given by each engine.
[[nodiscard]] ModuleState initial_module_state(const model::Scenario& scenario,
                                               const ParamState& params);

}  // namespace zfetch::sim
