// The oracles on scenarios whose verdict is known: the #8874 seed, a latent hazard, a clean one.
#include "sim/explore/oracles.h"

#include <doctest/doctest.h>

#include <string>

#include "model/load.h"
#include "sim/explore/event_digest.h"

namespace zfetch::sim {
namespace {

model::Scenario load(const std::string& relative) {
  model::LoadResult loaded =
      model::load_scenario_file(std::string(ZFETCH_SOURCE_DIR) + "/" + relative);
  REQUIRE(loaded.scenario.has_value());
  return std::move(*loaded.scenario);
}

model::Scenario parse(std::string_view text) {
  model::LoadResult loaded = model::parse_scenario_text("input", text);
  REQUIRE(loaded.scenario.has_value());
  return std::move(*loaded.scenario);
}

bool violates(const Verdict& v, Oracle oracle) {
  for (const Violation& violation : v.violations) {
    if (violation.oracle == oracle) {
      return true;
    }
  }
  return false;
}

TEST_SUITE("explore") {
  TEST_CASE("oracles: the #8874 seed breaks oracle 2 under resident-skip only") {
    const model::Scenario seed = load("scenarios/seed/resident_adapter_resume.yaml");
    OracleOptions options;
    options.policy = Discovery::ResidentSkip;
    const Verdict rs = check_scenario(seed, options);
    CHECK(violates(rs, Oracle::Discovery));
    CHECK(rs.run(Discovery::ResidentSkip).failure_class == FailureClass::FetchQueueMismatch);
    CHECK(rs.run(Discovery::ResidencyIndependent).failure_class == FailureClass::Pass);
    options.policy = Discovery::ResidencyIndependent;
    const Verdict ri = check_scenario(seed, options);
    CHECK(ri.violations.empty());
  }

  TEST_CASE("oracles: a failure in the root's forward names the root as every output does") {
    // Shrunk by `zfetch fuzz --seed 1 --policy resident-skip` (scenario 57): the root reads a
    // child's param as metadata, then calls the child; the replay fails in the root's forward.
    const model::Scenario s = parse(R"(name: root-failure
deepspeed:
  gradient_accumulation_steps: 4
  zero_optimization: {stage: 3, stage3_prefetch_bucket_size: 1, stage3_param_persistence_threshold: 16}
model:
  name: model
  params: {w: {shape: [1]}}
  forward:
    - {access: a.v, kind: metadata}
    - call: a
  children:
    - {name: a, params: {w: {shape: [1]}, v: {shape: [1]}}}
schedule:
  - save_checkpoint: t0
  - train: {steps: 1}
)");
    OracleOptions options;
    options.policy = Discovery::ResidentSkip;
    const Verdict v = check_scenario(s, options);
    const PolicyRun& run = v.run(Discovery::ResidentSkip);
    REQUIRE(run.failure_class == FailureClass::FetchQueueMismatch);
    CHECK(run.where.find("of '<root>'") != std::string::npos);
  }

  TEST_CASE("oracles: an access that found its param in flight is a latent hazard") {
    // In step 1, 'a' reads b's param after the replayed trace prefetched it, so resident-skip
    // never registers it; without prefetch the same read finds it NOT_AVAILABLE and the trace
    // check fails.
    const model::Scenario s = parse(R"(name: hazard
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0}
model:
  name: model
  forward: [{call: a}, {call: b}]
  children:
    - name: a
      params: {w: [4]}
      forward: [{access: /b.v, kind: metadata, when: {step: [1]}}]
    - name: b
      params: {v: [4]}
schedule: [{train: 2}]
)");
    OracleOptions options;
    const Verdict v = check_scenario(s, options);
    INFO(v.run(Discovery::ResidentSkip).hazard);
    CHECK(violates(v, Oracle::LatentHazard));
    CHECK(v.run(Discovery::ResidentSkip).failure_class == FailureClass::Hazard);
    CHECK(v.run(Discovery::ResidentSkip).hazard.find("'a' read b.v while it was") !=
          std::string::npos);
    CHECK(v.run(Discovery::ResidentSkip).hazard.find("prefetch off") != std::string::npos);
  }

  TEST_CASE("oracles: a latent hazard in the root's forward names the root as every output does") {
    // Shrunk from `zfetch fuzz --seed 4243` (scenario 122), the read moved to the root: it finds
    // the frozen persistent param AVAILABLE; with prefetch off the backward's queue check fails.
    const model::Scenario s = parse(R"(name: root-hazard
input_requires_grad: true
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 64}
model:
  name: model
  forward: [{access: d.e.w}, {call: d}]
  children:
    - name: d
      forward: [{call: e, input: no_grad}]
      children:
        - {name: e, params: {w: {shape: [1], dtype: bf16, frozen: true}}}
schedule: [save_checkpoint: t0, train: {steps: 1}, empty_partition_cache, train: {steps: 1}]
)");
    OracleOptions options;
    const Verdict v = check_scenario(s, options);
    INFO(v.run(Discovery::ResidentSkip).hazard);
    REQUIRE(v.run(Discovery::ResidentSkip).failure_class == FailureClass::Hazard);
    CHECK(v.run(Discovery::ResidentSkip).hazard.find("'<root>' read d.e.w while it was") !=
          std::string::npos);
  }

  TEST_CASE("oracles: a scenario without external accesses passes every oracle") {
    const model::Scenario s = parse(R"(name: clean
world_size: 2
deepspeed:
  gradient_accumulation_steps: 2
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0}
model:
  name: model
  children:
    - {name: a, params: {w: [4, 4]}}
    - {name: b, params: {w: [4]}}
schedule: [{train: 2}, save_checkpoint: t, restart, load_checkpoint: t, {train: 1}]
)");
    for (Discovery d : {Discovery::ResidentSkip, Discovery::ResidencyIndependent}) {
      OracleOptions options;
      options.policy = d;
      const Verdict v = check_scenario(s, options);
      CHECK(v.violations.empty());
      // Oracle 3's premise holds, so the two traces are the same.
      CHECK(v.run(Discovery::ResidentSkip).digest == v.run(Discovery::ResidencyIndependent).digest);
    }
  }

  TEST_CASE("oracles: pass-dependent flow and a parameter returned by the root exempt oracle 2") {
    model::Scenario s = parse(R"(name: t
model:
  name: model
  params: {w: [4]}
  children: [{name: a, params: {w: [4]}, forward: [{access: w}]}]
schedule: [{train: 1}]
)");
    CHECK(oracle2_exemption(s).empty());
    for (const auto phase : {model::Condition::Phase::Eval, model::Condition::Phase::Train}) {
      model::Scenario t = s;
      t.modules[1].forward[0].when.phase = phase;
      CHECK(oracle2_exemption(t) == "control flow depends on the step, micro-step, rank or phase");
    }
    model::Scenario micro = s;
    micro.modules[1].forward[0].when.micro_steps = {0};
    CHECK_FALSE(oracle2_exemption(micro).empty());
    model::Scenario engine = s;
    engine.modules[1].forward[0].when.engines = {1};  // a restart records a new trace
    model::ScheduleItem restart;
    restart.kind = model::ScheduleItem::Kind::Restart;
    engine.schedule.push_back(restart);
    CHECK(oracle2_exemption(engine).empty());
    engine.schedule.back().reuse_model = true;  // ... but the old engine's backward replays
    CHECK(oracle2_exemption(engine) ==
          "control flow depends on the engine and a restart re-uses the model");
    model::Scenario returns = s;
    model::Op ret;
    ret.kind = model::Op::Kind::Return;
    ret.param = 0;
    returns.modules[0].has_forward = true;
    returns.modules[0].forward = {ret};
    CHECK(oracle2_exemption(returns) == "the root's forward returns a parameter");
  }

  TEST_CASE("event digest: equal events digest equally; any field changes it") {
    trace::Event e;
    e.kind = trace::EventKind::Gather;
    e.param = "a.w";
    EventDigest a;
    EventDigest b;
    a.on_event(e);
    b.on_event(e);
    CHECK(a.digest() == b.digest());
    e.group = 3;
    EventDigest c;
    c.on_event(e);
    CHECK(c.digest() != a.digest());
    e.group = -1;
    e.param = "a.v";
    EventDigest d;
    d.on_event(e);
    CHECK(d.digest() != a.digest());
  }
}

}  // namespace
}  // namespace zfetch::sim
