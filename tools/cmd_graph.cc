// zfetch graph SCENARIO: the module tree as Graphviz DOT (render with `dot -Tsvg`); see
// tools/graph_dot.h for what it draws.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/spellcheck.h"
#include "sim/simulator.h"
#include "tools/cli_numbers.h"
#include "tools/commands.h"
#include "tools/graph_dot.h"
#include "tools/scenario_input.h"
#include "tools/work_bound.h"
#include "trace/sink.h"

namespace zfetch::tools {

namespace {

struct GraphCliOptions {
  std::string scenario;
  std::string focus;
  int depth = -1;
  bool no_fold = false;
  bool show_failure = false;
  std::string discovery = "resident-skip";
  uint64_t max_events = kDefaultMaxEvents;
};

int run(const GraphCliOptions& cli) {
  const std::optional<model::Discovery> discovery = discovery_or_report(cli.discovery);
  if (!discovery) {
    return kExitBadInput;
  }
  const std::optional<model::Scenario> scenario = load_or_report(cli.scenario);
  if (!scenario) {
    return kExitBadInput;
  }
  GraphDotOptions options;
  options.depth = cli.depth;
  options.fold = !cli.no_fold;
  if (!cli.focus.empty()) {
    std::vector<std::string_view> names;
    for (model::ModuleIndex m = 0; m < scenario->modules.size(); ++m) {
      const std::string& name = scenario->modules[m].qualified_name;
      if (name == cli.focus) {
        options.focus = m;
      }
      names.push_back(name);
    }
    if (options.focus == model::kNone) {
      std::fprintf(stderr, "command line: error: unknown module '%s' for --focus",
                   cli.focus.c_str());
      if (const auto guess = base::closest_word(cli.focus, names)) {
        std::fprintf(stderr, ", did you mean '%s'?", guess->c_str());
      }
      std::fprintf(stderr, "\n");
      return kExitBadInput;
    }
  }
  if (cli.show_failure) {
    sim::Options sim_options;
    sim_options.discovery = *discovery;
    trace::NullSink null;
    const std::optional<sim::Outcome> outcome =
        simulate_within_bound(*scenario, sim_options, null, cli.max_events, cli.scenario);
    if (!outcome) {
      return kExitBadInput;
    }
    if (outcome->failure && outcome->failure->module != model::kNone) {
      options.failure_module = outcome->failure->module;
      options.failure_text = outcome->failure->message + "\n" + outcome->failure->explanation;
    }
  }
  const std::string dot = render_graph_dot(*scenario, options);
  std::fwrite(dot.data(), 1, dot.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitBadInput;
}

}  // namespace

void setup_graph(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<GraphCliOptions>();
  sub.add_option("scenario", options->scenario, "scenario file (.yaml, .yml, .json)")->required();
  sub.add_option("--focus", options->focus,
                 "MODULE: only its subtree, its ancestors and what its accesses connect it to");
  sub.add_option("--depth", options->depth,
                 "N: levels of children below the root (or the --focus module)")
      ->check(CLI::Range(0, 1'000'000));
  sub.add_flag("--no-fold", options->no_fold,
               "draw every copy of repeated identical subtrees (layers.0 .. layers.31)");
  sub.add_flag("--show-failure", options->show_failure,
               "simulate under --discovery and draw the access that caused the failure in red");
  sub.add_option("--discovery", options->discovery,
                 "policy for --show-failure: resident-skip or residency-independent")
      ->capture_default_str();
  sub.add_option("--max-events", options->max_events,
                 "with --show-failure: stop with exit 2 after this many simulated events")
      ->capture_default_str()
      ->check(decimal_unsigned());
  sub.callback([&action, options] { action = [options] { return run(*options); }; });
}

}  // namespace zfetch::tools
