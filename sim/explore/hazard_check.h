// Latent hazards, confirmed: re-simulates a scenario under the changes that move a parameter's
// residency (prefetching off, a resume, an emptied partition cache) to find the ones under
// which an undiscovered external access (Outcome::hazards) makes the run fail.
#pragma once

#include <string>
#include <vector>

#include "model/scenario.h"
#include "sim/simulator.h"

namespace zfetch::sim {

/// One change of the scenario and how the re-simulated run ended.
struct HazardChange {
  std::string change;  ///< what was changed, in the scenario's own words
  Outcome outcome;     ///< of the changed scenario, same discovery policy
};

/// The changes that apply to `scenario` (a change it already has is skipped), each
/// re-simulated without a trace, in a fixed order. Deterministic.
std::vector<HazardChange> resimulate_hazard_changes(const model::Scenario& scenario,
                                                    const Options& options);

}  // namespace zfetch::sim
