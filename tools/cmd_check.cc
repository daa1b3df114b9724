// zfetch check FILES...: run each scenario under each policy of its expect block.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sim/simulator.h"
#include "tools/cli_numbers.h"
#include "tools/commands.h"
#include "tools/outcome_report.h"
#include "tools/scenario_input.h"
#include "tools/work_bound.h"
#include "trace/names.h"

namespace zfetch::tools {
namespace {

struct CheckOptions {
  std::vector<std::string> paths;
  std::vector<std::string> sets;
  bool verbose = false;
  uint64_t max_events = kDefaultMaxEvents;
};

// Appends the scenario files below `dir` (not following links to directories, as
// recursive_directory_iterator does not) to `found`; a directory that cannot be listed is an
// error naming it, and sets `unreadable`.
void collect_below(const std::filesystem::path& dir, std::vector<std::string>& found,
                   bool& unreadable) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    std::error_code kind_ec;
    if (entry.is_directory(kind_ec) && !entry.is_symlink(kind_ec)) {
      collect_below(entry.path(), found, unreadable);
      continue;
    }
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file(kind_ec) && (ext == ".yaml" || ext == ".yml")) {
      found.push_back(entry.path().generic_string());
    }
  }
  if (ec) {
    std::fprintf(stderr, "%s: error: cannot read directory: %s\n", dir.generic_string().c_str(),
                 ec.message().c_str());
    unreadable = true;
  }
}

// Scenario files named directly, or found (sorted, recursively) in named directories.
std::vector<std::string> collect(const std::vector<std::string>& paths, bool& unreadable) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    bool unlisted = false;
    collect_below(path, found, unlisted);
    unreadable = unreadable || unlisted;
    if (found.empty() && !unlisted) {
      // A directory named to check with nothing to check is a wrong path, not a pass.
      std::fprintf(stderr, "%s: error: no scenario file (.yaml, .yml) in this directory\n",
                   path.c_str());
      unreadable = true;
    }
    std::sort(found.begin(), found.end());  // directory order is not deterministic
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

// Every difference between what the expect block says and what happened.
std::vector<std::string> differences(const model::Scenario& scenario,
                                     const model::Expectation& want, const sim::Outcome& got) {
  std::vector<std::string> diffs;
  if (want.outcome != got.kind) {
    diffs.push_back(fmt::format("outcome: expected {}, got {}", want.outcome, got.kind));
  }
  if (want.invalidations && *want.invalidations != got.invalidations) {
    diffs.push_back(
        fmt::format("invalidations: expected {}, got {}", *want.invalidations, got.invalidations));
  }
  const sim::Failure* f = got.failure ? &*got.failure : nullptr;
  auto field = [&](const char* name, bool present, const std::string& want_value,
                   const std::string& got_value) {
    if (present && want_value != got_value) {
      diffs.push_back(fmt::format("{}: expected {}, got {}", name, want_value, got_value));
    }
  };
  const std::string none = "(none)";
  field("phase", want.phase.has_value(), want.phase ? std::string(format_as(*want.phase)) : "",
        f ? std::string(format_as(f->phase)) : none);
  field("module", want.module.has_value(), fmt::format("'{}'", want.module.value_or("")),
        f && f->module != model::kNone
            ? fmt::format("'{}'", scenario.modules[f->module].qualified_name)
            : none);
  field("step", want.step.has_value(), std::to_string(want.step.value_or(0)),
        f ? std::to_string(f->trace_step) : none);
  field("micro_step", want.micro_step.has_value(), std::to_string(want.micro_step.value_or(0)),
        f ? std::to_string(f->micro_step) : none);
  field("engine", want.engine.has_value(), std::to_string(want.engine.value_or(0)),
        f ? std::to_string(f->engine) : none);
  return diffs;
}

int check(const CheckOptions& options) {
  int passed = 0;
  int failed = 0;
  bool bad_input = false;
  for (const std::string& file : collect(options.paths, bad_input)) {
    const std::optional<model::Scenario> scenario = load_or_report(file, options.sets);
    if (!scenario) {
      bad_input = true;
      ++failed;
      continue;
    }
    if (scenario->expectations.empty()) {
      std::printf("FAIL %s: no expect block\n", file.c_str());
      ++failed;
      continue;
    }
    if (const uint64_t planned = planned_operations(*scenario); planned > options.max_events) {
      std::fprintf(stderr, "%s\n", planned_work_message(file, planned, options.max_events).c_str());
      bad_input = true;
      ++failed;
      continue;
    }
    for (const model::PolicyExpectation& expectation : scenario->expectations) {
      sim::Options sim_options;
      sim_options.discovery = expectation.policy;
      const std::string policy(format_as(expectation.policy));
      trace::NullSink null_sink;
      const std::optional<sim::Outcome> simulated =
          simulate_within_bound(*scenario, sim_options, null_sink, options.max_events, file);
      if (!simulated) {
        bad_input = true;
        ++failed;
        continue;
      }
      const sim::Outcome& outcome = *simulated;
      const std::vector<std::string> diffs = differences(*scenario, expectation.expect, outcome);
      const std::string summary = outcome_summary(*scenario, outcome);
      if (diffs.empty()) {
        ++passed;
        if (options.verbose) {
          std::printf("PASS %s [%s]: %s\n", file.c_str(), policy.c_str(), summary.c_str());
        }
      } else {
        ++failed;
        std::printf("FAIL %s [%s]: %s\n", file.c_str(), policy.c_str(), summary.c_str());
        for (const std::string& d : diffs) {
          std::printf("  %s\n", d.c_str());
        }
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  if (bad_input) {
    return kExitBadInput;
  }
  return failed > 0 ? kExitMismatch : kExitOk;
}

}  // namespace

void setup_check(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<CheckOptions>();
  sub.add_option("paths", options->paths, "scenario files or directories (searched for *.yaml)")
      ->required();
  sub.add_option("--max-events", options->max_events,
                 "a run that needs more simulated events is bad input (exit 2)")
      ->capture_default_str()
      ->check(decimal_unsigned());
  sub.add_option("--set", options->sets,
                 "override a config value in every scenario, KEY=VALUE (as `zfetch sweep --set`)")
      ->allow_extra_args(false);
  sub.add_flag("-v,--verbose", options->verbose, "also list the runs that passed");
  sub.callback([&action, options] { action = [options] { return check(*options); }; });
}

}  // namespace zfetch::tools
