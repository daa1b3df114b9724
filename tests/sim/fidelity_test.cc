// The fidelity classes found by random scenarios on real DeepSpeed (scenarios/fidelity/, each
// recorded in the corpus): the rule behind each, checked on its minimal scenario.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "tests/sim/sim_test_util.h"

namespace zfetch::sim::testing {
namespace {

using trace::EventKind;
using trace::Phase;

TEST_SUITE("sim") {
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
    for (const auto& [group, used_by] : users) {
      CHECK_MESSAGE(used_by.size() == 1, "group " << group << " used by several gathers");
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
