// Tests of `generate: {model, unwrap}`: a PEFT model's generate() running its base model, and
// unwrap_model_for_generation removing and re-registering the ZeRO-3 hooks, as DeepSpeed does
// it before and after PR #8043 (docs/scenario-format.md, "Generate loops").
#include <doctest/doctest.h>

#include <string>

#include "model/load.h"
#include "model/scenario_writer.h"
#include "sim/simulator.h"
#include "tests/model/load_helpers.h"
#include "trace/sink.h"

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
  const Scenario scenario = load_ok(std::string(kModel) + schedule);
  trace::NullSink sink;
  return sim::simulate(scenario, sim::Options{}, sink);
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

  TEST_CASE("unwrap: before PR #8043 the trace recorded under the old ids cannot be built") {
    // Step 0 records the trace; the generation after it renumbers every module; step 1's root
    // forward builds the param trace and pops the steps under the new ids.
    const sim::Outcome outcome = simulate(R"(schedule:
  - train: 1
  - generate: {tokens: 2, model: base, unwrap: before-8043}
  - train: 1
)");
    CHECK(outcome.kind == sim::OutcomeKind::Error);
    REQUIRE(outcome.failure.has_value());
    CHECK(outcome.failure->message == "pop from an empty deque");
    CHECK(outcome.failure->step == 1);
    CHECK(outcome.failure->explanation.find("PR #8043") != std::string::npos);
  }

  TEST_CASE("unwrap: a completed trace survives the renumbering before PR #8043") {
    // Once the trace is complete nothing is looked up by id: the modules are compared as
    // objects, so generating after step 1 changes nothing.
    const sim::Outcome outcome = simulate(R"(schedule:
  - train: 2
  - generate: {tokens: 2, model: base, unwrap: before-8043}
  - train: 2
)");
    CHECK(outcome.kind == sim::OutcomeKind::Pass);
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
    // No hook fetches anything while the hooks are removed: the params must be gathered by the
    // unwrap itself, and partitioned again after it.
    const sim::Outcome outcome = simulate(R"(schedule:
  - generate: {tokens: 2, model: base, unwrap: after-8043}
  - train: 1
)");
    CHECK(outcome.kind == sim::OutcomeKind::Pass);
    CHECK(outcome.stats.getter_gathers == 2);
  }
}

}  // namespace zfetch::model
