// The fidelity classes found by random scenarios on real DeepSpeed (scenarios/fidelity/, each
// recorded in the corpus): the rule behind each, checked on its minimal scenario.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/sim/sim_test_util.h"

namespace zfetch::sim::testing {
namespace {

using trace::EventKind;
using trace::Phase;

TEST_SUITE("sim") {
  TEST_CASE("fidelity 1: a gradient accumulated in two autograd executions fails the reduction") {
    // f1: `a` inside a reentrant region (its nested backward) and after it (the outer backward).
    // f1b: the owner inside the region, its weight read as data after it. f1c: two regions.
    for (const char* path : {"scenarios/fidelity/f1_grad_reduced_twice.yaml",
                             "scenarios/fidelity/f1b_owner_in_region_read_outside.yaml",
                             "scenarios/fidelity/f1c_two_reentrant_regions.yaml"}) {
      for (Discovery d : {Discovery::ResidentSkip, Discovery::ResidencyIndependent}) {
        const std::string name = path;
        CAPTURE(name);
        const Run run = simulate_file(path, d);
        REQUIRE(run.outcome.kind == OutcomeKind::Error);
        REQUIRE(run.outcome.failure.has_value());
        CHECK(run.outcome.failure->message.empty());  // a bare assert
        CHECK(run.outcome.failure->phase == Phase::Bwd);
        CHECK(run.outcome.failure->explanation.find("holds a.weight twice") != std::string::npos);
        CHECK(run.outcome.failure->explanation.find("z3 leaf") == std::string::npos);
        // The reduction ends engine.backward: the error is its last event, no step follows.
        REQUIRE_FALSE(run.events.empty());
        CHECK(run.events.back().e.kind == EventKind::Error);
        CHECK(select(run, EventKind::OptimizerStep).empty());
      }
    }
  }

  TEST_CASE("fidelity 1: a z3 leaf module's backward hook reduces its params at every call") {
    // f1e: inside a reentrant region and outside it; f1f: called twice, no checkpoint.
    for (const char* path : {"scenarios/fidelity/f1e_leaf_in_region_and_outside.yaml",
                             "scenarios/fidelity/f1f_leaf_called_twice.yaml"}) {
      const std::string name = path;
      CAPTURE(name);
      const Run run = simulate_file(path);
      REQUIRE(run.outcome.kind == OutcomeKind::Error);
      REQUIRE(run.outcome.failure.has_value());
      CHECK(run.outcome.failure->message.empty());
      CHECK(run.outcome.failure->explanation.find("z3 leaf module's param") != std::string::npos);
    }
  }

  TEST_CASE("fidelity 1: a weight used once per autograd execution is reduced once") {
    CHECK(simulate_file("scenarios/fidelity/f1d_nonreentrant_reduced_once.yaml").outcome.kind ==
          OutcomeKind::Pass);
    // The same shapes with a non-reentrant region (the original graph does the backward) pass.
    const std::string yaml = R"(name: t
world_size: 1
input_requires_grad: true
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0}
model:
  name: model
  children:
    - {name: a, params: {weight: [8, 8]}}
  forward:
    - checkpoint: {reentrant: false}
      body: [{call: a}]
    - call: a
schedule:
  - train: {steps: 2}
)";
    const Run run = simulate_text(yaml);
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    CHECK(select(run, EventKind::OptimizerStep).size() == 2);
  }

  TEST_CASE("fidelity 3: a gradient accumulated into a partitioned param fails with torch's size") {
    // f3 ([8, 8]) and f3c ([4, 6]): the read of owner.weight is its oldest use, so its
    // AccumulateGrad runs after the reader's backward, when the owner has released it again.
    const std::pair<const char*, const char*> cases[] = {
        {"scenarios/fidelity/f3_read_then_owner_release.yaml",
         "The size of tensor a (0) must match the size of tensor b (8) at non-singleton "
         "dimension 1"},
        {"scenarios/fidelity/f3c_read_then_owner_release_4x6.yaml",
         "The size of tensor a (0) must match the size of tensor b (6) at non-singleton "
         "dimension 1"}};
    for (const auto& [path, message] : cases) {
      const std::string name = path;
      CAPTURE(name);
      const Run skip = simulate_file(path, Discovery::ResidentSkip);
      REQUIRE(skip.outcome.kind == OutcomeKind::Error);
      REQUIRE(skip.outcome.failure.has_value());
      CHECK(skip.outcome.failure->message == message);
      CHECK(skip.outcome.failure->phase == Phase::Bwd);
      CHECK(skip.outcome.failure->engine == 1);
      // Right after the reader's pre-backward: its own post-backward never runs.
      const std::vector<OwnedEvent> pre = select(skip, EventKind::BackwardPre, 1);
      REQUIRE_FALSE(pre.empty());
      CHECK(pre.back().module == "reader");
      CHECK(select(skip, EventKind::BackwardPost, 1).size() == 1);  // the owner's
      // PR #8875 registers the read: the reader's pre-backward gathers the weight again.
      CHECK(simulate_file(path, Discovery::ResidencyIndependent).outcome.kind == OutcomeKind::Pass);
    }
    // The summed gradient of a [16] or [8, 1] weight obeys the layout contract against the empty
    // data's strides: torch keeps it, nothing is copied, nothing fails (f3d, f3e).
    CHECK(simulate_file("scenarios/fidelity/f3d_read_then_owner_release_1d.yaml").outcome.kind ==
          OutcomeKind::Pass);
    CHECK(simulate_file("scenarios/fidelity/f3e_read_then_owner_release_last_dim_1.yaml")
              .outcome.kind == OutcomeKind::Pass);
    // The owner's own backward is the last use when the read comes after it: nothing fails.
    CHECK(simulate_file("scenarios/fidelity/f3b_owner_release_then_read.yaml").outcome.kind ==
          OutcomeKind::Pass);
  }

  TEST_CASE("fidelity 4: gather-group ids come from one counter, whichever engine's coordinator") {
    // Engine 1 re-uses the model: forward hooks call its coordinator, backward hooks engine 0's.
    // Engine 1 gathers 2 params per forward and 2 per backward over 3 steps: 12 groups, each id
    // used by exactly one gather (all ids of the process unique).
    const Run run = simulate_file("scenarios/fidelity/f4_restart_reuse_model_groups.yaml");
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    std::map<int64_t, std::set<std::pair<int32_t, Phase>>> users;  // group -> (step, phase)
    std::set<int64_t> engine1_groups;
    for (const OwnedEvent& ev : run.events) {
      if (ev.e.kind == EventKind::Gather || ev.e.kind == EventKind::Prefetch) {
        users[ev.e.group].insert({ev.e.step, ev.e.phase});
        if (ev.e.engine == 1) {
          engine1_groups.insert(ev.e.group);
        }
      }
    }
    CHECK(engine1_groups.size() == 12);
    // Not a structured binding: clang 14 cannot capture one in the macro's lambda.
    for (const auto& entry : users) {
      CHECK_MESSAGE(entry.second.size() == 1,
                    "group " << entry.first << " used by several gathers");
    }
  }

  TEST_CASE("fidelity 5: a loss without grad_fn fails DeepSpeed's own check in engine.backward") {
    const Run run = simulate_file("scenarios/fidelity/f5_loss_without_grad.yaml");
    REQUIRE(run.outcome.kind == OutcomeKind::Error);
    REQUIRE(run.outcome.failure.has_value());
    CHECK(run.outcome.failure->message ==
          "loss must be a scalar tensor. If you need to pass output gradients, backward() of "
          "output tensors");
    CHECK(run.outcome.failure->phase == Phase::Bwd);
    // Nothing of the backward ran: no backward hook fired.
    CHECK(select(run, EventKind::BackwardPre).empty());
  }
}

}  // namespace
}  // namespace zfetch::sim::testing
