// libFuzzer target: a calibration file (JSON) -> the analytical cost model -> the timeline, over
// a generated scenario picked by the input's hash. Parsing must never crash; with a valid
// calibration, two timelines fed the same run give the same summary and the run ends at a time
// that is not negative (the cost model's integer arithmetic must not overflow).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/explore/generator.h"
#include "sim/simulator.h"
#include "sim/timeline/calibration.h"
#include "sim/timeline/cost_model.h"
#include "sim/timeline/timeline.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/input_hash.h"
#include "trace/bounded_sink.h"

namespace {

// Events of the generated run that reach the timelines: generated scenarios run 420 events on
// average, 970 at the 90th percentile and 2,500 at the 99th (2,000 of them, full profile).
constexpr uint64_t kMaxEvents = 1'000;

std::string summary_json(const zfetch::model::Scenario& scenario,
                         const zfetch::sim::Timeline& timeline) {
  const zfetch::sim::TimelineSummary& summary = timeline.summary();
  FUZZ_CHECK(summary.end_ns >= 0);
  return zfetch::sim::format_summary_json(summary, scenario);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const zfetch::sim::CalibrationResult parsed = zfetch::sim::parse_calibration("fuzz.json", text);
  FUZZ_CHECK(parsed.calibration.has_value() == parsed.diagnostics.empty());
  if (!parsed.calibration) {
    return 0;
  }
  const zfetch::model::Scenario scenario = zfetch::sim::generate_scenario(
      input_hash(data, size), 0, zfetch::sim::GeneratorProfile::Full);
  const zfetch::sim::AnalyticalCostModel cost(scenario, *parsed.calibration);
  // One simulation feeds both timelines (the second hands every event on to the first): the
  // simulator's own determinism is the scenario target's check, and a second simulation
  // doubled the cost of every valid calibration. The run stops after kMaxEvents events, so
  // that a large generated scenario costs no more than a small one; both timelines then
  // finish the same prefix.
  zfetch::trace::NullSink sink;
  zfetch::sim::Timeline first(scenario, cost, sink);
  zfetch::sim::Timeline second(scenario, cost, first);
  zfetch::trace::BoundedSink bounded(kMaxEvents, second);
  try {
    (void)zfetch::sim::simulate(scenario, {}, bounded);
  } catch (const zfetch::trace::EventBoundExceeded&) {
  }
  second.finish();
  first.finish();
  FUZZ_CHECK(summary_json(scenario, first) == summary_json(scenario, second));
  return 0;
}
