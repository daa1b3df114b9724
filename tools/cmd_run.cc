// zfetch run SCENARIO: simulate, print the outcome, optionally write the event trace.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diag/render.h"
#ifdef ZFETCH_HAVE_CHAKRA
#  include "sim/export/chakra.h"
#endif
#include "sim/export/chrome_trace.h"
#include "sim/export/replay_schedule.h"
#include "sim/simulator.h"
#include "sim/timeline/calibration.h"
#include "sim/timeline/cost_model.h"
#include "sim/timeline/step_log.h"
#include "sim/timeline/timeline.h"
#include "tools/cli_numbers.h"
#include "tools/commands.h"
#include "tools/order_input.h"
#include "tools/outcome_report.h"
#include "tools/output_file.h"
#include "tools/report_html.h"
#include "tools/scenario_input.h"
#include "tools/summary_text.h"
#include "tools/terminal_colour.h"
#include "tools/work_bound.h"
#include "trace/writer.h"

namespace zfetch::tools {
namespace {

struct RunOptions {
  std::string scenario;
  std::string discovery = "resident-skip";
  std::string accelerator = "gpu";
  std::string trace_path;
  std::string timeline_path;
  std::string report_path;
  std::string chakra_dir;
  std::string replay_schedule_path;
  std::string calibration_path;  // instead of the scenario's timing.calibration
  std::string expect_order_path;
  std::vector<std::string> sets;
  bool json = false;
  bool strict = false;  // a latent hazard exits 1
  bool per_module = false;
  bool all_modules = false;
  uint64_t max_events = kDefaultMaxEvents;
};

// Checks every event against an order file on its way to the next sink.
class OrderCheckingSink final : public trace::EventSink {
 public:
  OrderCheckingSink(const trace::OrderFile& order, std::string trace_name, trace::EventSink& next)
      : checker_(order, std::move(trace_name)), next_(next) {}
  void on_event(const trace::Event& event) override {
    // Line numbers of the trace file `--trace` writes: the header, then one line per event.
    checker_.on_event(event, event.seq + 2);
    next_.on_event(event);
  }
  std::optional<diag::Diagnostic> finish() { return checker_.finish(); }

 private:
  trace::OrderChecker checker_;
  trace::EventSink& next_;
};

// `zfetch run --chakra DIR` writes one file per rank; more would be a runaway of files.
constexpr int64_t kMaxChakraRanks = 65536;

// The file of one rank in --chakra's directory: DIR/zfetch.RANK.et, the names ASTRA-sim reads
// for the workload prefix DIR/zfetch.
std::string chakra_file_name(int64_t rank) {
  return "zfetch." + std::to_string(rank) + ".et";
}

// Why --chakra cannot be written for this scenario; empty when it can.
std::string chakra_unavailable(const model::Scenario& scenario) {
#ifndef ZFETCH_HAVE_CHAKRA
  (void)scenario;
  return "--chakra needs a zfetch built with protobuf (Debian: libprotobuf-dev and "
         "protobuf-compiler; tools/deps installs them)";
#else
  if (scenario.world_size > kMaxChakraRanks) {
    return "--chakra writes one file per rank; world_size " + std::to_string(scenario.world_size) +
           " is above the " + std::to_string(kMaxChakraRanks) + " it writes";
  }
  return "";
#endif
}

// Writes `text` into an opened output; a failed write shows in OutputFile::close().
void write_text(const OutputFile& out, const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), out.stream());
}

// The inputs of one run, each checked before anything runs or is written.
struct RunInputs {
  model::Discovery discovery{};
  model::Scenario scenario;
  std::optional<trace::OrderFile> order;
  sim::Options sim_options;
};

// The inputs of `options`; nothing when one is bad (reported on stderr).
std::optional<RunInputs> load_inputs(const RunOptions& options) {
  const std::optional<model::Discovery> discovery = discovery_or_report(options.discovery);
  if (!discovery) {
    return std::nullopt;
  }
  std::optional<model::Scenario> scenario = load_or_report(options.scenario, options.sets);
  if (!scenario) {
    return std::nullopt;
  }
  RunInputs inputs;
  inputs.discovery = *discovery;
  inputs.scenario = std::move(*scenario);
  // The order file is validated before anything runs.
  if (!options.expect_order_path.empty()) {
    inputs.order = load_order_or_report(options.expect_order_path);
    if (!inputs.order) {
      return std::nullopt;
    }
  }
  inputs.sim_options.discovery = *discovery;
  inputs.sim_options.accelerator =
      options.accelerator == "cpu" ? sim::Accelerator::Cpu : sim::Accelerator::Gpu;
  if (const uint64_t planned = planned_operations(inputs.scenario); planned > options.max_events) {
    std::fprintf(stderr, "%s\n",
                 planned_work_message(options.scenario, planned, options.max_events).c_str());
    return std::nullopt;
  }
  return inputs;
}

// The files one run writes, opened before it simulates. Outputs never replace an input or
// each other, and each is written whole or not at all (finish()).
class RunFiles {
 public:
  // False when one cannot be written (reported on stderr).
  bool open(const RunOptions& options, const model::Scenario& scenario) {
    std::vector<std::string> chakra_paths;
    if (!options.chakra_dir.empty()) {
      if (const std::string why = chakra_unavailable(scenario); !why.empty()) {
        std::fprintf(stderr, "command line: error: %s\n", why.c_str());
        return false;
      }
      chakra_dir_.emplace(options.chakra_dir);
      if (!chakra_dir_->error().empty()) {
        std::fprintf(stderr, "%s: error: cannot write: %s\n", options.chakra_dir.c_str(),
                     chakra_dir_->error().c_str());
        return false;
      }
      for (int64_t r = 0; r < scenario.world_size; ++r) {
        chakra_paths.push_back(chakra_dir_->file(chakra_file_name(r)));
      }
    }
    std::vector<std::string> output_paths = {options.trace_path, options.timeline_path,
                                             options.replay_schedule_path, options.report_path};
    output_paths.insert(output_paths.end(), chakra_paths.begin(), chakra_paths.end());
    const std::string clash =
        check_outputs_distinct({options.scenario, options.calibration_path}, output_paths);
    if (!clash.empty()) {
      std::fprintf(stderr, "%s\n", clash.c_str());
      return false;
    }
    trace = open_output(options.trace_path);
    timeline = open_output(options.timeline_path);
    schedule = open_output(options.replay_schedule_path);
    report = open_output(options.report_path);
    for (const std::string& path : chakra_paths) {
      chakra.push_back(open_output(path));
    }
    for (const auto& out : outputs_) {
      if (!out->error().empty()) {
        std::fprintf(stderr, "%s: error: cannot write: %s\n", out->path().c_str(),
                     out->error().c_str());
        return false;
      }
    }
    return true;
  }

  // Where temporary files go: beside the first output (the system's default without one).
  [[nodiscard]] std::string scratch_directory() const {
    return outputs_.empty() ? std::string() : outputs_.front()->scratch_directory();
  }

  // Commits every output; false when one failed (reported on stderr, none is left behind).
  bool finish() {
    std::vector<OutputFile*> files;
    for (const auto& out : outputs_) {
      files.push_back(out.get());
    }
    if (!finish_outputs(files)) {
      return false;
    }
    if (chakra_dir_) {
      chakra_dir_->keep();
    }
    return true;
  }

  OutputFile* trace = nullptr;
  OutputFile* timeline = nullptr;
  OutputFile* schedule = nullptr;
  OutputFile* report = nullptr;
  std::vector<OutputFile*> chakra;

 private:
  OutputFile* open_output(const std::string& path) {
    if (path.empty()) {
      return nullptr;
    }
    outputs_.push_back(std::make_unique<OutputFile>(path));
    return outputs_.back().get();
  }

  std::optional<OutputDirectory> chakra_dir_;
  std::vector<std::unique_ptr<OutputFile>> outputs_;
};

// The calibration of the run: --calibration's file, else the scenario's; nothing when it does
// not load (reported on stderr).
std::optional<sim::Calibration> load_run_calibration(const RunOptions& options,
                                                     const model::Scenario& scenario) {
  sim::CalibrationResult calibration = options.calibration_path.empty()
                                           ? sim::resolve_calibration(scenario)
                                           : sim::load_calibration_file(options.calibration_path);
  if (!calibration.calibration) {
    for (const model::Diagnostic& diagnostic : calibration.diagnostics) {
      std::fputs(diag::render(diagnostic).c_str(), stderr);
    }
  }
  return std::move(calibration.calibration);
}

// The sinks the simulated events pass through, in order: the timeline (which stamps simulated
// time on every event), the replay's drain marks, the order check, the trace writer.
class RunSinks {
 public:
  RunSinks(const RunOptions& options, const RunInputs& inputs, const RunFiles& files,
           const sim::Calibration& calibration)
      : cost_(inputs.scenario, calibration) {
    const model::Scenario& scenario = inputs.scenario;
    trace::EventSink* sink = &null_sink_;
    if (files.trace != nullptr) {
      trace::TraceHeader header;
      header.scenario = scenario.name;
      header.world_size = scenario.world_size;
      header.discovery = std::string(format_as(inputs.discovery));
      writer_ = std::make_unique<trace::TraceWriter>(files.trace->stream(), header);
      sink = writer_.get();
    }
    if (inputs.order) {
      order.emplace(*inputs.order,
                    options.trace_path.empty() ? "the simulated trace" : options.trace_path, *sink);
      sink = &*order;
    }
    sim::TimelineOptions timeline_options;
    timeline_options.per_module = options.per_module || !options.report_path.empty();
    // The report, the replay schedule and the Chakra traces need the whole recording in
    // memory; the Chrome trace is written as it is produced, through temporary files beside it.
    timeline_options.record = !options.replay_schedule_path.empty() ||
                              !options.report_path.empty() || !options.chakra_dir.empty();
    // The text table streams its steps from a temporary file; --json, the report and the
    // replay schedule keep them in memory (the JSON document holds them all anyway).
    if (!options.json && !timeline_options.record) {
      step_log.emplace(files.scratch_directory());
      timeline_options.steps = &*step_log;
    }
    if (files.timeline != nullptr) {
      chrome_trace.emplace(scenario, files.timeline->scratch_directory());
      timeline_options.recorder = &*chrome_trace;
    }
    drain_marks.emplace(*sink);
    timeline.emplace(scenario, cost_, options.replay_schedule_path.empty() ? *sink : *drain_marks,
                     timeline_options);
    drain_marks->attach(&*timeline);
  }
  RunSinks(const RunSinks&) = delete;
  RunSinks& operator=(const RunSinks&) = delete;

  // Flushes the trace into `trace`; a failed write fails it, which RunFiles::finish() reports
  // with the other outputs (a regular file's failed write is not in its stream's error flag).
  void flush_trace(OutputFile& trace) {
    if (writer_ && !writer_->flush()) {
      const int cause = writer_->error_number();
      trace.fail(cause != 0 ? std::strerror(cause) : "write error");
    }
  }

  std::optional<OrderCheckingSink> order;
  std::optional<sim::StepLog> step_log;
  std::optional<sim::ChromeTraceWriter> chrome_trace;
  std::optional<sim::ReplayDrainMarks> drain_marks;
  std::optional<sim::Timeline> timeline;

 private:
  const sim::AnalyticalCostModel cost_;
  trace::NullSink null_sink_;
  std::unique_ptr<trace::TraceWriter> writer_;
};

// The simulation, within --max-events; nothing when it passed the bound (reported on stderr).
std::optional<sim::Outcome> simulate_bounded(const RunOptions& options, const RunInputs& inputs,
                                             sim::Timeline& timeline) {
  return simulate_within_bound(inputs.scenario, inputs.sim_options, timeline, options.max_events,
                               options.scenario);
}

// Appends to a failure's explanation what avoids it, said only once a re-simulation with the
// change passed (a few runs, each within --max-events).
std::vector<sim::Remedy> explain_remedies(const RunOptions& options, const RunInputs& inputs,
                                          sim::Outcome& outcome) {
  std::vector<sim::Remedy> remedies =
      sim::verified_remedies(inputs.scenario, inputs.sim_options, outcome, options.max_events);
  if (outcome.failure &&
      (!remedies.empty() || outcome.kind == sim::OutcomeKind::FetchQueueMismatch)) {
    std::string& explanation = outcome.failure->explanation;
    if (!explanation.empty() && explanation.back() != '\n') {
      explanation += '\n';  // the remedies start on a line of their own
    }
    explanation += remedy_text(remedies);
  }
  return remedies;
}

// Writes the Chrome trace, the replay schedule, the report and the Chakra traces into their
// opened files (committed by RunFiles::finish()).
void write_outputs(const RunInputs& inputs, const sim::Outcome& outcome,
                   const sim::Calibration& calibration, RunSinks& sinks, RunFiles& files) {
  const model::Scenario& scenario = inputs.scenario;
  const sim::Timeline& timeline = *sinks.timeline;
  if (files.timeline != nullptr) {
    sim::ChromeTraceNotes notes;
    if (outcome.failure) {
      notes.failure_title = outcome_summary(scenario, outcome);
      notes.failure_message = outcome.failure->message;
    }
    if (!sinks.chrome_trace->write(files.timeline->stream(), notes)) {
      files.timeline->fail(sinks.chrome_trace->error());
    }
  }
  if (files.schedule != nullptr) {
    write_text(*files.schedule,
               sim::replay_schedule_json(timeline.recording(), timeline.summary(), scenario,
                                         calibration, *sinks.drain_marks));
  }
  if (files.report != nullptr) {
    RunReportInput report;
    report.scenario = &scenario;
    report.discovery = inputs.discovery;
    report.outcome = &outcome;
    report.summary = &timeline.summary();
    report.recording = &timeline.recording();
    report.calibration = calibration.name;
    write_text(*files.report, run_report_html(report));
  }
#ifdef ZFETCH_HAVE_CHAKRA
  if (!files.chakra.empty()) {
    const std::vector<int32_t> schedule_of = sim::simulated_rank_of_each_rank(scenario);
    std::map<int32_t, std::string> nodes;  // per simulated rank: every file running it shares them
    for (size_t r = 0; r < files.chakra.size(); ++r) {
      auto [at, fresh] = nodes.try_emplace(schedule_of[r]);
      if (fresh) {
        at->second = sim::chakra_nodes(timeline.recording(), scenario, schedule_of[r]);
      }
      write_text(*files.chakra[r],
                 sim::chakra_metadata(scenario, schedule_of[r], static_cast<int32_t>(r)));
      write_text(*files.chakra[r], at->second);
    }
  }
#endif
  if (files.trace != nullptr) {
    sinks.flush_trace(*files.trace);
  }
}

// What the run found, for the printed result.
struct RunResult {
  const sim::Outcome& outcome;
  const std::vector<sim::Remedy>& remedies;
  bool hazardous;  // hazards matter only when the run passed
  const std::vector<sim::HazardChange>& changes;
  const sim::Calibration& calibration;
};

void print_json(const RunInputs& inputs, const RunResult& result, const sim::Timeline& timeline) {
  const model::Scenario& scenario = inputs.scenario;
  nlohmann::ordered_json j = outcome_json(scenario, inputs.discovery, result.outcome);
  j["remedies"] = remedy_json(scenario, result.remedies);
  j["hazards"] = result.hazardous ? hazard_json(scenario, result.outcome, result.changes)
                                  : nlohmann::ordered_json::array();
  for (const model::ResolvedAuto& resolved : scenario.config.resolved_auto) {
    j["hf_auto"][resolved.key] = {{"value", resolved.value}, {"rule", resolved.rule}};
  }
  j["calibration"] = result.calibration.name;
  j["timeline"] =
      nlohmann::ordered_json::parse(sim::format_summary_json(timeline.summary(), scenario));
  std::puts(j.dump(2).c_str());
}

// The outcome, the explanation and the timeline table; false when the step log could not be
// read back (reported on stderr).
bool print_text(const RunOptions& options, const RunInputs& inputs, const RunResult& result,
                RunSinks& sinks) {
  const model::Scenario& scenario = inputs.scenario;
  const sim::Outcome& outcome = result.outcome;
  const sim::Timeline& timeline = *sinks.timeline;
  const bool colour = colour_wanted(stdout);
  std::fputs(outcome_text(scenario, inputs.discovery, outcome, colour).c_str(), stdout);
  if (result.hazardous) {
    std::fputs(hazard_text(scenario, inputs.discovery, outcome, result.changes, colour).c_str(),
               stdout);
  }
  if (const std::string autos = resolved_auto_text(scenario); !autos.empty()) {
    std::printf("\nds_config \"auto\" values, filled as the HF integration fills them:\n%s",
                autos.c_str());
  }
  std::printf("\nsimulated time (calibration: %s)\n", result.calibration.name.c_str());
  SummaryTextOptions text_options;
  text_options.per_module = options.per_module;
  text_options.module_rows = options.all_modules ? 0 : text_options.module_rows;
  if (outcome.kind == sim::OutcomeKind::Hang || outcome.kind == sim::OutcomeKind::RankDivergence) {
    text_options.last_step = outcome.failure->step;
  }
  if (!sinks.step_log) {
    std::fputs(summary_text(timeline.summary(), scenario, text_options).c_str(), stdout);
    return true;
  }
  sim::StepLog& step_log = *sinks.step_log;
  const StepSource steps = [&](const std::function<void(const sim::StepSummary&)>& visit) {
    step_log.for_each(visit);
  };
  write_summary_text(stdout, timeline.summary(), steps, scenario, text_options);
  if (!step_log.error().empty()) {
    std::fprintf(stderr, "zfetch: error: %s\n", step_log.error().c_str());
    return false;
  }
  return true;
}

int run(const RunOptions& options) {
  std::optional<RunInputs> inputs = load_inputs(options);
  if (!inputs) {
    return kExitBadInput;
  }
  RunFiles files;
  if (!files.open(options, inputs->scenario)) {
    return kExitBadInput;
  }
  const std::optional<sim::Calibration> calibration =
      load_run_calibration(options, inputs->scenario);
  if (!calibration) {
    return kExitBadInput;
  }
  RunSinks sinks(options, *inputs, files, *calibration);
  // The outputs' temporaries are removed as `files` goes out of scope on every early return.
  std::optional<sim::Outcome> simulated = simulate_bounded(options, *inputs, *sinks.timeline);
  if (!simulated) {
    return kExitBadInput;
  }
  sim::Outcome& outcome = *simulated;
  const std::vector<sim::Remedy> remedies = explain_remedies(options, *inputs, outcome);
  sinks.timeline->finish();
  if (sinks.timeline->summary().overflowed) {
    std::fprintf(stderr, "%s: error: %s\n", options.scenario.c_str(),
                 std::string(sim::kTimelineOverflowMessage).c_str());
    return kExitBadInput;
  }
  write_outputs(*inputs, outcome, *calibration, sinks, files);
  if (!files.finish()) {
    return kExitBadInput;
  }
  // The hazards' re-simulation runs only when there are some.
  const bool hazardous = !outcome.failure && !outcome.hazards.empty();
  const std::vector<sim::HazardChange> changes =
      hazardous ? sim::resimulate_hazard_changes(inputs->scenario, inputs->sim_options)
                : std::vector<sim::HazardChange>{};
  const RunResult result{outcome, remedies, hazardous, changes, *calibration};
  if (options.trace_path != "-") {
    if (options.json) {
      print_json(*inputs, result, *sinks.timeline);
    } else if (!print_text(options, *inputs, result, sinks)) {
      return kExitBadInput;
    }
  }
  if (sinks.order) {
    if (const std::optional<diag::Diagnostic> failure = sinks.order->finish()) {
      std::fputs(diag::render(*failure).c_str(), stderr);
      return kExitMismatch;
    }
  }
  if (outcome.failure || (options.strict && hazardous)) {
    return kExitMismatch;
  }
  return kExitOk;
}

}  // namespace

void setup_run(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<RunOptions>();
  sub.add_option("scenario", options->scenario, "scenario file (.yaml)")->required();
  sub.add_option("--discovery", options->discovery,
                 "external-access discovery: resident-skip (DeepSpeed <= 0.19.9) or "
                 "residency-independent (PR #8875)")
      ->capture_default_str();
  sub.add_option("--accelerator", options->accelerator,
                 "the accelerator DeepSpeed runs on, where it changes the outcome: gpu, or cpu "
                 "(CPU ranks with gloo, as tools/recorder records real DeepSpeed)")
      ->check(CLI::IsMember({"gpu", "cpu"}))
      ->capture_default_str();
  sub.add_option("--trace", options->trace_path,
                 "write the event trace (JSON Lines; - for stdout)");
  sub.add_option("--report", options->report_path,
                 "write a self-contained HTML report (timeline, memory, exposed communication "
                 "per module and layer, what to tune; opens offline in any browser)");
  sub.add_option("--chakra", options->chakra_dir,
                 "write the simulated schedule as Chakra execution traces, DIR/zfetch.RANK.et per "
                 "rank (ASTRA-sim's workload DIR/zfetch; docs/chakra.md)");
  sub.add_option("--timeline", options->timeline_path,
                 "write the simulated timeline as Chrome trace JSON (Perfetto, chrome://tracing)");
  sub.add_option("--replay-schedule", options->replay_schedule_path,
                 "write rank 0's timeline as a schedule for `zfetch-gpu replay` (JSON)");
  sub.add_option("--calibration", options->calibration_path,
                 "time with this calibration file (e.g. from `zfetch-gpu bench --out`) instead of "
                 "the scenario's timing.calibration");
  sub.add_option("--expect-order", options->expect_order_path,
                 "check the simulated events against an order file (docs/diff.md); exit 1 when a "
                 "directive fails");
  sub.add_option("--max-events", options->max_events,
                 "stop with exit 2 after this many simulated events")
      ->capture_default_str()
      ->check(decimal_unsigned());
  sub.add_option("--set", options->sets,
                 "override a config value, KEY=VALUE (the keys of `zfetch sweep --set`; repeat it)")
      ->allow_extra_args(false);
  sub.add_flag("--per-module", options->per_module,
               "add the 20 modules with the most exposed communication to the summary");
  sub.add_flag("--all", options->all_modules, "with --per-module: every module, not the top 20");
  sub.add_flag("--json", options->json, "print the outcome as one JSON object");
  sub.add_flag("--strict", options->strict,
               "exit 1 when the run passed with a latent hazard (an external access left "
               "undiscovered because its parameter was AVAILABLE or INFLIGHT)");
  sub.callback([&action, options] { action = [options] { return run(*options); }; });
}

}  // namespace zfetch::tools
