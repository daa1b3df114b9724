// Hand-computed simulated times of small scenarios: parse, simulate, time, compare exactly.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "model/load.h"
#include "sim/simulator.h"
#include "sim/timeline/calibration.h"
#include "sim/timeline/cost_model.h"
#include "sim/timeline/timeline.h"
#include "tests/timeline/timeline_test_util.h"

namespace zfetch::sim {
namespace {

// Round constants, so that every duration below is a short closed form:
//   all-gather and reduce-scatter (reduce_scatter defaults to allgather):
//     t(B, N) = alpha + ((N-1)/N) * B / busbw,  alpha = 10'000 ns, busbw = 100 GB/s = 1e11 B/s
//     (1 byte = 0.01 ns), N = 1 costs nothing
//   h2d (offload_param): shard bytes / 10 GB/s = 0.1 ns per byte
constexpr std::string_view kCalibration = R"({
  "format": "zfetch-calibration", "version": 1, "machine": "test", "source": "round numbers",
  "world_size": 2,
  "allgather": {"alpha_ns": 10000, "busbw_GBps": 100},
  "h2d": {"bandwidth_GBps": 10}
})";

// Sizes used throughout (fp32, world 2):
//   Linear weight [1000, 1000]: 1e6 elements, 4'000'000 B full, 2'000'000 B shard
//   t_ag(4e6 B, 2) = 10'000 + (1/2) * 4e6 / 1e11 s = 10'000 + 20'000 = 30'000 ns
//   compute_us: 100 -> forward 100'000 ns, backward 2 x 100'000 = 200'000 ns
constexpr Tick kGather4MB = 30'000;
constexpr Tick kFwd = 100'000;
constexpr Tick kBwd = 200'000;
constexpr int64_t kWeightBytes = 4'000'000;

struct Result {
  Outcome outcome;
  TimelineSummary summary;
};

Result run(std::string_view yaml) {
  const model::LoadResult loaded = model::parse_scenario_text("input", yaml);
  REQUIRE(loaded.diagnostics.empty());
  const CalibrationResult calibration = parse_calibration("calibration", kCalibration);
  REQUIRE(calibration.diagnostics.empty());
  const model::Scenario& scenario = *loaded.scenario;
  const AnalyticalCostModel cost(scenario, *calibration.calibration);
  testing::VectorSink out;
  Timeline timeline(scenario, cost, out);
  Result r;
  r.outcome = simulate(scenario, Options{}, timeline);
  timeline.finish();
  r.summary = timeline.summary();
  CHECK(r.outcome.kind == OutcomeKind::Pass);
  return r;
}

// A scenario: world `world`, the `zero` settings, a root `model` without params or compute
// (its fetch gathers nothing) and the `body` (children and an optional forward program).
std::string scenario_text(int world, std::string_view deepspeed, std::string_view body,
                          int train_steps) {
  std::string s = "name: t\nworld_size: " + std::to_string(world) + "\n";
  s += "deepspeed:\n";
  s += deepspeed;
  s += "model:\n  name: model\n  compute_us: 0\n";
  s += body;
  s += "schedule:\n  - train: " + std::to_string(train_steps) + "\n";
  return s;
}

constexpr std::string_view kNoPrefetch =
    "  zero_optimization: {stage: 3, stage3_prefetch_bucket_size: 0}\n";
constexpr std::string_view kOneLinear =
    "  children:\n"
    "    - {name: fc, compute_us: 100, params: {weight: [1000, 1000]}}\n";
constexpr std::string_view kTwoLinears =
    "  children:\n"
    "    - {name: l1, compute_us: 100, params: {weight: [1000, 1000]}}\n"
    "    - {name: l2, compute_us: 100, params: {weight: [1000, 1000]}}\n";
constexpr std::string_view kThreeLinears =
    "  children:\n"
    "    - {name: l1, compute_us: 100, params: {weight: [1000, 1000]}}\n"
    "    - {name: l2, compute_us: 100, params: {weight: [1000, 1000]}}\n"
    "    - {name: l3, compute_us: 100, params: {weight: [1000, 1000]}}\n";

struct Expected {
  Tick step_ns = 0;
  Tick compute_ns = 0;
  Tick exposed_comm_ns = 0;
  int64_t gathers = 0;
  int64_t gathered_bytes = 0;
  int64_t peak_live_bytes = 0;
};

void check_step(const TimelineSummary& summary, size_t step, const Expected& e) {
  CAPTURE(step);
  REQUIRE(step < summary.steps.size());
  const StepSummary& s = summary.steps[step];
  CHECK(s.rank == 0);
  CHECK(s.step == static_cast<int32_t>(step));
  CHECK(s.step_ns == e.step_ns);
  CHECK(s.compute_ns == e.compute_ns);
  CHECK(s.exposed_comm_ns == e.exposed_comm_ns);
  CHECK(s.gathers == e.gathers);
  CHECK(s.gathered_bytes == e.gathered_bytes);
  CHECK(s.peak_live_bytes == e.peak_live_bytes);
  CHECK(s.step_ns == s.compute_ns + s.exposed_comm_ns);
}

// Two training steps of `body` at world 2 under `deepspeed`; step 0 (the RECORD pass) must
// be `record`.
Result two_steps(std::string_view deepspeed, std::string_view body, const Expected& record) {
  Result r = run(scenario_text(2, deepspeed, body, 2));
  REQUIRE(r.summary.steps.size() == 2);
  check_step(r.summary, 0, record);
  return r;
}

constexpr std::string_view kNoReuse =
    "  zero_optimization: {stage: 3, stage3_prefetch_bucket_size: 0,"
    " stage3_max_reuse_distance: 0}\n";

TEST_SUITE("timeline") {
  TEST_CASE("scenario timing: one Linear on one rank costs only its compute") {
    // Root module = the Linear itself (world 1, so no collective is issued and N = 1 costs 0).
    const Result r =
        run("name: t\n"
            "world_size: 1\n"
            "model:\n"
            "  name: fc\n"
            "  compute_us: 100\n"
            "  params: {weight: [1000, 1000]}\n"
            "schedule:\n"
            "  - train: 1\n");
    REQUIRE(r.summary.steps.size() == 1);
    // RECORD pass: fwd gathers weight (0 ns at N = 1), computes 100 us, releases it (RECORD
    // releases everything); bwd gathers it again (0 ns), computes 2 x 100 us.
    //   step = compute = 100'000 + 200'000 = 300'000 ns, exposed = 0
    //   gathers = 2 (one per fetch; the collective is free but still counted),
    //   bytes = 2 x 4e6, peak = one weight = 4e6 B
    check_step(r.summary, 0, {300'000, 300'000, 0, 2, 2 * kWeightBytes, kWeightBytes});
    CHECK(r.summary.end_ns == 300'000);
  }

  TEST_CASE("scenario timing: one Linear on two ranks without prefetch exposes each gather") {
    const Result r = run(scenario_text(2, kNoPrefetch, kOneLinear, 1));
    REQUIRE(r.summary.steps.size() == 1);
    // No prefetch: every gather is issued at fc's fetch and waited on at once, so it is fully
    // exposed: t_ag = alpha + (N-1)/N * B / busbw = 10'000 + 1/2 * 4e6 B / 1e11 B/s = 30'000.
    // fwd: gather 30'000 + compute 100'000; RECORD releases the weight after fwd;
    // bwd: gather 30'000 + compute 200'000. fc's input does not require grad, so it has no
    // post-backward hook: no reduce-scatter.
    //   exposed = 2 x 30'000 = 60'000; step = 300'000 + 60'000 = 360'000
    check_step(r.summary, 0,
               {kFwd + kBwd + 2 * kGather4MB, kFwd + kBwd, 2 * kGather4MB, 2, 2 * kWeightBytes,
                kWeightBytes});
    CHECK(r.summary.steps[0].step_ns == 360'000);
  }

  TEST_CASE("scenario timing: a prefetched second layer's gather overlaps the first's compute") {
    // Prefetch bucket = 1e6 elements = one weight per prefetch round.
    const Result r = run(
        scenario_text(2, "  zero_optimization: {stage: 3, stage3_prefetch_bucket_size: 1000000}\n",
                      kTwoLinears, 2));
    REQUIRE(r.summary.steps.size() == 2);
    // Step 0 is the RECORD pass: no prefetch, everything released after each module, so the
    // four fetches (l1, l2 fwd; l2, l1 bwd) each expose a full gather:
    //   exposed = 4 x 30'000 = 120'000; compute = 2 x 100'000 + 2 x 200'000 = 600'000
    // l2's input (l1's output) requires grad: BackwardPost(l2) reduce-scatters l2.weight
    // (30'000 ns on rs) while l1's backward computes 200'000 ns: hidden.
    check_step(r.summary, 0, {720'000, 600'000, 4 * kGather4MB, 4, 4 * kWeightBytes, kWeightBytes});
    // Step 1, COMPLETE pass, queue = (l1.w,1) (l2.w,2) (l2.w,4) (l1.w,5):
    //   root fetch (t=0): prefetch pops l1.w (1e6 >= budget 1e6): comm [0, 30'000)
    //   l1 fetch: wait l1.w -> stall 30'000; prefetch budget min(1e9 - 1e6, 1e6) pops l2.w:
    //     issued at t = 30'000, comm [30'000, 60'000)
    //   l1 fwd [30'000, 130'000): l2.w ready at 60'000 <= 130'000, no stall (overlapped)
    //   l2 prefetch pops the two remaining entries, both AV: no gather.
    //   Reuse distance 1e9 keeps both weights for backward: no gather there.
    //   l2 fwd [130'000, 230'000), l2 bwd [230'000, 430'000), rs [430'000, 460'000) hidden by
    //   l1 bwd [430'000, 630'000).
    //   step = 630'000 = 600'000 compute + 30'000 exposed; 2 gathers of 4e6 B;
    //   peak = both weights = 8e6 B
    check_step(r.summary, 1, {630'000, 600'000, kGather4MB, 2, 2 * kWeightBytes, 2 * kWeightBytes});
  }

  TEST_CASE("scenario timing: offload_param cpu copies the shard host to device first") {
    const Result r =
        run(scenario_text(2,
                          "  zero_optimization: {stage: 3, stage3_prefetch_bucket_size: 0,"
                          " offload_param: {device: cpu}}\n",
                          kOneLinear, 1));
    REQUIRE(r.summary.steps.size() == 1);
    // Each gather: h2d of the shard ceil(1e6 / 2) x 4 B = 2e6 B at 1e10 B/s = 200'000 ns,
    // then the all-gather 30'000 ns, both waited on: 230'000 exposed per fetch, 2 fetches.
    //   exposed = 2 x 230'000 = 460'000; step = 300'000 + 460'000 = 760'000
    constexpr Tick kH2d = 200'000;
    check_step(r.summary, 0,
               {760'000, kFwd + kBwd, 2 * (kH2d + kGather4MB), 2, 2 * kWeightBytes, kWeightBytes});
  }

  TEST_CASE("scenario timing: persistent params are resident after the first step") {
    // weight [100, 100]: 1e4 elements <= stage3_param_persistence_threshold (default 1e5):
    // persistent. 4e4 B full; t_ag = 10'000 + 1/2 * 4e4 / 1e11 s = 10'000 + 200 = 10'200 ns.
    const Result r = run(scenario_text(
        2, kNoPrefetch,
        "  children:\n    - {name: fc, compute_us: 100, params: {weight: [100, 100]}}\n", 2));
    REQUIRE(r.summary.steps.size() == 2);
    constexpr Tick kSmall = 10'200;
    constexpr int64_t kSmallBytes = 40'000;
    // Step 0, RECORD: fwd gathers it (10'200 exposed) and releases it (RECORD releases
    // persistent params too); bwd gathers it again (10'200). The optimizer step partitions all
    // and _post_step gathers the persistent params synchronously (10'200).
    //   exposed = 3 x 10'200 = 30'600; step = 300'000 + 30'600 = 330'600; 3 gathers x 4e4 B
    check_step(r.summary, 0, {330'600, kFwd + kBwd, 3 * kSmall, 3, 3 * kSmallBytes, kSmallBytes});
    // Step 1, COMPLETE: the weight is AV at fc's fetch (no gather) and persistent params are
    // exempt from release: fwd and bwd gather nothing. Only the optimizer's regather remains.
    //   exposed = 10'200; step = 310'200; 1 gather of 4e4 B
    check_step(r.summary, 1, {310'200, kFwd + kBwd, kSmall, 1, kSmallBytes, kSmallBytes});
  }

  TEST_CASE("scenario timing: reuse distance 0 regathers in backward, the default keeps") {
    // Two Linears, no prefetch. Step 0 is the RECORD pass in both: 4 exposed gathers,
    //   step = 600'000 + 4 x 30'000 = 720'000, 4 x 4e6 B.
    // Step 1 (COMPLETE) differs by stage3_max_reuse_distance.
    const Expected record{720'000, 600'000, 4 * kGather4MB, 4, 4 * kWeightBytes, kWeightBytes};
    SUBCASE("distance 0") {
      const Result r = two_steps(kNoReuse, kTwoLinears, record);
      // params_to_release: the reuse walk stops before the first module (seen 0 >= 0), so
      // every weight is released after its forward and gathered again in backward: the same
      // as RECORD, 4 gathers, 16e6 B, 120'000 exposed, step 720'000.
      check_step(r.summary, 1, record);
    }
    SUBCASE("default distance 1e9") {
      const Result r = two_steps(kNoPrefetch, kTwoLinears, record);
      // Each weight's backward use lies within 1e9 elements of the trace: kept after forward,
      // so only the 2 forward gathers remain: exposed 60'000, step 660'000, 8e6 B;
      // both weights live at once: peak 8e6 B.
      check_step(r.summary, 1,
                 {660'000, 600'000, 2 * kGather4MB, 2, 2 * kWeightBytes, 2 * kWeightBytes});
    }
  }

  TEST_CASE("scenario timing: a getter access of a child's weight gathers synchronously") {
    // The root reads fc.weight through the getter before calling fc.
    const Result r = run(scenario_text(2, kNoPrefetch,
                                       "  forward:\n"
                                       "    - access: fc.weight\n"
                                       "    - call: fc\n" +
                                           std::string(kOneLinear),
                                       1));
    REQUIRE(r.summary.steps.size() == 1);
    // fwd: GetterGather(fc.weight) is synchronous: 30'000 exposed; fc's fetch finds it AV (no
    // gather); fc fwd 100'000; the weight is released after fc (RECORD).
    // bwd: the root's fetch gathers its registered external fc.weight: 30'000 exposed; fc bwd
    // 200'000. The accessed weight feeds fc's input, which now requires grad: BackwardPost(fc)
    // reduce-scatters 4e6 B (30'000) after the last compute; the optimizer step waits for it.
    //   exposed = 30'000 (getter) + 30'000 (bwd gather) + 30'000 (rs drain) = 90'000
    //   step = 300'000 + 90'000 = 390'000; gathers = 2 (getter + fetch), 8e6 B, peak 4e6 B
    check_step(r.summary, 0,
               {390'000, kFwd + kBwd, 3 * kGather4MB, 2, 2 * kWeightBytes, kWeightBytes});
    CHECK(r.outcome.stats.getter_gathers == 1);
  }

  TEST_CASE("scenario timing: peak live bytes with and without release after forward") {
    // Three Linears (4e6 B each), no prefetch, two steps. RECORD step 0 releases each weight
    // after its module: at most one weight live, peak 4e6 B; 6 gathers exposed,
    //   step = 900'000 + 6 x 30'000 = 1'080'000.
    const Expected record{1'080'000, 900'000, 6 * kGather4MB, 6, 6 * kWeightBytes, kWeightBytes};
    SUBCASE("reuse distance 0: released after every use") {
      const Result r = two_steps(kNoReuse, kThreeLinears, record);
      // COMPLETE releases as RECORD did: peak stays one weight.
      check_step(r.summary, 1, record);
      CHECK(r.summary.peak_live_bytes == kWeightBytes);
    }
    SUBCASE("default reuse distance: kept from forward to backward") {
      const Result r = two_steps(kNoPrefetch, kThreeLinears, record);
      // COMPLETE: all three weights stay live from their forward to their backward, so at the
      // end of forward 3 x 4e6 = 12e6 B are live; only the 3 forward gathers are exposed:
      //   step = 900'000 + 90'000 = 990'000 (rs of l3 and l2, 30'000 each, hide under the
      //   next backward's 200'000).
      check_step(r.summary, 1,
                 {990'000, 900'000, 3 * kGather4MB, 3, 3 * kWeightBytes, 3 * kWeightBytes});
      CHECK(r.summary.peak_live_bytes == 3 * kWeightBytes);
    }
  }

  TEST_CASE("scenario timing: gradient accumulation 2 splits per optimizer step") {
    // fc: weight [1000, 1000] (1e6 > 1e5: not persistent) and bias [1000] (persistent).
    // One coalesced gather of both: padded 2 x (5e5 + 500) x 4 B = 4'004'000 B,
    //   t = 10'000 + 1/2 * 4'004'000 / 1e11 s = 10'000 + 20'020 = 30'020 ns
    // weight alone 30'000 ns; bias alone 10'000 + 1/2 * 4'000 / 1e11 s = 10'020 ns.
    const Result r =
        run(scenario_text(2,
                          "  gradient_accumulation_steps: 2\n"
                          "  zero_optimization: {stage: 3, stage3_prefetch_bucket_size: 0}\n",
                          "  children:\n"
                          "    - {name: fc, compute_us: 100,"
                          " params: {weight: [1000, 1000], bias: [1000]}}\n",
                          2));
    REQUIRE(r.summary.steps.size() == 2);
    constexpr Tick kBoth = 30'020;
    constexpr Tick kBias = 10'020;
    constexpr int64_t kBiasBytes = 4'000;
    // Step 0 = micro-steps 0 (RECORD) and 1 (COMPLETE), then the optimizer step:
    //   micro 0 fwd: gather {weight, bias} 30'020, both released after fwd (RECORD);
    //   micro 0 bwd: gather {weight, bias} 30'020; the leftover release after backward skips
    //     persistent params: bias stays resident from here on;
    //   micro 1 fwd: gather {weight} 30'000 (kept for bwd by the reuse distance), bwd none;
    //   optimizer: partition all, then _post_step's synchronous PersistentGather(bias) 10'020.
    //   exposed = 2 x 30'020 + 30'000 + 10'020 = 100'060; compute = 2 x 300'000
    //   gathers = 4; bytes = 2 x 4'004'000 + 4'000'000 + 4'000 = 12'012'000
    //   peak = weight + bias = 4'004'000
    check_step(
        r.summary, 0,
        {700'060, 600'000, 2 * kBoth + kGather4MB + kBias, 4,
         2 * (kWeightBytes + kBiasBytes) + kWeightBytes + kBiasBytes, kWeightBytes + kBiasBytes});
    // Step 1 = micro-steps 2 and 3 (both COMPLETE; the bias is resident after the regather):
    //   each fwd gathers the weight alone 30'000; the optimizer regathers the bias 10'020.
    //   exposed = 2 x 30'000 + 10'020 = 70'020; step = 670'020
    //   gathers = 3; bytes = 2 x 4e6 + 4'000 = 8'004'000; peak = 4'004'000
    check_step(r.summary, 1,
               {670'020, 600'000, 2 * kGather4MB + kBias, 3, 2 * kWeightBytes + kBiasBytes,
                kWeightBytes + kBiasBytes});
    CHECK(r.summary.steps[0].optimizer_step);
    CHECK(r.summary.steps[1].optimizer_step);
    // The run: steps back to back, step 1 starts where step 0's regather ended.
    CHECK(r.summary.steps[1].start_ns == 700'060);
    CHECK(r.summary.end_ns == 700'060 + 670'020);
  }
}

}  // namespace
}  // namespace zfetch::sim
