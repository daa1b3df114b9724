// Loading a scenario and reading the policy for a command: problems are rendered to stderr.
#pragma once

#include <optional>
#include <string>

#include "model/scenario.h"

namespace zfetch::tools {

/// The scenario at `path`, or nullopt after printing every diagnostic to stderr.
std::optional<model::Scenario> load_or_report(const std::string& path);

/// The discovery policy named `name` (a `--discovery` value), or nullopt after printing the
/// valid names to stderr.
std::optional<model::Discovery> discovery_or_report(const std::string& name);

}  // namespace zfetch::tools
