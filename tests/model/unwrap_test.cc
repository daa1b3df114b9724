// Tests of `generate: {model, unwrap}`: a PEFT model's generate() running its base model, and
// unwrap_model_for_generation removing and re-registering the ZeRO-3 hooks, as DeepSpeed does
// it before and after PR #8043 (docs/scenario-format.md, "Generate loops").
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

#include "model/load.h"
#include "model/scenario_writer.h"
#include "sim/simulator.h"
#include "tests/model/load_helpers.h"
#include "tests/model/simulate_helpers.h"

namespace zfetch::model {

namespace {

using testing::errors_of;
using testing::load_ok;

// A PEFT-shaped model: the root wraps the base model, whose forward calls two layers.
const char* const kModel = R"(name: unwrap
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0, log_trace_cache_warnings: true}
model:
  name: peft
  children:
    - name: base
      children:
        - {name: a, params: {w: [4, 4]}}
        - {name: b, params: {w: [4, 4]}}
)";

sim::Outcome simulate(const std::string& schedule) {
  return testing::simulate(load_ok(std::string(kModel) + schedule));
}

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("unwrap: generate's model and unwrap are read and written back") {
    const Scenario s = load_ok(std::string(kModel) + R"(schedule:
  - generate: {tokens: 2, model: base, unwrap: before-8043}
  - generate: {tokens: 1, unwrap: after-8043}
  - generate: 1
)");
    CHECK(s.schedule[0].generate_model == 1);
    CHECK(s.schedule[0].unwrap == Rehook::Before8043);
    CHECK(s.schedule[1].generate_model == kNone);
    CHECK(s.schedule[1].unwrap == Rehook::After8043);
    CHECK(s.schedule[2].unwrap == Rehook::None);
    const Scenario again = load_ok(write_scenario_yaml(s));
    CHECK(again.schedule[0].generate_model == 1);
    CHECK(again.schedule[0].unwrap == Rehook::Before8043);
    CHECK(again.schedule[1].unwrap == Rehook::After8043);
    CHECK(again.schedule[2].unwrap == Rehook::None);
  }

  TEST_CASE("unwrap: bad model and unwrap values are located") {
    CHECK(errors_of(std::string(kModel) + R"(schedule:
  - generate: {model: bas, unwrap: after-8034}
  - generate: {model: "", unwrap: none}
)") == "input:12:23: error: unknown module 'bas' as the 'model' of 'generate'\n"
       "  - generate: {model: bas, unwrap: after-8034}\n"
       "                      ^~~\n"
       "input:12:23: note: did you mean 'base'?\n"
       "input:12:36: error: unknown unwrap 'after-8034'; valid values are: before-8043, "
       "after-8043\n"
       "  - generate: {model: bas, unwrap: after-8034}\n"
       "                                   ^~~~~~~~~~\n"
       "input:12:36: note: did you mean 'after-8043'?\n"
       "input:13:23: error: the 'model' of 'generate' is the root, which generate() runs when "
       "'model' is left out\n"
       "  - generate: {model: \"\", unwrap: none}\n"
       "                      ^~\n"
       "input:13:35: error: unknown unwrap 'none'; valid values are: before-8043, after-8043\n"
       "  - generate: {model: \"\", unwrap: none}\n"
       "                                  ^~~~\n");
  }

  TEST_CASE("unwrap: generating through the base model starts no pass") {
    // Root forwards reset the trace step; the base model's do not.
    const sim::Outcome through_root = simulate("schedule: [{train: 1}, {generate: 3}]\n");
    const sim::Outcome through_base =
        simulate("schedule: [{train: 1}, {generate: {tokens: 3, model: base}}]\n");
    CHECK(through_root.stats.passes == 4);
    CHECK(through_base.stats.passes == 1);
  }

  TEST_CASE("unwrap: before PR #8043 a trace still being recorded cannot be built") {
    // `steps` optimizer steps, a generation that renumbers every module, `steps` more.
    auto train_generate_train = [](int steps) {
      return simulate(
          fmt::format("schedule: [{{train: {0}}}, {{generate: {{tokens: 2, model: base, unwrap: "
                      "before-8043}}}}, "
                      "{{train: {0}}}]\n",
                      steps));
    };
    // Step 0 records the trace; step 1's root forward builds the param trace and pops the
    // steps recorded under the old ids by the new ones: nothing is queued there.
    const sim::Outcome recording = train_generate_train(1);
    CHECK(recording.kind == sim::OutcomeKind::Error);
    REQUIRE(recording.failure.has_value());
    CHECK(recording.failure->message == "pop from an empty deque");
    CHECK(recording.failure->step == 1);
    CHECK(recording.failure->explanation.find("PR #8043") != std::string::npos);
    // Once the trace is complete nothing is looked up by id (modules are compared as objects),
    // so the same generation after step 1 changes nothing.
    CHECK(train_generate_train(2).kind == sim::OutcomeKind::Pass);
  }

  TEST_CASE("unwrap: after PR #8043 re-registration invalidates the trace, silently") {
    const sim::Outcome outcome = simulate(R"(schedule:
  - train: 1
  - generate: {tokens: 2, model: base, unwrap: after-8043}
  - train: 1
  - generate: {tokens: 2, model: base, unwrap: after-8043}
  - train: 1
)");
    CHECK(outcome.kind == sim::OutcomeKind::TraceInvalidated);
    CHECK(outcome.invalidations == 2);
    CHECK(outcome.warnings.empty());  // _invalidate_trace prints nothing
  }

  TEST_CASE("unwrap: the generation computes with every param gathered") {
    // No hook fetches anything while the hooks are removed: the unwrap's GatheredParameters
    // gathers every param (outside the coordinator: no gather event, as on real DeepSpeed), so
    // nothing computes with a partitioned param, and the step after it gathers them again.
    const sim::Outcome outcome = simulate(R"(schedule:
  - generate: {tokens: 2, model: base, unwrap: after-8043}
  - train: 1
)");
    CHECK(outcome.kind == sim::OutcomeKind::Pass);
    CHECK(outcome.stats.getter_gathers == 0);
    CHECK(outcome.stats.gathered_params >= 2);
  }
}

}  // namespace zfetch::model
