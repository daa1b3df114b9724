// Loading a scenario and reading the policy for a command, printing problems compiler-style.
#include "tools/scenario_input.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "diag/render.h"
#include "model/config_override.h"
#include "model/load.h"
#include "tools/input_kind.h"

namespace zfetch::tools {

std::optional<model::Scenario> load_or_report(const std::string& path,
                                              std::span<const std::string> overrides) {
  if (is_trace_file(path)) {
    std::fprintf(stderr,
                 "%s: error: this is a zfetch trace, not a scenario (check it with `zfetch "
                 "validate`, compare it with `zfetch diff`)\n",
                 path.c_str());
    return std::nullopt;
  }
  model::LoadResult result = model::load_scenario_file(path);
  for (const model::Diagnostic& diagnostic : result.diagnostics) {
    std::fputs(diag::render(diagnostic).c_str(), stderr);
  }
  for (const model::Diagnostic& warning : result.warnings) {
    std::fputs(diag::render(warning).c_str(), stderr);
  }
  if (!result.scenario) {
    return std::nullopt;
  }
  std::vector<std::string_view> keys;
  for (const std::string& set : overrides) {
    const size_t eq = set.find('=');
    std::optional<std::string> error;
    const std::string_view set_key =
        model::config_key_name(std::string_view(set).substr(0, std::min(eq, set.size())));
    if (eq == std::string::npos || eq == 0) {
      error = "expected KEY=VALUE";
    } else if (std::find(keys.begin(), keys.end(), set_key) != keys.end()) {
      error = "the key is given twice";
    } else {
      keys.push_back(set_key);
      error = model::set_config_value(*result.scenario, std::string_view(set).substr(0, eq),
                                      std::string_view(set).substr(eq + 1));
    }
    if (error) {
      std::fputs(fmt::format("command line: error: --set '{}': {}\n", set, *error).c_str(), stderr);
      return std::nullopt;
    }
    // A value set on the command line is no longer the "auto" one.
    const std::string key = set.substr(0, eq);
    std::erase_if(result.scenario->config.resolved_auto, [&](const model::ResolvedAuto& r) {
      return r.key == key || r.key == "zero_optimization." + key;
    });
  }
  return std::move(result.scenario);
}

std::optional<model::Discovery> discovery_or_report(const std::string& name) {
  const std::optional<model::Discovery> discovery = model::kDiscoveryNames.find(name);
  if (!discovery) {
    fmt::print(stderr, "command line: error: unknown discovery policy '{}'; valid values are: {}\n",
               name, fmt::join(model::kDiscoveryNames.names(), ", "));
  }
  return discovery;
}

std::string resolved_auto_text(const model::Scenario& scenario) {
  std::string text;
  for (const model::ResolvedAuto& resolved : scenario.config.resolved_auto) {
    text += fmt::format("  {} = {} ({})\n", resolved.key, resolved.value, resolved.rule);
  }
  return text;
}

}  // namespace zfetch::tools
