// The shrinker: smaller, still failing the same way, and a file that loads.
#include "sim/explore/shrink.h"

#include <doctest/doctest.h>

#include <string>

#include "model/load.h"
#include "model/scenario_writer.h"
#include "sim/explore/oracles.h"

namespace zfetch::sim {
namespace {

TEST_SUITE("explore") {
  TEST_CASE("shrink: the #8874 seed keeps failing the same way and gets no bigger") {
    model::LoadResult loaded = model::load_scenario_file(
        std::string(ZFETCH_SOURCE_DIR) + "/scenarios/seed/resident_adapter_resume.yaml");
    REQUIRE(loaded.scenario.has_value());
    const auto fails_like_8874 = [](const model::Scenario& s) {
      const Verdict v = check_scenario(s, OracleOptions{});
      return v.run(Discovery::ResidentSkip).outcome == OutcomeKind::FetchQueueMismatch &&
             v.run(Discovery::ResidencyIndependent).outcome == OutcomeKind::Pass;
    };
    REQUIRE(fails_like_8874(*loaded.scenario));
    const ShrinkResult shrunk = shrink_scenario(*loaded.scenario, fails_like_8874);
    CHECK(fails_like_8874(shrunk.scenario));
    const ScenarioSize before = scenario_size(*loaded.scenario);
    const ScenarioSize after = scenario_size(shrunk.scenario);
    CHECK(before.modules == 5);
    CHECK(before.operations == 6);
    CHECK(after.modules <= before.modules);
    CHECK(after.operations <= before.operations);
    CHECK(shrunk.accepted > 0);
    // What gets written loads back.
    const model::LoadResult again =
        model::parse_scenario_text("shrunk.yaml", model::write_scenario_yaml(shrunk.scenario));
    CHECK(again.scenario.has_value());
  }

  TEST_CASE("shrink: a predicate on one module removes everything else") {
    model::LoadResult loaded = model::parse_scenario_text("input", R"(name: t
deepspeed: {gradient_accumulation_steps: 3, zero_optimization: {stage: 3}}
model:
  name: model
  children:
    - name: a
      params: {w: [8]}
      children: [{name: b, params: {w: [2]}}, {name: c}]
    - name: keep
      params: {w: [3, 3]}
schedule: [{train: 2}, {eval: 1}, save_checkpoint: x, restart, load_checkpoint: x, {train: 1}]
)");
    REQUIRE(loaded.scenario.has_value());
    const auto has_keep = [](const model::Scenario& s) {
      for (const model::ModuleSpec& m : s.modules) {
        if (m.name == "keep") {
          return true;
        }
      }
      return false;
    };
    const ShrinkResult shrunk = shrink_scenario(*loaded.scenario, has_keep);
    CHECK(shrunk.scenario.modules.size() == 2);  // the root and `keep`
    CHECK(shrunk.scenario.schedule.size() == 1);
    CHECK(shrunk.scenario.config.gradient_accumulation_steps == 1);
    CHECK(shrunk.scenario.params.size() == 0);
  }
}

}  // namespace
}  // namespace zfetch::sim
