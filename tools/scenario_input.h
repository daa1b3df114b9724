// Loading a scenario for a command: diagnostics are rendered to stderr.
#pragma once

#include <optional>
#include <string>

#include "model/scenario.h"

namespace zfetch::tools {

/// The scenario at `path`, or nullopt after printing every diagnostic to stderr.
std::optional<model::Scenario> load_or_report(const std::string& path);

}  // namespace zfetch::tools
