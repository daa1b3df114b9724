// Loading a scenario and reading the policy for a command, printing problems compiler-style.
#include "tools/scenario_input.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>

#include "diag/render.h"
#include "model/load.h"

namespace zfetch::tools {

std::optional<model::Scenario> load_or_report(const std::string& path) {
  model::LoadResult result = model::load_scenario_file(path);
  for (const model::Diagnostic& diagnostic : result.diagnostics) {
    std::fputs(diag::render(diagnostic).c_str(), stderr);
  }
  return std::move(result.scenario);
}

std::optional<model::Discovery> discovery_or_report(const std::string& name) {
  const std::optional<model::Discovery> discovery = model::parse_discovery(name);
  if (!discovery) {
    fmt::print(stderr, "command line: error: unknown discovery policy '{}'; valid values are: {}\n",
               name, fmt::join(model::discovery_names(), ", "));
  }
  return discovery;
}

}  // namespace zfetch::tools
