// Helpers for tests/sim: parse an in-memory scenario, simulate it into a VectorSink, select events.
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "model/load.h"
#include "sim/simulator.h"
#include "trace/event.h"
#include "trace/names.h"
#include "trace/sink.h"

namespace zfetch::sim::testing {

/// An event whose names are owned (the simulator's views die with the run).
struct OwnedEvent {
  trace::Event e;
  std::string module;
  std::string param;
};

/// Collects every event, copying the names.
class VectorSink final : public trace::EventSink {
 public:
  void on_event(const trace::Event& event) override {
    OwnedEvent owned{event, std::string(event.module), std::string(event.param)};
    owned.e.module = {};
    owned.e.param = {};
    events.push_back(std::move(owned));
  }
  std::vector<OwnedEvent> events;
};

/// One simulated run: the scenario (kept alive for names), the outcome and the events.
struct Run {
  model::Scenario scenario;
  Outcome outcome;
  std::vector<OwnedEvent> events;
};

/// Simulates a loaded scenario under `discovery`; a diagnostic of `what` fails the test.
inline Run simulate_loaded(model::LoadResult loaded, std::string_view what, Discovery discovery) {
  for (const model::Diagnostic& d : loaded.diagnostics) {
    FAIL_CHECK(what << " does not parse: " << d.message);
  }
  REQUIRE(loaded.scenario.has_value());
  Run run{std::move(*loaded.scenario), {}, {}};
  VectorSink sink;
  Options options;
  options.discovery = discovery;
  run.outcome = simulate(run.scenario, options, sink);
  run.events = std::move(sink.events);
  return run;
}

/// Parses `yaml` (name "input") and simulates it under `discovery`. A parse error fails the test.
inline Run simulate_text(std::string_view yaml, Discovery discovery = Discovery::ResidentSkip) {
  return simulate_loaded(model::parse_scenario_text("input", yaml), "scenario", discovery);
}

/// The events of one kind, optionally restricted to an engine and micro-step (-1: any).
inline std::vector<OwnedEvent> select(const Run& run, trace::EventKind kind, int engine = -1,
                                      int micro_step = -1) {
  std::vector<OwnedEvent> out;
  for (const OwnedEvent& ev : run.events) {
    if (ev.e.kind == kind && (engine < 0 || ev.e.engine == engine) &&
        (micro_step < 0 || ev.e.micro_step == micro_step)) {
      out.push_back(ev);
    }
  }
  return out;
}

/// `kind module param@trace_step` lines of the events matching `keep`, for readable comparisons.
template <typename Pred>
std::vector<std::string> lines(const Run& run, Pred keep) {
  std::vector<std::string> out;
  for (const OwnedEvent& ev : run.events) {
    if (!keep(ev)) {
      continue;
    }
    std::string line = std::string(trace::format_as(ev.e.kind));
    if (ev.e.module_id >= 0) {
      line += fmt::format(" m={}", trace::display_module_name(ev.module));
    }
    if (ev.e.param_id >= 0) {
      line += fmt::format(" p={}", ev.param);
    }
    if (ev.e.trace_step >= 0) {
      line += fmt::format(" s={}", ev.e.trace_step);
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace zfetch::sim::testing

namespace zfetch::sim::testing {

/// Parses a scenario file under the source tree and simulates it.
inline Run simulate_file(const std::string& relative_path,
                         Discovery discovery = Discovery::ResidentSkip) {
  return simulate_loaded(
      model::load_scenario_file(std::string(ZFETCH_SOURCE_DIR) + "/" + relative_path),
      relative_path, discovery);
}

}  // namespace zfetch::sim::testing
