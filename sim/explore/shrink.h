// Delta debugging of a failing scenario down to a small one that fails the same way.
#pragma once

#include <functional>

#include "model/scenario.h"

namespace zfetch::sim {

struct ShrinkResult {
  model::Scenario scenario;  ///< the smallest scenario found (loaded from its own YAML)
  int attempts = 0;          ///< candidates tried
  int accepted = 0;          ///< candidates kept
};

/// Greedy delta debugging (Zeller and Hildebrandt, "Simplifying and isolating failure-inducing
/// input", TSE 2002, at the granularity of scenario parts): repeatedly tries to remove schedule
/// items, operations, modules (whole subtrees), parameters, `when` conditions and ties, to
/// unwrap checkpoint and repeat regions, to reset config keys to DeepSpeed's defaults and to
/// lower sizes, counts and the world size; keeps a candidate when it is a valid scenario (its
/// YAML loads) and `still_fails` holds for it. Stops at a fixpoint or after `max_attempts`
/// candidates. Deterministic.
ShrinkResult shrink_scenario(const model::Scenario& failing,
                             const std::function<bool(const model::Scenario&)>& still_fails,
                             int max_attempts = 5000);

/// Modules and operations (nested ones included), the size measure of acceptance 1.
struct ScenarioSize {
  size_t modules = 0;
  size_t operations = 0;
};
ScenarioSize scenario_size(const model::Scenario& scenario);

}  // namespace zfetch::sim
