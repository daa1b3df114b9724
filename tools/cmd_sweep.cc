// zfetch sweep SCENARIO --set KEY=V1,V2 ... [--bisect KEY=LO..HI]: config sweeps with timing,
// as a table, JSON or CSV (tools/sweep_output.h).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "model/config_override.h"
#include "sim/explore/sweep.h"
#include "tools/cli_numbers.h"
#include "tools/commands.h"
#include "tools/output_file.h"
#include "tools/scenario_input.h"
#include "tools/sweep_output.h"
#include "tools/sweep_report_html.h"
#include "tools/terminal_colour.h"
#include "tools/work_bound.h"

namespace zfetch::tools {
namespace {

struct SweepCliOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::string bisect;
  std::string discovery = "resident-skip";
  std::string sort;
  std::string report_path;
  unsigned jobs = 0;
  uint64_t max_events = kDefaultMaxEvents;
  bool json = false;
  bool csv = false;
  bool require_pass = false;
  bool allow_fail = false;
};

// The most cells (or bisections) one sweep runs: each is a whole simulation, so a grid of a few
// long --set lists multiplies out to more runs than any machine finishes.
constexpr uint64_t kMaxSweepCells = 100'000;

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

std::string outcome_words(const sim::SweepPoint& p) {
  return p.error.empty() ? std::string(format_as(p.outcome.kind)) : "error: " + p.error;
}

bool write_stdout(const std::string& text) {
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() &&
         std::fflush(stdout) == 0;
}

// Writes the grid's HTML page to `path` (whole or not at all); false after the error is printed.
bool write_report(const std::string& path, const std::string& page) {
  OutputFile out(path);
  if (!out.error().empty()) {
    std::fprintf(stderr, "%s: error: cannot write: %s\n", path.c_str(), out.error().c_str());
    return false;
  }
  std::fwrite(page.data(), 1, page.size(), out.stream());
  return finish_outputs({&out});
}

// The worst status among the reported cells, as an exit code (docs/sweep-format.md): 0 when
// every cell passes, 1 when one failed (0 with --allow-fail), 2 when one could not run.
int cells_exit_code(const SweepCliOptions& options, const std::vector<sim::SweepPoint>& cells) {
  int code = kExitOk;
  for (const sim::SweepPoint& cell : cells) {
    const std::string_view status = cell_status(cell);
    if (status == "error") {
      return kExitBadInput;
    }
    if (status != "pass" && !options.allow_fail) {
      code = kExitMismatch;
    }
  }
  return code;
}

int finish(const std::string& text, int code) {
  if (!write_stdout(text)) {
    std::fprintf(stderr, "zfetch sweep: error: writing the output failed\n");
    return kExitBadInput;
  }
  return code;
}

// Every combination of the --set values, last axis fastest (as sim::run_sweep orders them).
std::vector<std::vector<std::string>> combinations(const std::vector<sim::SweepAxis>& axes) {
  std::vector<std::vector<std::string>> out{{}};
  for (const sim::SweepAxis& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& prefix : out) {
      for (const std::string& value : axis.values) {
        next.push_back(prefix);
        next.back().push_back(value);
      }
    }
    out = std::move(next);
  }
  return out;
}

int run_bisect(const model::Scenario& scenario, const std::vector<sim::SweepAxis>& axes,
               const SweepCliOptions& options, const sim::SweepOptions& sweep_options) {
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
  for (const sim::SweepAxis& axis : axes) {
    if (model::config_key_name(axis.key) == model::config_key_name(key)) {
      return usage_error("'" + key + "' is both bisected and set with --set");
    }
  }
  // One search per combination of the --set values, each on the scenario with them applied.
  std::vector<BisectionReport> searches;
  for (const std::vector<std::string>& values : combinations(axes)) {
    model::Scenario base = scenario;
    for (size_t a = 0; a < axes.size(); ++a) {
      // Checked before any simulation ran (run()).
      (void)model::set_config_value(base, axes[a].key, values[a]);
    }
    BisectionReport report{values, key, *lo, *hi, sim::bisect(base, key, *lo, *hi, sweep_options)};
    if (!report.result.error.empty()) {
      return usage_error(report.result.error);
    }
    report.result.below_point.values.insert(report.result.below_point.values.begin(),
                                            values.begin(), values.end());
    report.result.above_point.values.insert(report.result.above_point.values.begin(),
                                            values.begin(), values.end());
    searches.push_back(std::move(report));
  }
  std::vector<sim::SweepAxis> all_axes = axes;
  all_axes.push_back({key, {}});
  std::vector<sim::SweepPoint> cells;
  for (const BisectionReport& s : searches) {
    cells.push_back(s.result.below_point);
    cells.push_back(s.result.above_point);
  }
  const int code = cells_exit_code(options, cells);
  if (options.json) {
    return finish(bisect_json({&scenario, sweep_options.simulator.discovery}, axes, searches),
                  code);
  }
  if (options.csv) {
    return finish(sweep_csv(all_axes, cells), code);
  }
  std::string text;
  const bool colour = colour_wanted(stdout);
  for (const BisectionReport& s : searches) {
    std::string where;
    for (size_t a = 0; a < axes.size(); ++a) {
      where += (a == 0 ? " with " : ", ") + axes[a].key + "=" + s.fixed_values[a];
    }
    if (!where.empty()) {
      text += "#" + where + "\n";
    }
    text += sweep_table(all_axes, {s.result.below_point, s.result.above_point}, colour);
    const sim::BisectResult& r = s.result;
    text += r.changed ? fmt::format("# boundary: {}={} gives {}, {}={} gives {} ({} runs)\n", key,
                                    r.below, outcome_words(r.below_point), key, r.above,
                                    outcome_words(r.above_point), r.runs)
                      : fmt::format("# no change: {} gives {} on {}..{} ({} runs)\n", key,
                                    outcome_words(r.below_point), r.below, r.above, r.runs);
  }
  return finish(text, code);
}

int run(const SweepCliOptions& options) {
  const std::optional<model::Discovery> discovery = discovery_or_report(options.discovery);
  if (!discovery) {
    return kExitBadInput;
  }
  if (options.sets.empty() && options.bisect.empty()) {
    return usage_error("expected --set KEY=V1,V2,... or --bisect KEY=LO..HI");
  }
  if (options.json && options.csv) {
    return usage_error("--json and --csv exclude each other");
  }
  if (options.require_pass && options.allow_fail) {
    return usage_error("--require-pass and --allow-fail exclude each other");
  }
  if (!options.sort.empty() && !options.bisect.empty()) {
    return usage_error("--sort orders a --set grid; --bisect reports two cells per search");
  }
  if (!options.report_path.empty() && !options.bisect.empty()) {
    return usage_error("--report draws a --set grid; --bisect reports two cells per search");
  }
  if (const std::string clash =
          options.report_path.empty()
              ? std::string()
              : check_outputs_distinct({options.scenario}, {options.report_path});
      !clash.empty()) {
    std::fprintf(stderr, "%s\n", clash.c_str());
    return kExitBadInput;
  }
  std::vector<sim::SweepAxis> axes;
  for (const std::string& set : options.sets) {
    const size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == set.size()) {
      return usage_error("expected --set KEY=V1,V2,..., got '" + set + "'");
    }
    axes.push_back({set.substr(0, eq), split(set.substr(eq + 1), ',')});
    for (size_t a = 0; a + 1 < axes.size(); ++a) {
      if (model::config_key_name(axes[a].key) == model::config_key_name(axes.back().key)) {
        return usage_error("'" + axes.back().key +
                           "' is given twice with --set (give one --set "
                           "with all its values: KEY=V1,V2,...)");
      }
    }
  }
  uint64_t combinations = 1;
  for (const sim::SweepAxis& axis : axes) {
    combinations = axis.values.size() > kMaxSweepCells / combinations
                       ? kMaxSweepCells + 1
                       : combinations * axis.values.size();
  }
  if (combinations > kMaxSweepCells) {
    return usage_error(
        fmt::format("the --set values combine to more than {} cells", kMaxSweepCells));
  }
  const std::optional<model::Scenario> scenario = load_or_report(options.scenario);
  if (!scenario) {
    return kExitBadInput;
  }
  if (const uint64_t planned = planned_operations(*scenario); planned > options.max_events) {
    std::fprintf(stderr, "%s\n",
                 planned_work_message(options.scenario, planned, options.max_events).c_str());
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
  sweep_options.max_events = options.max_events;
  sweep_options.jobs =
      options.jobs > 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  if (!options.bisect.empty()) {
    return run_bisect(*scenario, axes, options, sweep_options);
  }
  std::vector<sim::SweepPoint> points = sim::run_sweep(*scenario, axes, sweep_options);
  if (!options.sort.empty() && !sort_cells(points, options.sort)) {
    return usage_error("unknown --sort key '" + options.sort +
                       "'; valid values are: step_time, exposed_comm, peak_live");
  }
  const int code = cells_exit_code(options, points);
  if (!options.report_path.empty() &&
      !write_report(options.report_path,
                    sweep_report_html({&*scenario, *discovery}, axes, points))) {
    return kExitBadInput;
  }
  if (options.json) {
    return finish(sweep_json({&*scenario, *discovery}, axes, points), code);
  }
  if (options.csv) {
    return finish(sweep_csv(axes, points), code);
  }
  return finish(sweep_table(axes, points, colour_wanted(stdout)), code);
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
                 "KEY=LO..HI: find the integer value where the outcome changes (once per "
                 "combination of the --set values)");
  sub.add_option("--discovery", options->discovery,
                 "external-access discovery: resident-skip or residency-independent");
  sub.add_option("--sort", options->sort,
                 "order cells by step_time, exposed_comm or peak_live (failed cells last)");
  sub.add_option("--report", options->report_path,
                 "also write a self-contained HTML page: the table, and step time and peak "
                 "memory plotted against the swept values, failed cells marked (docs/report.md)");
  sub.add_flag("--json", options->json, "print the results as JSON (docs/sweep-format.md)");
  sub.add_flag("--csv", options->csv, "print the results as CSV (docs/sweep-format.md)");
  sub.add_flag("--require-pass", options->require_pass,
               "exit 1 when a cell fails (the default; kept for older scripts)");
  sub.add_flag("--allow-fail", options->allow_fail,
               "exit 0 when cells fail (DeepSpeed would raise there); a cell that cannot run "
               "still exits 2");
  sub.add_option("--jobs,-j", options->jobs, "worker threads (default: all cores)")
      ->check(decimal_unsigned());
  sub.add_option("--max-events", options->max_events,
                 "a cell whose run needs more simulated events is an error cell (exit 2)")
      ->capture_default_str()
      ->check(decimal_unsigned());
  sub.callback([options, &action] { action = [options] { return run(*options); }; });
}

}  // namespace zfetch::tools
