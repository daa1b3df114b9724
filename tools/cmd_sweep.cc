// zfetch sweep SCENARIO --set KEY=V1,V2 ... | --bisect KEY=LO..HI: config sweeps with timing.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "model/config_override.h"
#include "sim/explore/sweep.h"
#include "tools/commands.h"
#include "tools/scenario_input.h"

namespace zfetch::tools {
namespace {

struct SweepCliOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::string bisect;
  std::string discovery = "resident-skip";
  unsigned jobs = 0;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "command line: error: %s\n", message.c_str());
  return kExitBadInput;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) {
      return parts;
    }
    begin = end + 1;
  }
}

std::string outcome_cell(const sim::SweepPoint& p) {
  if (!p.error.empty()) {
    return "error: " + p.error;
  }
  return std::string(format_as(p.outcome.kind));
}

int run_bisect(const model::Scenario& scenario, const SweepCliOptions& options,
               const sim::SweepOptions& sweep_options) {
  const size_t eq = options.bisect.find('=');
  const size_t dots = options.bisect.find("..");
  if (eq == std::string::npos || dots == std::string::npos || dots < eq) {
    return usage_error("expected --bisect KEY=LO..HI, got '" + options.bisect + "'");
  }
  const std::string key = options.bisect.substr(0, eq);
  const std::string lo_text = options.bisect.substr(eq + 1, dots - eq - 1);
  const std::string hi_text = options.bisect.substr(dots + 2);
  const auto lo = model::parse_config_integer(lo_text);
  const auto hi = model::parse_config_integer(hi_text);
  if (!lo || !hi) {
    return usage_error("expected integers in --bisect " + key + "=LO..HI, got '" + lo_text + ".." +
                       hi_text + "'");
  }
  model::Scenario probe = scenario;
  if (auto error = model::set_config_value(probe, key, lo_text)) {
    return usage_error(*error);
  }
  const sim::BisectResult r = sim::bisect(scenario, key, *lo, *hi, sweep_options);
  if (!r.error.empty()) {
    return usage_error(r.error);
  }
  const std::vector<sim::SweepAxis> axes = {{key, {}}};
  std::fputs(sim::format_sweep_table(axes, {r.below_point, r.above_point}).c_str(), stdout);
  if (r.changed) {
    std::printf("# boundary: %s=%lld gives %s, %s=%lld gives %s (%d runs)\n", key.c_str(),
                static_cast<long long>(r.below), outcome_cell(r.below_point).c_str(), key.c_str(),
                static_cast<long long>(r.above), outcome_cell(r.above_point).c_str(), r.runs);
  } else {
    std::printf("# no change: %s gives %s on %lld..%lld (%d runs)\n", key.c_str(),
                outcome_cell(r.below_point).c_str(), static_cast<long long>(r.below),
                static_cast<long long>(r.above), r.runs);
  }
  return kExitOk;
}

int run(const SweepCliOptions& options) {
  const std::optional<sim::Discovery> discovery = sim::parse_discovery(options.discovery);
  if (!discovery) {
    return usage_error("unknown discovery policy '" + options.discovery +
                       "'; valid values are: resident-skip, residency-independent");
  }
  if (options.sets.empty() == options.bisect.empty()) {
    return usage_error("expected either --set KEY=V1,V2,... or --bisect KEY=LO..HI");
  }
  std::vector<sim::SweepAxis> axes;
  for (const std::string& set : options.sets) {
    const size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == set.size()) {
      return usage_error("expected --set KEY=V1,V2,..., got '" + set + "'");
    }
    axes.push_back({set.substr(0, eq), split(set.substr(eq + 1), ',')});
  }
  const std::optional<model::Scenario> scenario = load_or_report(options.scenario);
  if (!scenario) {
    return kExitBadInput;
  }
  // Check every key and value once, before spending any simulation on them.
  for (const sim::SweepAxis& axis : axes) {
    for (const std::string& value : axis.values) {
      model::Scenario probe = *scenario;
      if (auto error = model::set_config_value(probe, axis.key, value)) {
        return usage_error(*error);
      }
    }
  }
  sim::SweepOptions sweep_options;
  sweep_options.simulator.discovery = *discovery;
  sweep_options.jobs =
      options.jobs > 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  if (!options.bisect.empty()) {
    return run_bisect(*scenario, options, sweep_options);
  }
  const std::vector<sim::SweepPoint> points = sim::run_sweep(*scenario, axes, sweep_options);
  std::fputs(sim::format_sweep_table(axes, points).c_str(), stdout);
  return kExitOk;
}

}  // namespace

void setup_sweep(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<SweepCliOptions>();
  sub.add_option("scenario", options->scenario, "scenario file (.yaml)")->required();
  sub.add_option("--set", options->sets,
                 "KEY=V1,V2,...: values of a config key (repeat for a grid; keys: "
                 "stage3_prefetch_bucket_size, stage3_max_live_parameters, "
                 "stage3_max_reuse_distance, stage3_param_persistence_threshold, "
                 "offload_param.device, world_size, ...)");
  sub.add_option("--bisect", options->bisect,
                 "KEY=LO..HI: find the integer value where the outcome changes");
  sub.add_option("--discovery", options->discovery,
                 "external-access discovery: resident-skip or residency-independent");
  sub.add_option("--jobs,-j", options->jobs, "worker threads (default: all cores)");
  sub.callback([options, &action] { action = [options] { return run(*options); }; });
}

}  // namespace zfetch::tools
