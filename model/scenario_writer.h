// Writing a Scenario back as a readable scenario file (YAML) that loads to the same scenario.
#pragma once

#include <string>

#include "model/scenario.h"

namespace zfetch::model {

/// The scenario as YAML in the layout of docs/scenario-format.md: the module tree nested, the
/// ds_config inline (a `deepspeed_config:` file is written out in full) with only the keys
/// that differ from DeepSpeed's defaults, programs, schedule and expectations. Loading the text
/// with parse_scenario_text gives a scenario that simulates identically (the fuzzer's round-trip
/// oracle checks it). Deterministic: the same scenario gives the same bytes.
std::string write_scenario_yaml(const Scenario& scenario);

/// A `when:` condition as the file writes it: `{micro_step: [0, 1, 3]}`.
std::string condition_text(const Condition& when);

}  // namespace zfetch::model
