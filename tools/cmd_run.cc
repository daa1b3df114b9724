// zfetch run SCENARIO: simulate, print the outcome, optionally write the event trace.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "sim/simulator.h"
#include "tools/commands.h"
#include "tools/outcome_report.h"
#include "tools/scenario_input.h"
#include "trace/writer.h"

namespace zfetch::tools {
namespace {

struct RunOptions {
  std::string scenario;
  std::string discovery = "resident-skip";
  std::string trace_path;
  bool json = false;
};

int run(const RunOptions& options) {
  const std::optional<sim::Discovery> discovery = sim::parse_discovery(options.discovery);
  if (!discovery) {
    std::fprintf(stderr,
                 "command line: error: unknown discovery policy '%s'; valid values are: "
                 "resident-skip, residency-independent\n",
                 options.discovery.c_str());
    return kExitBadInput;
  }
  const std::optional<model::Scenario> scenario = load_or_report(options.scenario);
  if (!scenario) {
    return kExitBadInput;
  }
  sim::Options sim_options;
  sim_options.discovery = *discovery;

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(nullptr, &std::fclose);
  std::unique_ptr<trace::TraceWriter> writer;
  trace::NullSink null_sink;
  trace::EventSink* sink = &null_sink;
  if (!options.trace_path.empty()) {
    file.reset(options.trace_path == "-" ? nullptr : std::fopen(options.trace_path.c_str(), "wb"));
    std::FILE* out = options.trace_path == "-" ? stdout : file.get();
    if (out == nullptr) {
      std::fprintf(stderr, "%s: error: cannot write trace: %s\n", options.trace_path.c_str(),
                   std::strerror(errno));
      return kExitBadInput;
    }
    trace::TraceHeader header;
    header.scenario = scenario->name;
    header.world_size = scenario->world_size;
    header.discovery = std::string(format_as(*discovery));
    writer = std::make_unique<trace::TraceWriter>(out, header);
    sink = writer.get();
  }

  const sim::Outcome outcome = sim::simulate(*scenario, sim_options, *sink);
  if (writer && !writer->flush()) {
    std::fprintf(stderr, "%s: error: writing the trace failed\n", options.trace_path.c_str());
    return kExitBadInput;
  }
  if (options.trace_path != "-") {
    if (options.json) {
      std::puts(outcome_json(*scenario, *discovery, outcome).dump(2).c_str());
    } else {
      std::fputs(outcome_text(*scenario, *discovery, outcome).c_str(), stdout);
    }
  }
  return outcome.failure ? kExitMismatch : kExitOk;
}

}  // namespace

void setup_run(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<RunOptions>();
  sub.add_option("scenario", options->scenario, "scenario file (.yaml)")->required();
  sub.add_option("--discovery", options->discovery,
                 "external-access discovery: resident-skip (DeepSpeed <= 0.19.9) or "
                 "residency-independent (PR #8875)")
      ->capture_default_str();
  sub.add_option("--trace", options->trace_path,
                 "write the event trace (JSON Lines; - for stdout)");
  sub.add_flag("--json", options->json, "print the outcome as one JSON object");
  sub.callback([&action, options] { action = [options] { return run(*options); }; });
}

}  // namespace zfetch::tools
