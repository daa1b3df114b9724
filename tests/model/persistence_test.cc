// Tests of named_parameters() order and the persistence selection of semantics 1.5.
#include "model/persistence.h"

#include <doctest/doctest.h>

#include "model/load.h"

namespace zfetch::model {

namespace {

Scenario load(const char* text) {
  LoadResult result = parse_scenario_text("input", text);
  REQUIRE(result.diagnostics.empty());
  return std::move(*result.scenario);
}

// Four params of 10, 50, 5 and 20 elements in registration order; `thresholds` go into the
// zero_optimization block.
Scenario four_params(const char* thresholds) {
  std::string text = std::string(R"(name: p
deepspeed:
  zero_optimization:
    stage: 3
)") + thresholds + R"(
model:
  name: m
  params: {a: [10]}
  children:
    - {name: c, params: {b: [5, 10], c: [5]}}
    - {name: d, params: {d: [4, 5]}}
schedule: [train: 1]
)";
  LoadResult result = parse_scenario_text("input", text);
  REQUIRE(result.diagnostics.empty());
  return std::move(*result.scenario);
}

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("persistence: parameter order lists each object once, at its first occurrence") {
    const Scenario scenario = load(R"(name: tied
model:
  name: m
  children:
    - {name: head, params: {weight: {tied_to: embed.weight}, bias: [4]}}
    - {name: embed, params: {weight: [4, 8]}}
schedule: [train: 1]
)");
    // params: 0 head.weight (alias of 2), 1 head.bias, 2 embed.weight.
    CHECK(canonical(scenario, 0) == 2);
    CHECK(canonical(scenario, 1) == 1);
    CHECK(parameter_order(scenario) == std::vector<ParamIndex>{2, 1});
  }

  TEST_CASE("persistence: params at or under the param threshold persist") {
    // param threshold 10: a (10) and c (5) persist; b (50) and d (20) do not.
    const Scenario scenario = four_params("    stage3_param_persistence_threshold: 10");
    CHECK(select_persistent(scenario, scenario.config.zero) ==
          std::vector<bool>{true, false, true, false});
  }

  TEST_CASE("persistence: the model threshold skips a param and continues, not stops") {
    // param threshold 20, model threshold 30. a: 10 <= 30 -> T=10. b: 50+10 > 30 skip.
    // c: 5+10 <= 30 -> T=15. d: 20+15 = 35 > 30 skip. So c persists after b was skipped.
    const Scenario scenario = four_params(
        "    stage3_param_persistence_threshold: 20\n    stage3_model_persistence_threshold: 30");
    CHECK(select_persistent(scenario, scenario.config.zero) ==
          std::vector<bool>{true, false, true, false});
    // model threshold 14: a: T=10; b skip; c: 5+10 = 15 > 14 skip; d skip.
    const Scenario tight = four_params(
        "    stage3_param_persistence_threshold: 20\n    stage3_model_persistence_threshold: 14");
    CHECK(select_persistent(tight, tight.config.zero) ==
          std::vector<bool>{true, false, false, false});
  }

  TEST_CASE("persistence: an alias shares its target's flag and counts once") {
    const Scenario scenario = load(R"(name: tied
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 32,
                      stage3_model_persistence_threshold: 40}
model:
  name: m
  children:
    - {name: embed, params: {weight: [4, 8]}}
    - {name: head, params: {weight: {tied_to: embed.weight}, bias: [8]}}
schedule: [train: 1]
)");
    // embed.weight 32 -> T=32; head.weight is the same object (not counted again);
    // head.bias 8 + 32 = 40 <= 40 -> persists.
    CHECK(select_persistent(scenario, scenario.config.zero) == std::vector<bool>{true, true, true});
  }

  TEST_CASE("persistence: the seed's adapter weights persist, the base weight does not") {
    LoadResult result =
        load_scenario_file(ZFETCH_SOURCE_DIR "/scenarios/seed/resident_adapter_resume.yaml");
    REQUIRE(result.diagnostics.empty());
    const Scenario& scenario = *result.scenario;
    // threshold 16: base.weight 64 no; adapter_A.weight 16 and adapter_B.weight 16 yes (7.1).
    CHECK(select_persistent(scenario, scenario.config.zero) ==
          std::vector<bool>{false, true, true});
  }
}

}  // namespace zfetch::model
