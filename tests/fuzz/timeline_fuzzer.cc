// libFuzzer target: a calibration file (JSON) -> the analytical cost model -> the timeline, over
// a generated scenario picked by the input's hash. Parsing must never crash; with a valid
// calibration, two timelines of the same run give the same summary and the run ends at a time
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

namespace {

std::string summary_of(const zfetch::model::Scenario& scenario,
                       const zfetch::sim::CostModel& cost) {
  zfetch::trace::NullSink sink;
  zfetch::sim::Timeline timeline(scenario, cost, sink);
  (void)zfetch::sim::simulate(scenario, {}, timeline);
  timeline.finish();
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
  FUZZ_CHECK(summary_of(scenario, cost) == summary_of(scenario, cost));
  return 0;
}
