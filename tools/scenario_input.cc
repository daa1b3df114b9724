// Loading a scenario for a command, printing diagnostics compiler-style.
#include "tools/scenario_input.h"

#include <cstdio>

#include "model/load.h"
#include "tools/diagnostic_render.h"

namespace zfetch::tools {

std::optional<model::Scenario> load_or_report(const std::string& path) {
  model::LoadResult result = model::load_scenario_file(path);
  for (const model::Diagnostic& diagnostic : result.diagnostics) {
    std::fputs(render_diagnostic(diagnostic).c_str(), stderr);
  }
  return std::move(result.scenario);
}

}  // namespace zfetch::tools
