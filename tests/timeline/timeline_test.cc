// Hand-computed stream schedules: given these events, expect these times (exact ns).
#include "sim/timeline/timeline.h"

#include <doctest/doctest.h>

#include <initializer_list>
#include <map>
#include <utility>
#include <vector>

#include "sim/timeline/cost_model.h"
#include "sim/timeline/step_log.h"
#include "tests/timeline/timeline_test_util.h"

namespace zfetch::sim {
namespace {

using testing::Ev;
using testing::ScenarioBuilder;
using testing::VectorSink;
using trace::EventKind;
using trace::Phase;

void feed(Timeline& timeline, std::initializer_list<Ev> events) {
  for (const Ev& e : events) {
    timeline.on_event(e);
  }
}

// world=4, one fp32 param of 1'024 elements: 4'096 B, shard 1'024 B, gathered (padded) 4'096 B.
// all-gather = alpha + (3/4) * 4'096 B / (1 B/ns) = 1'000 + 3'072 = 4'072 ns.
constexpr Tick kGather4k = 4'072;

// `events` timed on `scenario` under `calibration`: the stamped events, the summary and the
// recording, all complete (the timeline is finished).
struct Timed {
  std::vector<trace::Event> events;
  TimelineSummary summary;
  Recording recording;
  [[nodiscard]] const StepSummary& step() const { return summary.steps.at(0); }
};
Timed time_events(const model::Scenario& scenario, std::initializer_list<Ev> events,
                  const Calibration& calibration = testing::round_calibration(),
                  TimelineOptions options = {}) {
  AnalyticalCostModel cost(scenario, calibration);
  VectorSink out;
  Timeline tl(scenario, cost, out, options);
  feed(tl, events);
  tl.finish();
  return {std::move(out.events), tl.summary(), tl.recording()};
}

// Module "a" (10 us) with param "w" (1'024 elements) fetched, gathered, waited on and computed
// once under `calibration`.
Timed one_fetch(ScenarioBuilder& b, const Calibration& calibration = testing::round_calibration(),
                TimelineOptions options = {}) {
  const auto [m, p] = b.weighted_module("a", 10, 1'024);
  return time_events(
      b.s,
      {Ev(EventKind::Fetch).module(m), Ev(EventKind::Gather).module(m).param(p).group(1),
       Ev(EventKind::Wait).module(m).param(p).group(1), Ev(EventKind::Compute).module(m)},
      calibration, options);
}

TEST_SUITE("timeline") {
  TEST_CASE("timeline: one fetch gathers, waits, then computes (no overlap)") {
    ScenarioBuilder b(4);
    const auto [m, p] = b.weighted_module("a", 10, 1'024);  // 10 us = 10'000 ns
    const Timed run = time_events(
        b.s, {Ev(EventKind::ModulePre).module(m), Ev(EventKind::Fetch).module(m),
              Ev(EventKind::Gather).module(m).param(p).group(1),
              Ev(EventKind::Wait).module(m).param(p).group(1), Ev(EventKind::Compute).module(m),
              Ev(EventKind::ModulePost).module(m), Ev(EventKind::Release).module(m).param(p)});
    // gather [0, 4'072) on comm; compute stalls to 4'072, runs [4'072, 14'072).
    REQUIRE(run.events.size() == 7);
    CHECK(run.events[2].t_ns == 0);
    CHECK(run.events[3].t_ns == kGather4k);
    CHECK(run.events[4].t_ns == kGather4k);
    CHECK(run.events[5].t_ns == kGather4k + 10'000);
    CHECK(run.events[6].t_ns == 14'072);
    REQUIRE(run.summary.steps.size() == 1);
    const StepSummary& s = run.step();
    CHECK(s.step_ns == 14'072);
    CHECK(s.compute_ns == 10'000);
    CHECK(s.exposed_comm_ns == kGather4k);
    CHECK(s.gathers == 1);
    CHECK(s.gathered_bytes == 4'096);
    CHECK(s.peak_live_bytes == 4'096);
    CHECK(run.summary.end_ns == 14'072);
  }

  TEST_CASE("timeline: a prefetch overlaps the current module's compute") {
    ScenarioBuilder b(4);
    const auto [ma, pa] = b.weighted_module("a", 10, 1'024);
    const auto [mb, pb] = b.weighted_module("b", 10, 1'024);
    const Timed run = time_events(
        b.s,
        {Ev(EventKind::Fetch).module(ma), Ev(EventKind::Gather).module(ma).param(pa).group(1),
         Ev(EventKind::Wait).module(ma).param(pa).group(1),
         Ev(EventKind::Prefetch).module(ma).param(pb).group(2), Ev(EventKind::Compute).module(ma),
         Ev(EventKind::ModulePost).module(ma), Ev(EventKind::Release).module(ma).param(pa),
         Ev(EventKind::Fetch).module(mb), Ev(EventKind::Wait).module(mb).param(pb).group(2),
         Ev(EventKind::Compute).module(mb)});
    // gather pa [0, 4'072); prefetch pb issued at 4'072, comm [4'072, 8'144);
    // compute a [4'072, 14'072) hides it: wait pb at 14'072 >= 8'144, no stall;
    // compute b [14'072, 24'072). Exposed = the first gather only.
    CHECK(run.events[3].t_ns == kGather4k);
    CHECK(run.events[8].t_ns == 14'072);
    CHECK(run.events[9].t_ns == 14'072);
    const StepSummary& s = run.step();
    CHECK(s.step_ns == 24'072);
    CHECK(s.exposed_comm_ns == kGather4k);
    CHECK(s.gathers == 2);
    // pa and pb are both live between the prefetch and pa's release.
    CHECK(s.peak_live_bytes == 8'192);
    CHECK(s.step_ns == s.compute_ns + s.exposed_comm_ns);
  }

  TEST_CASE("timeline: offload_param copies the shard on h2d before the gather") {
    ScenarioBuilder b(4);
    b.s.config.zero.offload_param.device = model::OffloadDevice::Cpu;
    const Timed run = one_fetch(b);
    // h2d: shard 1'024 B at 0.5 B/ns = 2'048 ns, [0, 2'048); comm [2'048, 6'120).
    CHECK(run.events[2].t_ns == 2'048 + kGather4k);
    CHECK(run.step().exposed_comm_ns == 6'120);
    CHECK(run.step().step_ns == 16'120);
  }

  TEST_CASE("timeline: a step's fixed cost runs on compute before its first event") {
    ScenarioBuilder b(4);
    Calibration c = testing::round_calibration();
    c.step_fixed_ns = 500;
    const Timed run = one_fetch(b, c);
    CHECK(run.events[1].t_ns == 500);  // the gather is issued after the fixed cost
    const StepSummary& s = run.step();
    CHECK(s.step_ns == 500 + 14'072);
    CHECK(s.compute_ns == 500 + 10'000);  // counted as compute: step = compute + exposed
    CHECK(s.exposed_comm_ns == kGather4k);
  }

  TEST_CASE("timeline: a gather of odd params is costed by the odd curve") {
    ScenarioBuilder b(4);
    const auto m = b.module("a", 10);
    const auto aligned = b.param(m, "w", 1'024);  // 256 fp32 a rank: whole 16-byte vectors
    const auto odd = b.param(m, "v", 1'023);      // the last rank's slice is 255 elements
    Calibration c = testing::round_calibration();
    c.allgather.curve = {{0, 1'000}, {10'000, 2'000}};
    c.allgather.odd_curve = {{0, 3'000}, {10'000, 4'000}};
    const Timed run = time_events(
        b.s,
        {Ev(EventKind::Fetch).module(m), Ev(EventKind::Gather).module(m).param(aligned).group(1),
         Ev(EventKind::Gather).module(m).param(odd).group(1),
         Ev(EventKind::Wait).module(m).param(odd).group(1)},
        c);
    // 8'192 gathered bytes, half of them odd: 1'819 + (3'819 - 1'819) / 2.
    CHECK(run.events[3].t_ns == 2'819);
  }

  TEST_CASE("timeline: an h2d alpha is paid once per offloaded gather") {
    ScenarioBuilder b(4);
    b.s.config.zero.offload_param.device = model::OffloadDevice::Cpu;
    Calibration c = testing::round_calibration();
    c.h2d_alpha_ns = 2'500;
    const Timed run = one_fetch(b, c);
    // h2d: 2'500 + 1'024 B at 0.5 B/ns = 4'548 ns, [0, 4'548); comm [4'548, 8'620).
    CHECK(run.events[2].t_ns == 4'548 + kGather4k);
    CHECK(run.step().exposed_comm_ns == 8'620);
    CHECK(run.step().step_ns == 18'620);
  }

  TEST_CASE("timeline: world size 1 gathers cost nothing") {
    ScenarioBuilder b(1);
    SUBCASE("no offload: no communication at all") {
      const Timed run = one_fetch(b);
      CHECK(run.events[2].t_ns == 0);
      CHECK(run.step().step_ns == 10'000);
      CHECK(run.step().exposed_comm_ns == 0);
      // The "gather" still makes the full param live (4'096 B).
      CHECK(run.step().peak_live_bytes == 4'096);
    }
    SUBCASE("offload: the host copy remains") {
      b.s.config.zero.offload_param.device = model::OffloadDevice::Nvme;
      const Timed run = one_fetch(b);
      // W=1: shard = full = 4'096 B at 2 ns/B = 8'192 ns.
      CHECK(run.events[2].t_ns == 8'192);
      CHECK(run.step().step_ns == 18'192);
    }
  }

  TEST_CASE("timeline: two gathers contend for the comm stream in issue order") {
    ScenarioBuilder b(4);
    const auto [ma, pa] = b.weighted_module("a", 1, 1'024);
    const auto [mb, pb] = b.weighted_module("b", 1, 2'048);
    const Timed run = time_events(
        b.s, {Ev(EventKind::Fetch).module(ma), Ev(EventKind::Gather).module(ma).param(pa).group(1),
              Ev(EventKind::Prefetch).module(ma).param(pb).group(2),
              Ev(EventKind::Wait).module(ma).param(pb).group(2)});
    // g1 [0, 4'072); g2 (8'192 B: 1'000 + 6'144 = 7'144 ns) waits for comm: [4'072, 11'216).
    CHECK(run.events[1].t_ns == 0);
    CHECK(run.events[2].t_ns == 0);
    CHECK(run.events[3].t_ns == 11'216);
    CHECK(run.step().gathers == 2);
  }

  TEST_CASE("timeline: the params of one group are one coalesced collective") {
    ScenarioBuilder b(4);
    const auto [m, p0] = b.weighted_module("a", 1, 1'024);
    const auto p1 = b.param(m, "b", 1'024);
    const Timed run = time_events(
        b.s, {Ev(EventKind::Fetch).module(m), Ev(EventKind::Gather).module(m).param(p0).group(7),
              Ev(EventKind::Gather).module(m).param(p1).group(7),
              Ev(EventKind::Wait).module(m).param(p0).group(7),
              Ev(EventKind::Wait).module(m).param(p1).group(7)});
    // one alpha for 8'192 B: 1'000 + 6'144 = 7'144 ns (two calls would take 8'144).
    CHECK(run.events[3].t_ns == 7'144);
    CHECK(run.events[4].t_ns == 7'144);
    CHECK(run.step().gathers == 1);
    CHECK(run.step().gathered_params == 2);
  }

  TEST_CASE("timeline: a getter gather blocks compute until it ends") {
    ScenarioBuilder b(4);
    const auto ma = b.module("a", 10);
    const auto [mb, pb] = b.weighted_module("b", 10, 1'024);
    const Timed run =
        time_events(b.s, {Ev(EventKind::Fetch).module(ma), Ev(EventKind::Compute).module(ma),
                          Ev(EventKind::Access).module(ma).param(pb),
                          Ev(EventKind::GetterGather).module(ma).param(pb),
                          Ev(EventKind::GetterGather).module(ma).param(pb),
                          Ev(EventKind::ModulePost).module(ma)});
    // compute a [0, 10'000); getter gather issued at 10'000, comm [10'000, 14'072), compute
    // stalls; the second (ungrouped) getter gather is its own call: [14'072, 18'144).
    CHECK(run.events[3].t_ns == 10'000);
    CHECK(run.events[4].t_ns == 14'072);
    CHECK(run.events[5].t_ns == 18'144);
    CHECK(run.step().exposed_comm_ns == 2 * kGather4k);
    CHECK(run.step().gathers == 2);
    // The same param twice stays counted once.
    CHECK(run.step().peak_live_bytes == 4'096);
  }

  TEST_CASE("timeline: reduce-scatter runs on its own stream; the optimizer step waits") {
    ScenarioBuilder b(4);
    const auto [ma, pa] = b.weighted_module("a", 10, 1'024);
    b.param(ma, "frozen", 1'024, /*frozen=*/true);
    const auto mb = b.module("b", 1);
    const Timed run = time_events(b.s, {Ev(EventKind::BackwardPre, Phase::Bwd).module(ma),
                                        Ev(EventKind::Compute, Phase::Bwd).module(ma),
                                        Ev(EventKind::BackwardPost, Phase::Bwd).module(ma),
                                        Ev(EventKind::Release, Phase::Bwd).module(ma).param(pa),
                                        Ev(EventKind::BackwardPre, Phase::Bwd).module(mb),
                                        Ev(EventKind::Compute, Phase::Bwd).module(mb),
                                        Ev(EventKind::BackwardPost, Phase::Bwd).module(mb),
                                        Ev(EventKind::OptimizerStep, Phase::Optimizer)});
    // backward = 2x forward: a [0, 20'000). Its trainable gradient (4'096 B padded; the frozen
    // param has none) is reduce-scattered on rs [20'000, 24'072) while b computes
    // [20'000, 22'000) without waiting. b has no params: no reduce-scatter.
    // The optimizer step waits for rs: 24'072, exposing 2'072 ns.
    CHECK(run.events[5].t_ns == 20'000);
    CHECK(run.events[6].t_ns == 22'000);
    CHECK(run.events[7].t_ns == 24'072);
    const StepSummary& s = run.step();
    CHECK(s.compute_ns == 22'000);
    CHECK(s.exposed_comm_ns == 2'072);
    CHECK(s.step_ns == 24'072);
    CHECK(s.reduce_scattered_bytes == 4'096);
    CHECK(s.optimizer_step);
  }

  TEST_CASE("timeline: peak live memory follows gathers and releases") {
    ScenarioBuilder b(2);
    const auto m = b.module("a", 1);
    const auto p0 = b.param(m, "w0", 1'000);  // 4'000 B
    const auto p1 = b.param(m, "w1", 3'000);  // 12'000 B
    const auto p2 = b.param(m, "w2", 500);    // 2'000 B
    const Timed run = time_events(
        b.s, {Ev(EventKind::Gather).module(m).param(p0).group(1),
              Ev(EventKind::Gather).module(m).param(p2).group(1),
              Ev(EventKind::Release).module(m).param(p0),
              Ev(EventKind::Gather).module(m).param(p1).group(2),
              Ev(EventKind::Release).module(m).param(p1),
              Ev(EventKind::Release).module(m).param(p1),  // a repeated release frees nothing
              Ev(EventKind::PartitionAll, Phase::Optimizer).param(p2)});
    // live: 4'000 -> 6'000 -> 2'000 -> 14'000 (peak) -> 2'000 -> 2'000 -> 0.
    CHECK(run.step().peak_live_bytes == 14'000);
    CHECK(run.summary.peak_live_bytes == 14'000);
  }

  TEST_CASE("timeline: persistent params stay live across steps until a restart") {
    ScenarioBuilder b(2);
    const auto m = b.module("a", 1);
    const auto big = b.param(m, "w", 1'000);  // 4'000 B
    const auto small = b.param(m, "b", 10);   // 40 B, persistent
    const Timed run = time_events(
        b.s, {Ev(EventKind::PersistentGather, Phase::None).param(small),
              Ev(EventKind::Gather).module(m).param(big).group(1).step(0),
              Ev(EventKind::OptimizerStep, Phase::Optimizer).step(0),
              Ev(EventKind::PartitionAll, Phase::Optimizer).param(big).step(0),
              Ev(EventKind::Fetch).module(m).step(1), Ev(EventKind::Restart, Phase::None).step(1),
              Ev(EventKind::Fetch).module(m).step(2)});
    const auto& steps = run.summary.steps;
    REQUIRE(steps.size() == 3);
    CHECK(steps[0].peak_live_bytes == 4'040);
    CHECK(steps[1].peak_live_bytes == 40);  // the persistent param is still resident
    CHECK(steps[2].peak_live_bytes == 0);   // the restart freed everything
  }

  TEST_CASE("timeline: steps split at the step field; each step time is compute + exposed") {
    ScenarioBuilder b(4);
    const auto [m, p] = b.weighted_module("a", 10, 1'024);
    AnalyticalCostModel cost(b.s, testing::round_calibration());
    VectorSink out;
    Timeline tl(b.s, cost, out);
    for (int32_t step = 0; step < 2; ++step) {
      feed(tl, {Ev(EventKind::PassStart).step(step), Ev(EventKind::Fetch).module(m).step(step),
                Ev(EventKind::Gather).module(m).param(p).group(step).step(step),
                Ev(EventKind::Wait).module(m).param(p).group(step).step(step),
                Ev(EventKind::Compute).module(m).step(step),
                Ev(EventKind::Release).module(m).param(p).step(step),
                Ev(EventKind::OptimizerStep, Phase::Optimizer).step(step)});
    }
    tl.finish();
    // Each step: 4'072 stall + 10'000 compute = 14'072; step 1 starts where step 0 ended.
    const auto& steps = tl.summary().steps;
    REQUIRE(steps.size() == 2);
    CHECK(steps[0].start_ns == 0);
    CHECK(steps[1].start_ns == 14'072);
    for (const StepSummary& s : steps) {
      CHECK(s.step_ns == 14'072);
      CHECK(s.compute_ns + s.exposed_comm_ns == s.step_ns);
      CHECK(s.gathers == 1);
      CHECK(s.optimizer_step);
    }
    CHECK(tl.summary().end_ns == 28'144);
    CHECK(tl.summary().exposed_comm_ns == 2 * kGather4k);
  }

  TEST_CASE("timeline: ranks have independent clocks and summaries") {
    ScenarioBuilder b(4);
    const auto [m, p] = b.weighted_module("a", 10, 1'024);
    const Timed run = time_events(
        b.s,
        {Ev(EventKind::Fetch).module(m).rank(1), Ev(EventKind::Compute).module(m).rank(1),
         Ev(EventKind::Fetch).module(m).rank(0),
         Ev(EventKind::Gather).module(m).param(p).group(1).rank(0),
         Ev(EventKind::Wait).module(m).param(p).group(1).rank(0),
         Ev(EventKind::Compute).module(m).rank(0)},
        testing::round_calibration(), {.per_module = true, .record = false});
    CHECK(run.events[2].t_ns == 0);  // rank 0's clock did not move with rank 1's compute
    const auto& steps = run.summary.steps;
    REQUIRE(steps.size() == 2);
    CHECK(steps[0].rank == 0);
    CHECK(steps[0].step_ns == 14'072);
    CHECK(steps[1].rank == 1);
    CHECK(steps[1].step_ns == 10'000);
    REQUIRE(run.summary.modules.size() == 2);
    CHECK(run.summary.ranks[0] == 0);
    CHECK(run.summary.modules[0][m].fetches == 1);
    CHECK(run.summary.modules[0][m].exposed_comm_ns == kGather4k);
    CHECK(run.summary.modules[0][m].gathered_bytes == 4'096);
    CHECK(run.summary.modules[1][m].compute_ns == 10'000);
  }

  TEST_CASE("timeline: prefetched bytes are charged to the module that waits on them") {
    ScenarioBuilder b(4);
    const auto [ma, pa] = b.weighted_module("a", 10, 1'024);
    const auto [mb, pb] = b.weighted_module("b", 10, 1'024);
    const auto [mc, pc] = b.weighted_module("c", 10, 256);
    // a's fetch gathers its own weight and prefetches b's and c's; b waits on its own; c's is
    // released before anyone waits on it (charged to its owner, c).
    const Timed run = time_events(
        b.s,
        {Ev(EventKind::Fetch).module(ma), Ev(EventKind::Gather).module(ma).param(pa).group(1),
         Ev(EventKind::Wait).module(ma).param(pa).group(1),
         Ev(EventKind::Prefetch).module(ma).param(pb).group(2),
         Ev(EventKind::Prefetch).module(ma).param(pc).group(2), Ev(EventKind::Compute).module(ma),
         Ev(EventKind::Fetch).module(mb), Ev(EventKind::Wait).module(mb).param(pb).group(2),
         Ev(EventKind::Compute).module(mb), Ev(EventKind::Release).module(mc).param(pc)},
        testing::round_calibration(), {.per_module = true, .record = false});
    const std::vector<ModuleSummary>& modules = run.summary.modules.at(0);
    CHECK(modules[ma].gathered_bytes == 4'096);
    CHECK(modules[ma].prefetched_bytes == 0);
    CHECK(modules[mb].gathered_bytes == 0);
    CHECK(modules[mb].prefetched_bytes == 4'096);
    CHECK(modules[mc].prefetched_bytes == 1'024);
  }

  TEST_CASE("timeline: landmarks mark steps, micro-steps, passes, phases and points") {
    ScenarioBuilder b(1);
    const auto m = b.module("a", 10);
    const auto at = [](EventKind kind, trace::Phase phase, int32_t micro_step) {
      Ev e(kind, phase);
      e.e.micro_step = micro_step;
      return e;
    };
    // Two micro-steps of one optimizer step, each a pass with fwd then bwd compute, then the
    // optimizer step; an invalidation in the second pass.
    const Timed run =
        time_events(b.s,
                    {at(EventKind::PassStart, trace::Phase::Fwd, 0),
                     at(EventKind::Compute, trace::Phase::Fwd, 0).module(m),
                     at(EventKind::Compute, trace::Phase::Bwd, 0).module(m),
                     at(EventKind::PassStart, trace::Phase::Fwd, 1),
                     at(EventKind::TraceInvalidate, trace::Phase::Fwd, 1).module(m),
                     at(EventKind::Compute, trace::Phase::Fwd, 1).module(m),
                     at(EventKind::Compute, trace::Phase::Bwd, 1).module(m),
                     at(EventKind::OptimizerStep, trace::Phase::Optimizer, 1)},
                    testing::round_calibration(), {.per_module = false, .record = true});
    std::map<Landmark::Kind, int> count;
    for (const Landmark& l : run.recording.landmarks) {
      ++count[l.kind];
      CHECK(l.start_ns <= l.end_ns);
    }
    CHECK(count[Landmark::Kind::Step] == 1);
    CHECK(count[Landmark::Kind::MicroStep] == 2);
    CHECK(count[Landmark::Kind::Pass] == 2);
    CHECK(count[Landmark::Kind::Phase] == 5);  // fwd, bwd, fwd, bwd, optimizer
    CHECK(count[Landmark::Kind::OptimizerStep] == 1);
    CHECK(count[Landmark::Kind::TraceInvalidation] == 1);
    // Each pass spans its fwd (10 us) and bwd (2 x fwd) computes: [0, 30) and [30, 60) us.
    std::vector<std::pair<Tick, Tick>> passes;
    for (const Landmark& l : run.recording.landmarks) {
      if (l.kind == Landmark::Kind::Pass) {
        passes.emplace_back(l.start_ns, l.end_ns);
      }
    }
    CHECK(passes == std::vector<std::pair<Tick, Tick>>{{0, 30'000}, {30'000, 60'000}});
  }

  TEST_CASE("timeline: summary JSON is fixed-format") {
    ScenarioBuilder b(4);
    const Timed run =
        one_fetch(b, testing::round_calibration(), {.per_module = true, .record = false});
    CHECK(format_summary_json(run.summary, b.s) ==
          "{\"end_ns\":14072,\"exposed_comm_ns\":4072,\"peak_live_bytes\":4096,\"steps\":["
          "{\"step\":0,\"rank\":0,\"start_ns\":0,\"step_ns\":14072,\"compute_ns\":10000,"
          "\"exposed_comm_ns\":4072,\"gathers\":1,\"gathered_params\":1,\"gathered_bytes\":4096,"
          "\"reduce_scattered_bytes\":0,\"peak_live_bytes\":4096,\"optimizer_step\":false}],"
          "\"modules\":[{\"rank\":0,\"module\":\"a\",\"fetches\":1,\"compute_ns\":10000,"
          "\"exposed_comm_ns\":4072,\"gathered_bytes\":4096,\"prefetched_bytes\":0}]}");
  }

  TEST_CASE("timeline: a StepLog gives the steps in the summary's order, spilled to disk") {
    // Ranks run one after another and each closes its last step only at finish(), so the steps
    // arrive as four sorted runs; 2 x 2,000 summaries outgrow the log's memory buffer.
    testing::ScenarioBuilder b(2);
    const auto m = b.module("a", 10);
    AnalyticalCostModel cost(b.s, testing::round_calibration());
    VectorSink out;
    StepLog log("");
    Timeline kept(b.s, cost, out);
    Timeline logged(b.s, cost, out, {.steps = &log});
    for (int32_t rank = 0; rank < 2; ++rank) {
      for (int32_t step = 0; step < 2'000; ++step) {
        const Ev e = Ev(EventKind::Compute).module(m).rank(rank).step(step);
        kept.on_event(e);
        logged.on_event(e);
      }
    }
    kept.finish();
    logged.finish();
    CHECK(logged.summary().steps.empty());
    CHECK(logged.summary().peak_live_bytes == kept.summary().peak_live_bytes);
    std::vector<StepSummary> read;
    CHECK(log.for_each([&](const StepSummary& s) { read.push_back(s); }));
    CHECK(log.error() == "");
    const std::vector<StepSummary>& expected = kept.summary().steps;
    REQUIRE(read.size() == expected.size());
    for (size_t i = 0; i < read.size(); ++i) {
      CAPTURE(i);
      CHECK(read[i].step == expected[i].step);
      CHECK(read[i].rank == expected[i].rank);
      CHECK(read[i].start_ns == expected[i].start_ns);
      CHECK(read[i].step_ns == expected[i].step_ns);
    }
  }
}

}  // namespace
}  // namespace zfetch::sim
