// Tests of the language for DeepSpeed-Chat-like runs: several engines in one process
// (`engines:`), GatheredParameters blocks (in a forward and in the schedule) and calls that bypass
// hooks (`hooks: none|own`), with their located errors and what the simulator makes of them
// (docs/scenario-format.md, docs/semantics.md 11).
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

const char* const kConfig = R"(name: engines
world_size: 2
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0}
)";

const char* const kEngines = R"(engines:
  actor:
    model:
      name: actor
      children:
        - {name: a, params: {w: [4, 4]}}
        - {name: b, params: {w: [4, 4]}}
  critic:
    model:
      name: critic
      children:
        - {name: v, params: {w: [1, 4]}}
)";

sim::Outcome simulate(const Scenario& scenario) {
  trace::NullSink sink;
  return sim::simulate(scenario, sim::Options{}, sink);
}

// Every event's engine and module id, in simulation order.
struct IdSink : trace::EventSink {
  std::vector<std::pair<int32_t, int64_t>> fetches;
  void on_event(const trace::Event& e) override {
    if (e.kind == trace::EventKind::Fetch) {
      fetches.emplace_back(e.engine, e.module_id);
    }
  }
};

}  // namespace

TEST_SUITE("model") {
  TEST_CASE(
      "engines: each engine has its own model, named in the schedule, and the writer keeps it") {
    const Scenario s = load_ok(std::string(kConfig) + kEngines + R"(schedule:
  - gathered: {params: [""], engine: actor, modifier_rank: 0, do: [{eval: {passes: 1, engine: actor}}]}
  - train: {steps: 1, engine: critic}
)");
    REQUIRE(s.engines.size() == 2);
    CHECK(s.engine_names == std::vector<std::string>{"actor", "critic"});
    CHECK(s.engines[1].modules.size() == 2);
    CHECK(s.modules.size() == 3);  // the first engine's model
    REQUIRE(s.schedule.size() == 2);
    CHECK(s.schedule[0].kind == ScheduleItem::Kind::Gathered);
    CHECK(s.schedule[0].gathered.params == std::vector<ParamIndex>{0, 1});
    CHECK(s.schedule[0].gathered.modifier_rank == 0);
    CHECK(s.schedule[0].body.size() == 1);
    CHECK(s.schedule[1].engine == 1);
    const Scenario again = load_ok(write_scenario_yaml(s));
    CHECK(again.engine_names == s.engine_names);
    CHECK(again.schedule[0].gathered.params == s.schedule[0].gathered.params);
    CHECK(again.schedule[0].body[0].engine == 0);
    CHECK(again.schedule[1].engine == 1);
    CHECK(write_scenario_yaml(again) == write_scenario_yaml(s));
  }

  TEST_CASE("engines: the engines share the module id counter and number their events") {
    // _register_deepspeed_module's counter runs on: the critic's root takes the id of the
    // actor's last module (2), and its child the next one.
    const Scenario s = load_ok(std::string(kConfig) + kEngines + R"(schedule:
  - eval: {passes: 1, engine: actor}
  - eval: {passes: 1, engine: critic}
)");
    IdSink sink;
    const sim::Outcome outcome = sim::simulate(s, sim::Options{}, sink);
    CHECK(outcome.kind == sim::OutcomeKind::Pass);
    CHECK(sink.fetches ==
          std::vector<std::pair<int32_t, int64_t>>{{0, 0}, {0, 1}, {0, 2}, {1, 2}, {1, 3}});
  }

  TEST_CASE("engines: bad engine entries are located") {
    CHECK(errors_of(std::string(kConfig) + kEngines + R"(schedule:
  - train: {steps: 1, engine: critc}
  - train: 1
  - restart
)") == "input:18:31: error: unknown engine 'critc'; the engines are: actor, critic\n"
       "  - train: {steps: 1, engine: critc}\n"
       "                              ^~~~~\n"
       "input:18:31: note: did you mean 'critic'?\n"
       "input:19:5: error: with several engines, each schedule item names its engine, such as "
       "'train: {steps: 1, engine: NAME}'\n"
       "  - train: 1\n"
       "    ^\n"
       "input:20:5: error: with several engines, the schedule runs 'train', 'eval', 'generate' "
       "and 'gathered' items only (each naming its 'engine')\n"
       "  - restart\n"
       "    ^\n");
  }

  TEST_CASE("gathered: a block around hooked passes ends without error") {
    // The eval pass inside the block releases a.w after its module; the exit skips a param that
    // is no longer available (seen on real DeepSpeed, scenarios/real/dschat_step3_actor_critic).
    const Scenario s = load_ok(std::string(kConfig) + kEngines + R"(schedule:
  - gathered: {params: [a], engine: actor, do: [{eval: {passes: 2, engine: actor}}]}
  - eval: {passes: 1, engine: actor}
)");
    const sim::Outcome outcome = simulate(s);
    CHECK(outcome.kind == sim::OutcomeKind::Pass);
    CHECK(outcome.stats.passes == 3);
  }

  TEST_CASE("gathered: a block that ends while a listed param is in flight fails") {
    // a and b come in one prefetch handle, c in the next; the block over c ends before anything
    // waits for c's handle (scenarios/validation/v44, seen on real DeepSpeed).
    const Scenario s = load_ok(std::string(kConfig) + R"(model:
  name: m
  children:
    - {name: a, params: {w: [8, 8]}}
    - {name: b, params: {w: [8, 8]}}
    - {name: c, params: {w: [8, 8]}}
  forward: [{call: a}, {gathered: [c], body: [{call: b}]}, {call: c}]
schedule: [{train: 2}]
)");
    Scenario bucket = s;
    bucket.config.zero.prefetch_bucket_size = 100;
    const sim::Outcome outcome = simulate(bucket);
    REQUIRE(outcome.failure);
    CHECK(outcome.failure->message == " Cannot partition a param in flight");
    CHECK(outcome.failure->micro_step == 1);
  }

  TEST_CASE("gathered: a block around no pass partitions its params again, and nesting overlaps") {
    const std::string model = std::string(kConfig) + R"(model:
  name: m
  children:
    - name: a
      params: {w: [4, 4]}
      forward:
        - gathered: [w]
          body: [{access: w}]
    - {name: b, params: {w: [4, 4]}}
  forward:
    - call: b
    - gathered: [b]
      body: [{gathered: [b.w], body: [{access: b.w}]}]
)";
    const Scenario s = load_ok(model + "schedule: [{eval: 1}]\n");
    const sim::Outcome outcome = simulate(s);
    REQUIRE(outcome.failure);
    CHECK(outcome.failure->message ==
          "Nested GatheredParameters contexts cannot overlap parameters; parameter ds_ids "
          "already gathered by an outer context: [1]");
    // A block inside a's forward over a's own params: a still holds them at the exit.
    const Scenario own = load_ok(std::string(kConfig) + R"(model:
  name: m
  children:
    - name: a
      params: {w: [4, 4]}
      forward: [{gathered: [w], body: [{access: w}]}]
schedule: [{eval: 1}]
)");
    const sim::Outcome held = simulate(own);
    REQUIRE(held.failure);
    CHECK(held.failure->message.rfind(
              "Cannot free a ZeRO-3 parameter while it is still active in submodules.", 0) == 0);
  }

  TEST_CASE("gathered: bad blocks are located") {
    CHECK(errors_of(std::string(kConfig) + R"(model:
  name: m
  children: [{name: a, params: {w: [4, 4]}}]
  forward:
    - {gathered: [], body: [{call: a}]}
    - {gathered: [aa], body: [{call: a}], modifier_rank: 2}
schedule:
  - gathered: {params: [a.x], do: [{eval: 1}]}
  - gathered: {do: [{eval: 1}]}
  - gathered: {params: [a], do: []}
)") == "input:9:18: error: 'gathered' lists no parameters; give parameter or module paths (a "
       "module stands for its parameters(), \"\" for the whole model)\n"
       "    - {gathered: [], body: [{call: a}]}\n"
       "                 ^\n"
       "input:10:19: error: 'aa' names no parameter or module of 'm'\n"
       "    - {gathered: [aa], body: [{call: a}], modifier_rank: 2}\n"
       "                  ^~\n"
       "input:10:19: note: did you mean 'a'?\n"
       "input:10:58: error: 'modifier_rank' 2 is not a rank of a world of 2\n"
       "    - {gathered: [aa], body: [{call: a}], modifier_rank: 2}\n"
       "                                                         ^\n"
       "input:12:25: error: 'a.x' names no parameter or module of 'm'\n"
       "  - gathered: {params: [a.x], do: [{eval: 1}]}\n"
       "                        ^~~\n"
       "input:12:25: note: did you mean 'a.w'?\n"
       "input:13:5: error: 'gathered' needs 'params'\n"
       "  - gathered: {do: [{eval: 1}]}\n"
       "    ^~~~~~~~\n"
       "input:14:33: error: 'gathered' has an empty 'do'\n"
       "  - gathered: {params: [a], do: []}\n"
       "                                ^\n");
  }

  TEST_CASE(
      "hooks: a forward-only call fetches nothing for the module, an own-hooks call nothing "
      "below") {
    const std::string model = std::string(kConfig) + R"(model:
  name: m
  children:
    - name: block
      params: {w: [4, 4]}
      children: [{name: inner, params: {w: [4, 4]}}]
  forward: [{call: block, hooks: HOOKS}]
schedule: [{eval: 1}]
)";
    const auto fetches = [&](const std::string& hooks) {
      std::string text = model;
      text.replace(text.find("HOOKS"), 5, hooks);
      IdSink sink;
      sim::simulate(load_ok(text), sim::Options{}, sink);
      return sink.fetches.size();
    };
    CHECK(fetches("all") == 3);   // root, block, inner
    CHECK(fetches("none") == 2);  // root, inner: block.forward(x) runs no hook of block's
    CHECK(fetches("own") == 2);   // root, block: nothing below block
    const Scenario s = load_ok(std::string(model).replace(model.find("HOOKS"), 5, "own"));
    CHECK(s.modules[0].forward[0].hooks == CallHooks::Own);
    CHECK(load_ok(write_scenario_yaml(s)).modules[0].forward[0].hooks == CallHooks::Own);
    CHECK(errors_of(std::string(model).replace(model.find("HOOKS"), 5, "some")) ==
          "input:11:34: error: unknown call hooks 'some'; valid values are: all, none, own\n"
          "  forward: [{call: block, hooks: some}]\n"
          "                                 ^~~~\n"
          "input:11:34: note: did you mean 'none'?\n");
  }
}

}  // namespace zfetch::model
