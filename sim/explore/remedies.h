// What avoids a failure: each candidate change is applied to the scenario and re-simulated, and
// only the changes under which the run passes are offered (issue #8874's advice, made exact).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/enum_names.h"
#include "model/scenario.h"
#include "sim/simulator.h"

namespace zfetch::sim {

/// One change that was re-simulated and made the run pass.
struct Remedy {
  /// In the order a user can take them: a released DeepSpeed fix, a config key, the model's code.
  enum class Kind : uint8_t { DeepSpeedFix, Config, Code };
  Kind kind = Kind::Code;
  std::string advice;  ///< what to do, one sentence; Python code follows on indented lines
  Outcome outcome;     ///< of the re-simulated run (a pass)
};

/// The kinds' names in `zfetch run --json`.
inline constexpr base::EnumNames<Remedy::Kind::Code> kRemedyKindNames("deepspeed-fix", "config",
                                                                      "code");

/// At most this many re-simulations per failure: one per candidate, and the rounds that widen
/// a registration to the modules that fail next.
inline constexpr int kMaxRemedySimulations = 6;

/// The remedies of `outcome`'s failure that pass when re-simulated, in Remedy::Kind order.
/// Each re-simulation stops (and its candidate is dropped) past `max_events` events. No
/// failure, or none that passes: empty. Deterministic.
std::vector<Remedy> verified_remedies(const model::Scenario& scenario, const Options& options,
                                      const Outcome& outcome, uint64_t max_events);

/// `model.layers[0].attn` for the module `layers.0.attn` (the root is `model`): the Python
/// expression a remedy's code uses.
std::string python_module_path(const model::Scenario& scenario, model::ModuleIndex m);

}  // namespace zfetch::sim
