// Loading a scenario and reading the policy for a command: problems are rendered to stderr.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "model/scenario.h"

namespace zfetch::tools {

/// The scenario at `path` with each `KEY=VALUE` of `overrides` applied (`--set`, the keys of
/// model::set_config_value), or nullopt after printing every diagnostic to stderr.
std::optional<model::Scenario> load_or_report(const std::string& path,
                                              std::span<const std::string> overrides = {});

/// The ds_config "auto" values and what they were filled with, one indented line each;
/// empty when there are none.
std::string resolved_auto_text(const model::Scenario& scenario);

/// The discovery policy named `name` (a `--discovery` value), or nullopt after printing the
/// valid names to stderr.
std::optional<model::Discovery> discovery_or_report(const std::string& name);

}  // namespace zfetch::tools
