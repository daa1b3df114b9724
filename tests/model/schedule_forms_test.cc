// Tests of the schedule forms for reported failures: several root forwards in a micro-step
// (`train: {forwards: [...]}`), `generate` loops and the `forward` / `phase: generate`
// conditions, with their located errors (docs/scenario-format.md).
#include <doctest/doctest.h>

#include <string>

#include "model/load.h"
#include "model/scenario_writer.h"
#include "tests/model/load_helpers.h"
#include "tests/model/simulate_helpers.h"

namespace zfetch::model {

namespace {

using testing::digest_of;
using testing::errors_of;
using testing::load_ok;
using testing::simulate;

// A two-layer model whose second layer runs only in forward 0 of a micro-step or generate loop.
const char* const kModel = R"(name: forms
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0, log_trace_cache_warnings: true}
model:
  name: m
  children:
    - {name: enc, params: {w: [4, 4]}}
    - {name: a, params: {w: [4, 4]}}
    - {name: b, params: {w: [4, 4]}}
  forward:
    - {call: enc, when: {phase: train}}
    - call: a
    - {call: b, when: {forward: 0}}
)";

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("schedule forms: forwards, generate and the forward condition are read") {
    const Scenario s = load_ok(std::string(kModel) + R"(schedule:
  - train: {steps: 2, forwards: [grad, no_grad, eval]}
  - generate: {tokens: 3, encoder: enc, training: true}
  - generate: 2
)");
    REQUIRE(s.schedule.size() == 3);
    CHECK(s.schedule[0].forwards ==
          std::vector<ForwardMode>{ForwardMode::Grad, ForwardMode::NoGrad, ForwardMode::Eval});
    CHECK(s.schedule[1].kind == ScheduleItem::Kind::Generate);
    CHECK(s.schedule[1].steps == 3);
    CHECK(s.schedule[1].encoder == 1);
    CHECK(s.schedule[1].training);
    CHECK(s.schedule[2].steps == 2);
    CHECK(s.schedule[2].encoder == kNone);
    CHECK_FALSE(s.schedule[2].training);
    CHECK(s.modules[0].forward[2].when.forwards == std::vector<int64_t>{0});
    CHECK(root_forwards(s.schedule[0], 4) == 2 * 4 * 3);
    CHECK(root_forwards(s.schedule[1], 4) == 3);
    // The writer keeps every form: the written file reads back to the same schedule.
    const Scenario again = load_ok(write_scenario_yaml(s));
    CHECK(again.schedule[0].forwards == s.schedule[0].forwards);
    CHECK(again.schedule[1].encoder == 1);
    CHECK(again.schedule[1].training);
    CHECK(again.modules[0].forward[2].when.forwards == std::vector<int64_t>{0});
  }

  TEST_CASE("schedule forms: bad forwards and generate entries are located") {
    CHECK(errors_of(std::string(kModel) + R"(schedule:
  - train: {steps: 1, forwards: [grad, nograd]}
  - train: {steps: 1, forwards: []}
  - generate: {tokens: 0, encoder: encc}
  - generate: {encoder: ""}
  - generate: {tokens: 2, mode: eval}
)") == "input:15:40: error: unknown forward 'nograd'; valid values are: grad, no_grad, eval\n"
       "  - train: {steps: 1, forwards: [grad, nograd]}\n"
       "                                       ^~~~~~\n"
       "input:15:40: note: did you mean 'no_grad'?\n"
       "input:16:33: error: 'forwards' is empty; give the micro-step's root forwards, such as "
       "[grad, no_grad]\n"
       "  - train: {steps: 1, forwards: []}\n"
       "                                ^\n"
       "input:17:24: error: 'tokens' must be at least 1, got 0\n"
       "  - generate: {tokens: 0, encoder: encc}\n"
       "                       ^\n"
       "input:17:36: error: unknown module 'encc' as the 'encoder' of 'generate'\n"
       "  - generate: {tokens: 0, encoder: encc}\n"
       "                                   ^~~~\n"
       "input:17:36: note: did you mean 'enc'?\n"
       "input:18:25: error: the 'encoder' of 'generate' is a submodule called directly; the "
       "root's forwards are the generate loop's\n"
       "  - generate: {encoder: \"\"}\n"
       "                        ^~\n"
       "input:19:27: error: unknown key 'mode' in 'generate'\n"
       "  - generate: {tokens: 2, mode: eval}\n"
       "                          ^~~~\n"
       "input:19:27: note: did you mean 'model'?\n");
  }

  TEST_CASE("schedule forms: one grad forward is the default micro-step, event for event") {
    const std::string schedule = "schedule: [{train: 2}]\n";
    const Scenario plain = load_ok(std::string(kModel) + schedule);
    const Scenario spelled =
        load_ok(std::string(kModel) + "schedule: [{train: {steps: 2, forwards: [grad]}}]\n");
    CHECK(digest_of(plain) == digest_of(spelled));
  }

  TEST_CASE("schedule forms: a second forward that skips a module invalidates the trace") {
    // Forward 1 skips b: the trace recorded from forward 0 expects b where forward 1 ends,
    // and every micro-step records again: one invalidation per micro-step.
    const Scenario two = load_ok(std::string(kModel) +
                                 "schedule: [{train: {steps: 3, forwards: [grad, no_grad]}}]\n");
    const sim::Outcome outcome = simulate(two);
    CHECK(outcome.kind == sim::OutcomeKind::TraceInvalidated);
    CHECK(outcome.invalidations == 3);
    CHECK(outcome.stats.passes == 6);
  }

  TEST_CASE("schedule forms: generate calls the encoder without resetting the trace step") {
    // Training records root, enc, a, b; generate's direct call of enc lands in that recording,
    // so the first generated token finds a where the trace has enc.
    const Scenario s = load_ok(std::string(kModel) +
                               "schedule: [{train: 1}, {generate: {tokens: 2, encoder: enc}}]\n");
    const sim::Outcome outcome = simulate(s);
    CHECK(outcome.kind == sim::OutcomeKind::TraceInvalidated);
    CHECK(outcome.invalidations == 1);
    CHECK(outcome.stats.passes == 3);
    REQUIRE(outcome.warnings.size() == 1);
    CHECK(outcome.warnings[0] ==
          "Invalidate trace cache @ step 1: expected module 1, but got "
          "module 2");
  }
}

}  // namespace zfetch::model
