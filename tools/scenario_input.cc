// Loading a scenario for a command, printing diagnostics compiler-style.
#include "tools/scenario_input.h"

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

}  // namespace zfetch::tools
