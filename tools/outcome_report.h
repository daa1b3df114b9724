// Rendering a simulation outcome for people (text) and for programs (one JSON object).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/scenario.h"
#include "sim/explore/hazard_check.h"
#include "sim/explore/remedies.h"
#include "sim/simulator.h"

namespace zfetch::tools {

/// The text `zfetch run` prints: outcome line, DeepSpeed's message, the explanation; the
/// outcome and headings in colour when `colour` (a terminal).
std::string outcome_text(const model::Scenario& scenario, sim::Discovery discovery,
                         const sim::Outcome& outcome, bool colour);

/// The same as one JSON object (`zfetch run --json`).
nlohmann::ordered_json outcome_json(const model::Scenario& scenario, sim::Discovery discovery,
                                    const sim::Outcome& outcome);

/// The latent hazards of a run (`outcome.hazards`), each with the re-simulated `changes` whose
/// failure is at its module; "" when there are none.
std::string hazard_text(const model::Scenario& scenario, sim::Discovery discovery,
                        const sim::Outcome& outcome, const std::vector<sim::HazardChange>& changes,
                        bool colour);

/// The same as a JSON array (`hazards` of `zfetch run --json`).
nlohmann::ordered_json hazard_json(const model::Scenario& scenario, const sim::Outcome& outcome,
                                   const std::vector<sim::HazardChange>& changes);

/// The "To avoid it" part of a failure's explanation: the re-simulated remedies, or that none of
/// the changes zfetch tries makes the run pass.
std::string remedy_text(const std::vector<sim::Remedy>& remedies);

/// The same as a JSON array (`remedies` of `zfetch run --json`).
nlohmann::ordered_json remedy_json(const model::Scenario& scenario,
                                   const std::vector<sim::Remedy>& remedies);

/// "fetch-queue-mismatch in the recompute of 'adapter' at trace step 6 ..." (one line).
std::string outcome_summary(const model::Scenario& scenario, const sim::Outcome& outcome);

}  // namespace zfetch::tools
