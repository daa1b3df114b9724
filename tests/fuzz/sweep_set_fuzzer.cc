// libFuzzer target: `zfetch sweep --set KEY=V1,V2,...` values through model::set_config_value.
// The input is one `KEY=VALUES` line. A value that is refused leaves the scenario exactly as it
// was; an accepted one gives a scenario that writes, loads back and simulates.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/config_override.h"
#include "model/load.h"
#include "model/scenario_writer.h"
#include "sim/simulator.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr std::string_view kBase = R"(name: fuzz
world_size: 2
deepspeed:
  gradient_accumulation_steps: 2
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 8}
model:
  name: model
  children:
    - {name: a, params: {w: [4, 4]}}
    - {name: b, params: {w: [8]}, forward: [{access: /a.w}]}
schedule: [{train: 1}]
)";

// An accepted value is simulated only up to this accumulation: the base scenario's cost grows
// with it (one pass per micro-step). A campaign's corpus came to set
// gradient_accumulation_steps in 1,308 of its 3,598 inputs, to 42 on average among the values
// simulated, and simulating took over half of every execution. Up to 64 the value is still
// written and loaded back.
constexpr int64_t kMaxSimulatedAccumulation = 8;

const zfetch::model::Scenario& base() {
  static const zfetch::model::Scenario scenario = [] {
    zfetch::model::LoadResult loaded = zfetch::model::parse_scenario_text("base.yaml", kBase);
    FUZZ_CHECK(loaded.scenario.has_value());
    return std::move(*loaded.scenario);
  }();
  return scenario;
}

// The base scenario as the writer gives it: a refused value must leave exactly this.
const std::string& base_yaml() {
  static const std::string yaml = zfetch::model::write_scenario_yaml(base());
  return yaml;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const size_t eq = line.find('=');
  if (eq == std::string_view::npos) {
    return 0;
  }
  const std::string key(line.substr(0, eq));
  size_t begin = eq + 1;
  // At most 2 values per input: each value is checked on its own (the command line's split is
  // tools/' business), so more values per input only made each execution longer (16 values
  // averaged 690 us an execution in a long campaign).
  for (int n = 0; n < 2; ++n) {
    const size_t comma = line.find(',', begin);
    const std::string value(
        line.substr(begin, comma == std::string_view::npos ? comma : comma - begin));
    (void)zfetch::model::parse_config_integer(value);
    zfetch::model::Scenario s = base();
    const auto error = zfetch::model::set_config_value(s, key, value);
    const std::string after = zfetch::model::write_scenario_yaml(s);
    if (error) {
      FUZZ_CHECK(!error->empty());
      FUZZ_CHECK(after == base_yaml());
      // An unknown key is refused whatever the value: its did-you-mean search runs once.
      if (error->starts_with("unknown config key")) {
        break;
      }
    } else if (s.world_size <= 64 && s.config.gradient_accumulation_steps <= 64) {
      const zfetch::model::LoadResult again = zfetch::model::parse_scenario_text("set.yaml", after);
      FUZZ_CHECK(again.scenario.has_value());
      if (s.config.gradient_accumulation_steps <= kMaxSimulatedAccumulation) {
        zfetch::trace::NullSink sink;
        (void)zfetch::sim::simulate(s, {}, sink);
      }
    }
    if (comma == std::string_view::npos) {
      break;
    }
    begin = comma + 1;
  }
  return 0;
}
