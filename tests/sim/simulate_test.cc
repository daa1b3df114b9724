// Small in-memory scenarios through sim::simulate: "given this scenario, expect these events".
// Each TEST_CASE names the point of docs/semantics.md section 10 it covers.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tests/sim/sim_test_util.h"

namespace zfetch::sim::testing {
namespace {

using trace::EventKind;
using trace::Phase;

constexpr const char* kSeed = "scenarios/seed/resident_adapter_resume.yaml";

// A scenario with a root `model` and the given children/forward, ZeRO options and schedule.
std::string scenario(std::string_view zero, std::string_view model, std::string_view schedule,
                     int world_size = 1, int gas = 1) {
  return fmt::format(R"(name: t
world_size: {}
input_requires_grad: true
deepspeed:
  train_micro_batch_size_per_gpu: 1
  gradient_accumulation_steps: {}
  zero_optimization:
    stage: 3
{}
model:
{}
schedule:
{}
)",
                     world_size, gas, zero, model, schedule);
}

// Modules a and b with one weight each; the root calls a, then b under `when`.
std::string a_then_b_when(std::string_view when) {
  return fmt::format(
      "  name: model\n  children:\n    - {{name: a, params: {{weight: [4, 4]}}}}\n"
      "    - {{name: b, params: {{weight: [4, 4]}}}}\n  forward:\n    - call: a\n"
      "    - call: b\n      when: {}",
      when);
}

// Two linear children with 16-element weights, called by the default forward (own params,
// then children in order).
constexpr std::string_view kTwoLayers = R"(  name: model
  children:
    - {name: l1, params: {weight: [4, 4]}}
    - {name: l2, params: {weight: [4, 4]}})";

bool in_pass(const OwnedEvent& ev, int micro_step) {
  return ev.e.micro_step == micro_step &&
         (ev.e.phase == Phase::Fwd || ev.e.phase == Phase::Bwd || ev.e.phase == Phase::Recompute);
}

std::vector<std::string> pass_lines(const Run& run, int micro_step,
                                    std::initializer_list<EventKind> kinds) {
  return lines(run, [&](const OwnedEvent& ev) {
    return in_pass(ev, micro_step) &&
           std::find(kinds.begin(), kinds.end(), ev.e.kind) != kinds.end();
  });
}

// Like pass_lines, forward phase only.
std::vector<std::string> forward_lines(const Run& run, int micro_step,
                                       std::initializer_list<EventKind> kinds) {
  return lines(run, [&](const OwnedEvent& ev) {
    return ev.e.micro_step == micro_step && ev.e.phase == Phase::Fwd &&
           std::find(kinds.begin(), kinds.end(), ev.e.kind) != kinds.end();
  });
}

void check_lines(const std::vector<std::string>& actual, const std::vector<std::string>& expected) {
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    CHECK(actual[i] == expected[i]);
  }
  CHECK(actual.size() == expected.size());
}

TEST_SUITE("sim") {
  TEST_CASE("10.1 process-global counters: engine 2's root reuses the last module id (2.2)") {
    const Run run = simulate_file(kSeed, Discovery::ResidencyIndependent);
    std::map<std::pair<int, std::string>, int64_t> module_ids;
    std::map<std::pair<int, std::string>, int64_t> param_ids;
    for (const OwnedEvent& ev : run.events) {
      if (ev.e.kind == EventKind::Fetch) {
        module_ids[{ev.e.engine, ev.module}] = ev.e.module_id;
      }
      if (ev.e.kind == EventKind::Gather) {
        param_ids[{ev.e.engine, ev.param}] = ev.e.param_id;
      }
    }
    // Engine 1: Model 0, Adapter 1, base 2, adapter_A 3, adapter_B 4 (depth-first children()).
    CHECK(module_ids[{0, "<root>"}] == 0);
    CHECK(module_ids[{0, "adapter"}] == 1);
    CHECK(module_ids[{0, "adapter.base"}] == 2);
    CHECK(module_ids[{0, "adapter.adapter_A"}] == 3);
    CHECK(module_ids[{0, "adapter.adapter_B"}] == 4);
    // Engine 2: the root takes the counter's current value (4) without incrementing.
    CHECK(module_ids[{1, "<root>"}] == 4);
    CHECK(module_ids[{1, "adapter"}] == 5);
    CHECK(module_ids[{1, "adapter.base"}] == 6);
    CHECK(module_ids[{1, "adapter.adapter_A"}] == 7);
    CHECK(module_ids[{1, "adapter.adapter_B"}] == 8);
    // Param ids are never reset (1.7): a fresh model continues at 3.
    CHECK(param_ids[{0, "adapter.base.weight"}] == 0);
    CHECK(param_ids[{0, "adapter.adapter_A.weight"}] == 1);
    CHECK(param_ids[{0, "adapter.adapter_B.weight"}] == 2);
    CHECK(param_ids[{1, "adapter.base.weight"}] == 3);
    CHECK(param_ids[{1, "adapter.adapter_A.weight"}] == 4);
    CHECK(param_ids[{1, "adapter.adapter_B.weight"}] == 5);
  }

  TEST_CASE("10.19 re-using the model object keeps params' ids and the Adapter's externals") {
    model::LoadResult loaded =
        model::load_scenario_file(std::string(ZFETCH_SOURCE_DIR) + "/" + kSeed);
    REQUIRE(loaded.scenario);
    std::ifstream in(std::string(ZFETCH_SOURCE_DIR) + "/" + kSeed);
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    const size_t at = yaml.find("  - restart ");
    REQUIRE(at != std::string::npos);
    yaml.replace(at, yaml.find('\n', at) - at, "  - restart: {reuse_model: true}");
    // A3: with the same model object, adapter_A.weight is still an external of the Adapter from
    // engine 1, so engine 2 never fails the queue check. The backward hook classes were bound to
    // engine 1's coordinator (2.3): engine 2's coordinator sees only forward and replay hooks,
    // and engine 1's, whose trace is complete with 14 occurrences and whose step_id is never
    // reset again (no root hook of its own), runs off its trace at the first backward hook:
    // one soft invalidation (3.4 #1), after which it stays INVALID.
    const Run run = simulate_text(yaml, Discovery::ResidentSkip);
    CHECK(run.outcome.kind == OutcomeKind::TraceInvalidated);
    CHECK(run.outcome.invalidations == 1);
    CHECK(!run.outcome.failure);
    for (const OwnedEvent& ev : select(run, EventKind::Gather, 1)) {
      CHECK(ev.e.param_id < 3);  // converted params keep their ids (1.7)
    }
    // Engine 2's trace: forward M AD BASE LA LB (s0-s4) and the replay AD BASE LA LB (s5-s8), no
    // backward occurrences; AD lists Aw (external since engine 1): Aw@1 W0@2 Aw@3 Bw@4 Aw@5 W0@6
    // Aw@7 Bw@8.
    const auto completes = select(run, EventKind::TraceComplete, 1);
    REQUIRE(!completes.empty());
    CHECK(completes.front().e.numel == 8);
  }

  TEST_CASE(
      "10.3 the param trace is built at the next root forward with the externals known then") {
    // Engine 1: Aw is discovered at AD's forward, after AD's first occurrence (s1), and still
    // appears at all three AD occurrences: 9 entries from own params + Aw@1, Aw@6, Aw@10.
    const Run pre = simulate_file(kSeed, Discovery::ResidentSkip);
    const auto e1 = select(pre, EventKind::TraceComplete, 0);
    REQUIRE(e1.size() == 1);
    CHECK(e1[0].e.micro_step == 1);
    CHECK(e1[0].e.numel == 12);
    // Engine 2 pre-fix: Aw was resident at the access, never discovered in the RECORD pass.
    const auto e2 = select(pre, EventKind::TraceComplete, 1);
    REQUIRE(e2.size() == 1);
    CHECK(e2[0].e.numel == 9);
    const Run fixed = simulate_file(kSeed, Discovery::ResidencyIndependent);
    const auto e2_fixed = select(fixed, EventKind::TraceComplete, 1);
    REQUIRE(e2_fixed.size() == 1);
    CHECK(e2_fixed[0].e.numel == 12);
  }

  TEST_CASE("10.4 steps count fetches: parameter-less modules, backward pre-hooks, k outputs") {
    const Run run = simulate_text(scenario("    stage3_max_reuse_distance: 0",
                                           R"(  name: model
  children:
    - {name: act}
    - {name: lin, outputs: 2, params: {weight: [4, 4]}})",
                                           "  - train: {steps: 1}"));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    // Reverse creation order: root's PreBackward (newest), lin's two PreBackwards, lin's
    // PostBackward, act's PreBackward, act's and root's PostBackward.
    check_lines(pass_lines(run, 0, {EventKind::Fetch, EventKind::BackwardPost}),
                {"fetch m=<root> s=0", "fetch m=act s=1", "fetch m=lin s=2", "fetch m=<root> s=3",
                 "fetch m=lin s=4", "fetch m=lin s=5", "backward_post m=lin s=6", "fetch m=act s=6",
                 "backward_post m=act s=7", "backward_post m=<root> s=7"});
  }

  TEST_CASE("10.5 RECORD passes release persistent params, COMPLETE passes do not") {
    // weight (16) <= threshold (100000 by default): persistent.
    const Run run = simulate_text(
        scenario("    stage3_prefetch_bucket_size: 0\n    stage3_max_reuse_distance: 0", kTwoLayers,
                 "  - train: {steps: 1}", 1, 3));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    check_lines(forward_lines(run, 0, {EventKind::ModulePost, EventKind::Release}),
                {"module_post m=l1 s=2", "release p=l1.weight", "module_post m=l2 s=3",
                 "release p=l2.weight", "module_post m=<root> s=3"});
    for (int mu : {1, 2}) {
      CAPTURE(mu);
      CHECK(pass_lines(run, mu, {EventKind::Release}).empty());
    }
    // The gathers of µ2 make them resident for good; µ3 gathers nothing.
    CHECK(pass_lines(run, 1, {EventKind::Gather}) ==
          std::vector<std::string>{"gather p=l1.weight", "gather p=l2.weight"});
    CHECK(pass_lines(run, 2, {EventKind::Gather}).empty());
  }

  TEST_CASE("10.6 getter gathers bypass the coordinator: no queue pop, no consumer entry") {
    // Engine 2 µ2 pre-fix: between BASE's post-forward and LA's fetch the getter registers Aw
    // on AD and gathers it synchronously; LA's fetch then gathers nothing but still pops Aw@3.
    const Run run = simulate_file(kSeed, Discovery::ResidentSkip);
    const auto got = lines(run, [](const OwnedEvent& ev) {
      return ev.e.engine == 1 && ev.e.micro_step == 1 && ev.e.phase == Phase::Fwd &&
             ev.e.kind != EventKind::Wait && ev.e.kind != EventKind::Compute;
    });
    const auto from = std::find(got.begin(), got.end(), "module_post m=adapter.base s=3");
    REQUIRE(from != got.end());
    check_lines(std::vector<std::string>(from, std::min(from + 7, got.end())),
                {"module_post m=adapter.base s=3", "release p=adapter.base.weight",
                 "access m=adapter p=adapter.adapter_A.weight",
                 "register_external m=adapter p=adapter.adapter_A.weight",
                 "getter_gather p=adapter.adapter_A.weight", "module_pre m=adapter.adapter_A s=3",
                 "fetch m=adapter.adapter_A s=3"});
    check_lines(
        std::vector<std::string>(std::min(from + 7, got.end()), std::min(from + 8, got.end())),
        {"queue_pop p=adapter.adapter_A.weight s=3"});
    // The failure message's consumer set of Aw is {5}: AD's replay fetch, not the getter.
    REQUIRE(run.outcome.failure);
    CHECK(run.outcome.failure->message.find("'active_sub_modules': {5}") != std::string::npos);
  }

  TEST_CASE("10.7 the queue check pops a positional window of |need| entries") {
    // Engine 2 µ2 pre-fix, s6: need = {Aw}; the window is one entry wide and holds W0@7,
    // although Aw@8 is the very next entry: the check fails instead of searching.
    const Run run = simulate_file(kSeed, Discovery::ResidentSkip);
    const auto pops = lines(run, [](const OwnedEvent& ev) {
      return ev.e.engine == 1 && ev.e.micro_step == 1 && ev.e.phase == Phase::Recompute &&
             (ev.e.kind == EventKind::QueuePop || ev.e.kind == EventKind::Mismatch);
    });
    check_lines(pops, {"queue_pop p=adapter.base.weight s=7", "mismatch m=adapter s=6"});
  }

  TEST_CASE("10.8 release decisions are memoized per (module, step) at first use") {
    // w1 (4) persistent, w2, w3 (16) not; prefetch bucket 4, reuse distance 0.
    // Queue: w1@1 w2@2 w3@3 | w3@5 w2@6 w1@7 (backward: root s4, l3 s5, l2 s6, l1 s7).
    // µ2 (all NA at start): the prefetch at s2 pops only w3@3, so at l2's post-forward (step 3)
    //   most_recent[w2] = 2 <= 3: (l2, 3) -> release {w2}, memoized.
    // µ3 (w1 resident): prefetch rounds skip w1 without using budget, so the round at s2 pops
    //   w3@5 w2@6 w1@7 and most_recent[w2] = 6 > 3: a fresh computation would keep w2 (the
    //   skipped-reuse rule), but the memo from µ2 releases it, and l2's backward fetch at s6
    //   must gather it again (its need is empty: the entry was popped).
    const Run run = simulate_text(scenario(R"(    stage3_param_persistence_threshold: 4
    stage3_prefetch_bucket_size: 4
    stage3_max_reuse_distance: 0)",
                                           R"(  name: model
  children:
    - {name: l1, params: {weight: [4]}}
    - {name: l2, params: {weight: [4, 4]}}
    - {name: l3, params: {weight: [4, 4]}})",
                                           "  - train: {steps: 1}", 1, 3));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    const std::vector<EventKind> kinds = {EventKind::ModulePost, EventKind::Release,
                                          EventKind::Fetch, EventKind::Gather};
    auto l2_lines = [&](int mu) {
      return lines(run, [&](const OwnedEvent& ev) {
        return in_pass(ev, mu) && std::find(kinds.begin(), kinds.end(), ev.e.kind) != kinds.end() &&
               (ev.module == "l2" || ev.param == "l2.weight");
      });
    };
    // µ2: prefetched at s1, released after the forward, prefetched again at s3 for the backward.
    check_lines(l2_lines(1), {"fetch m=l2 s=2", "module_post m=l2 s=3", "release p=l2.weight",
                              "fetch m=l2 s=6", "release p=l2.weight"});
    // µ3: the memoized release, then a gather (not a prefetch) by the backward fetch.
    check_lines(l2_lines(2), {"fetch m=l2 s=2", "module_post m=l2 s=3", "release p=l2.weight",
                              "fetch m=l2 s=6", "gather p=l2.weight", "release p=l2.weight"});
  }

  TEST_CASE("10.9 release requires an empty consumer set: a nested consumer keeps the param") {
    // The parent p reads c.weight (NA in µ1: discovered, registered on p). From µ2 on p fetches
    // it too, so c's post-forward cannot partition it; p's post-forward does.
    const Run run =
        simulate_text(scenario("    stage3_param_persistence_threshold: 0\n"
                               "    stage3_prefetch_bucket_size: 0\n"
                               "    stage3_max_reuse_distance: 0",
                               R"(  name: model
  children:
    - name: p
      children:
        - {name: c, params: {weight: [4, 4]}}
      forward:
        - access: c.weight
        - call: c)",
                               "  - train: {steps: 1}", 1, 2));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    check_lines(forward_lines(run, 0, {EventKind::ModulePost, EventKind::Release}),
                {"module_post m=p.c s=3", "release p=p.c.weight", "module_post m=p s=3",
                 "module_post m=<root> s=3"});
    check_lines(forward_lines(run, 1, {EventKind::ModulePost, EventKind::Release}),
                {"module_post m=p.c s=3", "module_post m=p s=3", "release p=p.c.weight",
                 "module_post m=<root> s=3"});
  }

  TEST_CASE("10.10 recompute attribution: the most recently inserted active-backward module") {
    // Reentrant: the replay runs inside M's backward node: W0 goes to M (7.6 s7).
    const Run reentrant = simulate_file(kSeed, Discovery::ResidencyIndependent);
    for (const OwnedEvent& ev : select(reentrant, EventKind::RecomputeAttach)) {
      CHECK(ev.module == "<root>");
      CHECK(ev.param == "adapter.base.weight");
    }
    CHECK(select(reentrant, EventKind::RecomputeAttach).size() == 8);  // one per micro-step
    // Non-reentrant: the replay runs lazily inside LB's backward, after M, AD, LB were inserted:
    // W0 goes to LB (docs/deepspeed-validation.md, settled fact 14).
    const Run lazy = simulate_file("tests/golden/nonreentrant_adapter_resume.yaml",
                                   Discovery::ResidencyIndependent);
    const auto attaches = select(lazy, EventKind::RecomputeAttach);
    CHECK(attaches.size() == 8);
    for (const OwnedEvent& ev : attaches) {
      CHECK(ev.module == "adapter.adapter_B");
    }
  }

  TEST_CASE("10.11 dangling returned params are never released by hooks, only by partition-all") {
    const Run run = simulate_text(scenario("    stage3_param_persistence_threshold: 0",
                                           R"(  name: model
  children:
    - name: c
      params: {weight: [4, 4], bias: [4]}
      forward:
        - returns: bias)",
                                           "  - train: {steps: 2}", 1, 2));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    const auto registrations = select(run, EventKind::RegisterExternal);
    REQUIRE(registrations.size() == 1);  // handed to the root once; re-registration is a no-op
    CHECK(registrations[0].module == "<root>");
    CHECK(registrations[0].param == "c.bias");
    int releases = 0;
    int partition_all = 0;
    for (const OwnedEvent& ev : run.events) {
      releases += ev.e.kind == EventKind::Release && ev.param == "c.bias" ? 1 : 0;
      partition_all += ev.e.kind == EventKind::PartitionAll && ev.param == "c.bias" ? 1 : 0;
    }
    CHECK(releases == 0);
    CHECK(partition_all == 2);  // one per optimizer step
    // c.weight, an ordinary param, is released by c's hooks.
    CHECK(!pass_lines(run, 0, {EventKind::Release}).empty());
  }

  TEST_CASE("10.12 n_available only bounds prefetch; a fetch is never blocked") {
    // max_live 16: the root's prefetch round (budget 16) takes w1 only, although the bucket
    // allows more. Default reuse distance keeps w1 (used again in backward), so n_available is
    // 16 at l2's fetch, which still gathers w2 (n_available 32 > max_live).
    const Run run = simulate_text(scenario(R"(    stage3_param_persistence_threshold: 0
    stage3_max_live_parameters: 16
    stage3_prefetch_bucket_size: 1000)",
                                           kTwoLayers, "  - train: {steps: 1}", 1, 2));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    check_lines(pass_lines(run, 1, {EventKind::Fetch, EventKind::Prefetch, EventKind::Gather}),
                {"fetch m=<root> s=0", "prefetch p=l1.weight", "fetch m=l1 s=1", "fetch m=l2 s=2",
                 "gather p=l2.weight", "fetch m=<root> s=3", "fetch m=l2 s=4", "fetch m=l1 s=5"});
  }

  TEST_CASE("10.13 the default max_reuse_distance keeps params resident until backward") {
    const std::string zero =
        "    stage3_param_persistence_threshold: 0\n"
        "    stage3_prefetch_bucket_size: 0\n";
    const Run kept = simulate_text(scenario(zero, kTwoLayers, "  - train: {steps: 1}", 1, 2));
    const Run dropped = simulate_text(scenario(zero + "    stage3_max_reuse_distance: 0",
                                               kTwoLayers, "  - train: {steps: 1}", 1, 2));
    auto forward_releases = [](const Run& run) {
      return lines(run, [](const OwnedEvent& ev) {
        return ev.e.micro_step == 1 && ev.e.phase == Phase::Fwd && ev.e.kind == EventKind::Release;
      });
    };
    CHECK(forward_releases(kept).empty());
    CHECK(forward_releases(dropped) ==
          std::vector<std::string>{"release p=l1.weight", "release p=l2.weight"});
    // With the default, each weight is released by its own post-backward instead.
    check_lines(pass_lines(kept, 1, {EventKind::BackwardPost, EventKind::Release}),
                {"backward_post m=l2 s=5", "release p=l2.weight", "backward_post m=l1 s=6",
                 "release p=l1.weight", "backward_post m=<root> s=6"});
  }

  TEST_CASE("10.14 prefetch pops resident entries too (and gathers only NA params)") {
    // w1 (4) persistent: resident from µ2 on. In µ3 the root's prefetch round pops the whole
    // queue (w1@1 w2@2 w2@4 w1@5), gathers only w2, and raises most_recent of w1 as well, so no
    // later queue check pops anything.
    const Run run = simulate_text(scenario(R"(    stage3_param_persistence_threshold: 4
    stage3_prefetch_bucket_size: 1000)",
                                           R"(  name: model
  children:
    - {name: l1, params: {weight: [4]}}
    - {name: l2, params: {weight: [4, 4]}})",
                                           "  - train: {steps: 1}", 1, 3));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    CHECK(pass_lines(run, 1, {EventKind::Prefetch}) ==
          std::vector<std::string>{"prefetch p=l1.weight", "prefetch p=l2.weight"});
    CHECK(pass_lines(run, 2, {EventKind::Prefetch}) ==
          std::vector<std::string>{"prefetch p=l2.weight"});
    // Those four pops are the prefetch round's, at the root's fetch; nothing is gathered.
    CHECK(pass_lines(run, 2, {EventKind::QueuePop, EventKind::Gather}) ==
          std::vector<std::string>{"queue_pop p=l1.weight s=1", "queue_pop p=l2.weight s=2",
                                   "queue_pop p=l2.weight s=4", "queue_pop p=l1.weight s=5"});
  }

  TEST_CASE("10.3 two root forwards before one backward: the eval pass is the recorded trace") {
    // The eval pass (INVALID -> RECORD) records 3 forward occurrences; the train pass checks
    // against them and runs off the end at its first backward hook (3.4 #1), invalidating; the
    // next pass records again.
    const Run run = simulate_text(scenario("    log_trace_cache_warnings: true", kTwoLayers,
                                           "  - eval: {passes: 1}\n  - train: {steps: 1}", 1, 2));
    CHECK(run.outcome.kind == OutcomeKind::TraceInvalidated);
    CHECK(run.outcome.invalidations == 1);
    CHECK(run.outcome.warnings ==
          std::vector<std::string>{
              "Invalidate trace cache @ step 3 and module 0: cache has only 3 modules"});
    const auto invalidations = select(run, EventKind::TraceInvalidate);
    REQUIRE(invalidations.size() == 1);
    CHECK(invalidations[0].e.phase == Phase::Bwd);
    CHECK(invalidations[0].e.micro_step == 0);
    const auto records = select(run, EventKind::TraceRecord);
    REQUIRE(records.size() == 2);
    CHECK(records[0].e.phase == Phase::Eval);
    CHECK(records[1].e.micro_step == 1);
  }

  TEST_CASE("10.15 a trace change in COMPLETE mode invalidates; the next pass re-records") {
    const Run run =
        simulate_text(scenario("    log_trace_cache_warnings: true",
                               a_then_b_when("{micro_step: 2}"), "  - train: {steps: 1}", 1, 4));
    CHECK(run.outcome.kind == OutcomeKind::TraceInvalidated);
    CHECK(run.outcome.invalidations == 1);
    // µ3: s0 root, s1 a, s2 b where the trace has the root's pre-backward (3.4 #2).
    CHECK(run.outcome.warnings ==
          std::vector<std::string>{
              "Invalidate trace cache @ step 2: expected module 0, but got module 2"});
    const auto invalidations = select(run, EventKind::TraceInvalidate);
    REQUIRE(invalidations.size() == 1);
    CHECK(invalidations[0].module == "b");
    CHECK(invalidations[0].e.micro_step == 2);
    CHECK(invalidations[0].e.trace_step == 2);
    std::vector<int> records;
    for (const OwnedEvent& ev : select(run, EventKind::TraceRecord)) {
      records.push_back(ev.e.micro_step);
    }
    CHECK(records == std::vector<int>{0, 3});
    // The rest of µ3 is untraced: nothing is popped after the invalidation.
    bool invalidated = false;
    bool popped_after = false;
    for (const OwnedEvent& ev : run.events) {
      invalidated = invalidated || ev.e.kind == EventKind::TraceInvalidate;
      popped_after =
          popped_after || (invalidated && ev.e.micro_step == 2 && ev.e.kind == EventKind::QueuePop);
    }
    CHECK(invalidated);
    CHECK(!popped_after);
  }

  TEST_CASE("10.15 rank divergence at a non-COMPLETE reset: the 3.4 #8 messages") {
    // a and b have no params, so the ranks' gathers agree and the first differing collective
    // is the module-id agreement at µ2's reset (RECORD -> COMPLETE).
    // Modules a and b without params, then l with one; `a_when` and `b_when` condition the
    // calls of a and b ("" calls it always).
    const auto divergent = [](std::string_view a_when, std::string_view b_when, int micro_steps) {
      const auto call = [](std::string_view name, std::string_view when) {
        return fmt::format("    - call: {}\n", name) +
               (when.empty() ? "" : fmt::format("      when: {}\n", when));
      };
      const std::string model =
          "  name: model\n  children:\n    - {name: a}\n    - {name: b}\n"
          "    - {name: l, params: {weight: [4, 4]}}\n  forward:\n" +
          call("a", a_when) + call("b", b_when) + "    - call: l";
      return simulate_text(scenario("", model, "  - train: {steps: 1}", 2, micro_steps));
    };
    SUBCASE("list length") {
      // Rank 1 also calls b: rank 0 records [0, 1, 3, 0, 3, 1], rank 1 [0, 1, 2, 3, 0, 3, 2, 1].
      const Run run = divergent("", "{rank: 1}", 2);
      CHECK(run.outcome.kind == OutcomeKind::RankDivergence);
      REQUIRE(run.outcome.failure);
      CHECK(run.outcome.failure->rank == 1);
      CHECK(run.outcome.failure->message ==
            "Detected a disagreement on list length between rank0 and rank1: \n rank0: 6 \n "
            "rank1: 8");
    }
    SUBCASE("list contents") {
      // Rank 1 calls b instead of a: [0, 1, 3, 0, 3, 1] against [0, 2, 3, 0, 3, 2].
      const Run run = divergent("{rank: 0}", "{rank: 1}", 2);
      CHECK(run.outcome.kind == OutcomeKind::RankDivergence);
      REQUIRE(run.outcome.failure);
      CHECK(run.outcome.failure->message ==
            "Detected a disagreement on list contents between rank0 and rank1: \n list length: "
            "6\n rank0: [0, 1, 3, 0, 3, 1] \n rank1: [0, 2, 3, 0, 3, 2]");
    }
    SUBCASE("a rank-dependent gather hangs before any agreement check") {
      // b has a param: rank 1's extra all-gather has no partner on rank 0 (10.15).
      const Run run =
          simulate_text(scenario("", a_then_b_when("{rank: 1}"), "  - train: {steps: 1}", 2, 2));
      CHECK(run.outcome.kind == OutcomeKind::Hang);
    }
    SUBCASE("divergence first seen in COMPLETE mode hangs") {
      // µ2 only: rank 1 invalidates and runs the agreement check at µ3's reset; rank 0 does not.
      const Run run = divergent("", "{rank: 1, micro_step: 1}", 3);
      CHECK(run.outcome.kind == OutcomeKind::Hang);
    }
  }

  TEST_CASE("10.17 root hook order: reset_step before the root's pre-forward and fetch") {
    const Run run = simulate_text(scenario("", kTwoLayers, "  - train: {steps: 1}", 1, 2));
    for (int mu : {0, 1}) {
      const auto got = lines(run, [&](const OwnedEvent& ev) { return in_pass(ev, mu); });
      REQUIRE(got.size() >= 4);
      CHECK(got[0] == "pass_start");
      CHECK(got[1] == (mu == 0 ? "trace_record" : "trace_complete"));
      CHECK(got[2] == "module_pre m=<root> s=0");
      CHECK(got[3] == "fetch m=<root> s=0");
    }
  }

  TEST_CASE("10.18 discovery only in engine forwards, never in replays or backward") {
    for (Discovery d : {Discovery::ResidentSkip, Discovery::ResidencyIndependent}) {
      CAPTURE(format_as(d));
      const Run run = simulate_file(kSeed, d);
      int replay_accesses = 0;
      for (const OwnedEvent& ev : run.events) {
        replay_accesses += ev.e.kind == EventKind::Access && ev.e.phase == Phase::Recompute;
        if (ev.e.kind == EventKind::RegisterExternal || ev.e.kind == EventKind::GetterGather) {
          CHECK(ev.e.phase == Phase::Fwd);
        }
      }
      CHECK(replay_accesses > 0);  // the replay does read Aw (NA in engine 2 µ1 pre-fix)
    }
  }

  TEST_CASE("2.5 a module called 3 times: post-backward fires once, at the last call's gradient") {
    const Run run = simulate_text(scenario("", R"(  name: model
  children:
    - {name: l, params: {weight: [4, 4]}}
  forward:
    - repeat: 3
      body: [{call: l}])",
                                           "  - train: {steps: 1}"));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    // ds_grads_remaining is reset to 0 at every call, so only the third call's PostBackward node
    // (the first to run) brings it to exactly 0; the two older ones drive it negative.
    check_lines(pass_lines(run, 0, {EventKind::BackwardPre, EventKind::BackwardPost}),
                {"backward_pre m=<root> s=4", "backward_pre m=l s=5", "backward_post m=l s=6",
                 "backward_pre m=l s=6", "backward_pre m=l s=7", "backward_post m=<root> s=8"});
  }

  TEST_CASE("2.11 the optimizer step partitions everything, then regathers persistent params") {
    const Run run = simulate_file(kSeed, Discovery::ResidencyIndependent);
    const auto got = lines(run, [](const OwnedEvent& ev) {
      return ev.e.engine == 0 && ev.e.phase == Phase::Optimizer;
    });
    // W0 is already NA (released by M's post-backward); Aw, Bw are resident and persistent.
    check_lines(got, {"optimizer_step", "partition_all p=adapter.adapter_A.weight",
                      "partition_all p=adapter.adapter_B.weight",
                      "persistent_gather p=adapter.adapter_A.weight",
                      "persistent_gather p=adapter.adapter_B.weight"});
  }

  TEST_CASE("4.8 a granularity-threshold leaf is fetched with its subtree; below it, no hooks") {
    // b: (16 + 16) params over 2 + 1 layers = 10 <= 10; the root: 1632 // 5 = 326 (2.1).
    const Run run = simulate_text(scenario(R"(    stage3_module_granularity_threshold: 10
    stage3_param_persistence_threshold: 0
    stage3_prefetch_bucket_size: 0)",
                                           R"(  name: model
  children:
    - name: b
      children:
        - {name: x, params: {weight: [4, 4]}}
        - {name: y, params: {weight: [4, 4]}}
    - {name: c, params: {weight: [40, 40]}})",
                                           "  - train: {steps: 1}"));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    check_lines(forward_lines(run, 0, {EventKind::ModulePre, EventKind::Gather}),
                {"module_pre m=<root> s=0", "module_pre m=b s=1", "gather p=b.x.weight",
                 "gather p=b.y.weight", "module_pre m=c s=2", "gather p=c.weight"});
    for (const OwnedEvent& ev : run.events) {
      CAPTURE(ev.module);
      CHECK_FALSE(ev.module.starts_with("b."));
    }
  }

  TEST_CASE("10.19 a re-used model's trainable params are partitioned by the new engine") {
    // Both weights persist (16 elements). The new engine's optimizer gathers and partitions every
    // trainable param when it hooks its gradient, outside the coordinator: at the load only the
    // frozen f is still resident and partitioned by release_and_reset_all; both are regathered.
    const Run run = simulate_text(scenario("",
                                           R"(  name: model
  children:
    - {name: a, params: {weight: [4, 4]}}
    - {name: f, params: {weight: {shape: [4, 4], frozen: true}}})",
                                           R"(  - train: {steps: 1}
  - save_checkpoint: t
  - restart: {reuse_model: true}
  - load_checkpoint: t)"));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    std::vector<std::string> engine1;
    for (const OwnedEvent& ev : run.events) {
      if (ev.e.engine == 1 &&
          (ev.e.kind == EventKind::PartitionAll || ev.e.kind == EventKind::PersistentGather)) {
        engine1.push_back(fmt::format("{} {}", trace::format_as(ev.e.kind), ev.param));
      }
    }
    check_lines(engine1, {"partition_all f.weight", "persistent_gather a.weight",
                          "persistent_gather f.weight"});
  }

  TEST_CASE("2.9 backward leftovers release the module's externals too (iter_params)") {
    // The root's post-backward never fires (nothing it owns needs grad); the drain releases
    // linear1.weight, an external of the root registered by the getter, before the step.
    const Run run = simulate_file("scenarios/deepspeed_tests/ext_param_getattr.yaml");
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    const auto lines_bwd = lines(run, [](const OwnedEvent& ev) {
      return ev.e.micro_step == 0 && ev.e.phase == Phase::Bwd && ev.e.kind == EventKind::Release;
    });
    check_lines(lines_bwd, {"release p=linear2.weight", "release p=linear2.bias",
                            "release p=linear1.bias", "release p=linear1.weight"});
  }

  TEST_CASE("2.7 a non-reentrant region that saved nothing is never recomputed") {
    // The block's weight is frozen and the input needs no grad: its op records no node.
    const Run run = simulate_file(
        "scenarios/deepspeed_tests/ac_lifecycle-no_grad_checkpoint_input_direct_backward.yaml");
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    for (const OwnedEvent& ev : run.events) {
      CHECK(ev.e.phase != Phase::Recompute);
    }
    // With an input that needs grad, the same region is recomputed in each backward.
    model::LoadResult loaded = model::load_scenario_file(
        std::string(ZFETCH_SOURCE_DIR) +
        "/scenarios/deepspeed_tests/ac_lifecycle-no_grad_checkpoint_input_direct_backward.yaml");
    REQUIRE(loaded.scenario.has_value());
    loaded.scenario->input_requires_grad = true;
    VectorSink sink;
    const Outcome outcome = simulate(*loaded.scenario, Options{}, sink);
    CHECK(outcome.kind == OutcomeKind::Pass);
    int recompute_pre = 0;
    for (const OwnedEvent& ev : sink.events) {
      recompute_pre += ev.e.phase == Phase::Recompute && ev.e.kind == EventKind::ModulePre ? 1 : 0;
    }
    CHECK(recompute_pre == 4);  // block, in each of the 4 micro-steps
  }

  TEST_CASE("5.3 a returned trainable param gets its own pre-backward hook") {
    // d_linear returns (out, bias) and dangler returns (out, d_linear.bias): two wrapped tensors
    // requiring grad each, so two pre-backward firings each; container and the root return one.
    const Run run = simulate_file("scenarios/deepspeed_tests/ext_param_return.yaml");
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    check_lines(pass_lines(run, 0, {EventKind::BackwardPre}),
                {"backward_pre m=<root> s=5", "backward_pre m=container s=6",
                 "backward_pre m=container.dangler s=7", "backward_pre m=container.dangler s=8",
                 "backward_pre m=container.dangler.d_linear s=9",
                 "backward_pre m=container.dangler.d_linear s=10",
                 "backward_pre m=container.linear1 s=11"});
  }

  TEST_CASE("2.7 a reentrant checkpoint inside a non-reentrant one: the outer replay comes first") {
    // CheckpointFunction's saved inputs belong to the outer region: its backward unpacks them,
    // which replays l1 and the inner no_grad forward of l2, then the inner replay runs l2 again.
    const Run run = simulate_file("scenarios/validation/v09_nested_checkpoints.yaml");
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    const auto recompute = lines(run, [](const OwnedEvent& ev) {
      return ev.e.micro_step == 0 && ev.e.phase == Phase::Recompute &&
             ev.e.kind == EventKind::ModulePre;
    });
    check_lines(recompute, {"module_pre m=l1 s=7", "module_pre m=l2 s=8", "module_pre m=l2 s=9"});
  }

  TEST_CASE("8 stage3_allgather_sequential forces the prefetch bucket to one element") {
    // Each prefetch round stops after its first NA entry: l0.weight is prefetched at the root,
    // l0.bias is left to l0's own fetch, and so on (engine._configure_zero_optimizer).
    const Run run = simulate_file("scenarios/validation/v25_allgather_sequential.yaml");
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    const auto gathers = lines(run, [](const OwnedEvent& ev) {
      return ev.e.micro_step == 1 && ev.e.phase == Phase::Fwd &&
             (ev.e.kind == EventKind::Prefetch || ev.e.kind == EventKind::Gather);
    });
    check_lines(gathers, {"prefetch p=l0.weight", "gather p=l0.bias", "prefetch p=l1.weight",
                          "gather p=l1.bias", "prefetch p=l2.weight", "gather p=l2.bias",
                          "prefetch p=l3.weight", "gather p=l3.bias"});
  }

  TEST_CASE("3.4 an invalidation cleans the in-flight registry without wait events") {
    // µ3 skips l2: the prefetched l2 and l3 params are released by the clean, which waits on
    // their handles directly (no registry pop, so no wait event).
    const Run run = simulate_file("scenarios/validation/v18_trace_change.yaml");
    CHECK(run.outcome.kind == OutcomeKind::TraceInvalidated);
    bool after_invalidation = false;
    int releases = 0;
    for (const OwnedEvent& ev : run.events) {
      if (ev.e.kind == EventKind::TraceInvalidate) {
        after_invalidation = true;
        continue;
      }
      if (!after_invalidation) {
        continue;
      }
      if (ev.e.kind != EventKind::Release) {
        break;
      }
      ++releases;
    }
    CHECK(after_invalidation);
    CHECK(releases >= 2);
  }

  TEST_CASE("4.8 a checkpoint saved with fast-sharded leaf params does not load into a new model") {
    // The threshold makes the root the leaf, so fast sharding releases every non-persistent
    // param to a 1-element buffer, which the module state_dict saves; the new model's params
    // are partitioned ([0]).
    const Run run = simulate_file("scenarios/validation/v36_granularity_lora_resume.yaml");
    CHECK(run.outcome.kind == OutcomeKind::Error);
    REQUIRE(run.outcome.failure.has_value());
    CHECK(run.outcome.failure->engine == 1);
    CHECK(run.outcome.failure->message ==
          "Error(s) in loading state_dict for LoraModel:\n\tsize mismatch for l0.base.weight: "
          "copying a param with shape torch.Size([1]) from checkpoint, the shape in current model "
          "is torch.Size([0]).\n\tsize mismatch for l1.base.weight: copying a param with shape "
          "torch.Size([1]) from checkpoint, the shape in current model is torch.Size([0]).\n\tsize "
          "mismatch for head.weight: copying a param with shape torch.Size([1]) from checkpoint, "
          "the shape in current model is torch.Size([0]).");
  }
}

}  // namespace
}  // namespace zfetch::sim::testing
