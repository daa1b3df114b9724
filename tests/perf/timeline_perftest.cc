// Timeline overhead: the generated transformer simulated with and without a Timeline stage
// (both to a NullSink); the bound is a ratio of at most 2. Exits 1 above it.
// Usage: timeline_perftest [optimizer_steps=20] [layers=80]
#include <cstdio>
#include <cstdlib>

#include "model/load.h"
#include "sim/simulator.h"
#include "sim/timeline/calibration.h"
#include "sim/timeline/cost_model.h"
#include "sim/timeline/timeline.h"
#include "tests/perf/perf_util.h"
#include "tests/perf/transformer_scenario.h"
#include "trace/sink.h"

int main(int argc, char** argv) {
  using namespace zfetch;
  perf::TransformerShape shape;
  shape.optimizer_steps = argc > 1 ? std::atoll(argv[1]) : 20;
  if (argc > 2) {
    shape.layers = std::atoi(argv[2]);
  }
  const model::LoadResult loaded =
      model::parse_scenario_text("transformer.yaml", perf::transformer_scenario(shape));
  if (!loaded.scenario) {
    std::fprintf(stderr, "timeline_perftest: the generated scenario does not load\n");
    return 2;
  }
  const model::Scenario& scenario = *loaded.scenario;
  const sim::CalibrationResult calibration = sim::resolve_calibration(scenario);
  if (!calibration.calibration) {
    return 2;
  }
  const sim::AnalyticalCostModel cost(scenario, *calibration.calibration);
  trace::NullSink null;
  // Best of 3 CPU times each, alternating, so that a noisy neighbour hurts both sides alike.
  double plain = 1e30;
  double timed = 1e30;
  uint64_t events = 0;
  sim::Tick end_ns = 0;
  for (int round = 0; round < 3; ++round) {
    double start = perf::thread_cpu_seconds();
    events = sim::simulate(scenario, sim::Options{}, null).stats.events;
    plain = std::min(plain, perf::thread_cpu_seconds() - start);
    start = perf::thread_cpu_seconds();
    sim::Timeline timeline(scenario, cost, null);
    sim::simulate(scenario, sim::Options{}, timeline);
    timeline.finish();
    timed = std::min(timed, perf::thread_cpu_seconds() - start);
    end_ns = timeline.summary().end_ns;
  }
  const double ratio = timed / plain;
  perf::report("timeline", "events", static_cast<double>(events), "events");
  perf::report("timeline", "simulate_cpu_time", plain, "s");
  perf::report("timeline", "simulate_with_timeline_cpu_time", timed, "s");
  perf::report("timeline", "timeline_events_per_second", static_cast<double>(events) / timed,
               "events/s");
  perf::report("timeline", "overhead_ratio", ratio, "x");
  perf::report("timeline", "simulated_time", static_cast<double>(end_ns) * 1e-9, "s");
  perf::report("timeline", "peak_rss", perf::peak_rss_mib(), "MiB");
  return ratio <= 2.0 ? 0 : 1;
}
