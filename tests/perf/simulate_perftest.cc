// Simulator throughput: the generated 80-layer transformer (world 64, reentrant checkpointing,
// gradient accumulation 4) for N optimizer steps, trace written to /dev/null.
// Usage: simulate_perftest [optimizer_steps=1000] [layers=80]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "model/load.h"
#include "sim/simulator.h"
#include "tests/perf/perf_util.h"
#include "tests/perf/transformer_scenario.h"
#include "trace/writer.h"

int main(int argc, char** argv) {
  using namespace zfetch;
  perf::TransformerShape shape;
  if (argc > 1) {
    shape.optimizer_steps = std::atoll(argv[1]);
  }
  if (argc > 2) {
    shape.layers = std::atoi(argv[2]);
  }
  const model::LoadResult loaded =
      model::parse_scenario_text("transformer.yaml", perf::transformer_scenario(shape));
  if (!loaded.scenario) {
    std::fprintf(stderr, "simulate_perftest: the generated scenario does not load: %s\n",
                 loaded.diagnostics.front().message.c_str());
    return 2;
  }
  std::FILE* devnull = std::fopen("/dev/null", "wb");
  if (devnull == nullptr) {
    return 2;
  }
  const double rss_before = perf::peak_rss_mib();
  sim::Outcome outcome;
  const double cpu_start = perf::thread_cpu_seconds();
  const auto wall_start = std::chrono::steady_clock::now();
  {
    trace::TraceHeader header{1, loaded.scenario->name, loaded.scenario->world_size,
                              "resident-skip"};
    trace::TraceWriter writer(devnull, header);
    outcome = sim::simulate(*loaded.scenario, sim::Options{}, writer);
    writer.flush();
  }
  const double cpu = perf::thread_cpu_seconds() - cpu_start;
  const double wall = perf::seconds_since(wall_start);
  std::fclose(devnull);
  if (outcome.failure) {
    std::fprintf(stderr, "simulate_perftest: the run failed: %s\n",
                 outcome.failure->message.c_str());
    return 1;
  }
  const auto events = static_cast<double>(outcome.stats.events);
  perf::report("simulate", "optimizer_steps", static_cast<double>(shape.optimizer_steps), "steps");
  perf::report("simulate", "events", events, "events");
  perf::report("simulate", "fetches", static_cast<double>(outcome.stats.fetches), "fetches");
  perf::report("simulate", "cpu_time", cpu, "s");
  perf::report("simulate", "wall_time", wall, "s");
  perf::report("simulate", "events_per_second", events / cpu, "events/s");
  perf::report("simulate", "peak_rss_before_run", rss_before, "MiB");
  perf::report("simulate", "peak_rss", perf::peak_rss_mib(), "MiB");
  return 0;
}
