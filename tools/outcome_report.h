// Rendering a simulation outcome for people (text) and for programs (one JSON object).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/scenario.h"
#include "sim/simulator.h"

namespace zfetch::tools {

/// The text `zfetch run` prints: outcome line, DeepSpeed's message, the explanation; the
/// outcome and headings in colour when `colour` (a terminal).
std::string outcome_text(const model::Scenario& scenario, sim::Discovery discovery,
                         const sim::Outcome& outcome, bool colour);

/// The same as one JSON object (`zfetch run --json`).
nlohmann::ordered_json outcome_json(const model::Scenario& scenario, sim::Discovery discovery,
                                    const sim::Outcome& outcome);

/// "fetch-queue-mismatch in the recompute of 'adapter' at trace step 6 ..." (one line).
std::string outcome_summary(const model::Scenario& scenario, const sim::Outcome& outcome);

}  // namespace zfetch::tools
