// Closed forms of the analytical cost model, compared exactly in integer ns.
#include "sim/timeline/cost_model.h"

#include <doctest/doctest.h>

#include "tests/timeline/timeline_test_util.h"

namespace zfetch::sim {
namespace {

TEST_SUITE("timeline") {
  TEST_CASE("cost_model: all-gather follows the nccl-tests bus-bandwidth model") {
    const CollectiveCalibration c{1'000, 1'000'000'000};  // alpha 1 us, busbw 1 B/ns
    // alpha + (N-1)/N * B / busbw
    CHECK(collective_ns(c, 4'096, 4) == 1'000 + 3'072);
    CHECK(collective_ns(c, 4'096, 2) == 1'000 + 2'048);
    // 8 ranks, 1 MiB: 7/8 * 1'048'576 = 917'504 exactly.
    CHECK(collective_ns(c, 1'048'576, 8) == 1'000 + 917'504);
    // one rank: DeepSpeed skips the collective.
    CHECK(collective_ns(c, 4'096, 1) == 0);
    CHECK(collective_ns(c, 0, 8) == 0);
  }

  TEST_CASE("cost_model: durations round once to the nearest ns, halves up") {
    // 3 B at 2 GB/s = 1.5 ns -> 2; 1 B at 3 GB/s = 0.333 ns -> 0; 2 B at 3 GB/s -> 1.
    CHECK(transfer_ns(3, 2'000'000'000) == 2);
    CHECK(transfer_ns(1, 3'000'000'000) == 0);
    CHECK(transfer_ns(2, 3'000'000'000) == 1);
    // 360 GB/s, 8 ranks, 1e9 B: 7/8 * 1e9 / 360 = 2'430'555.55 ns -> 2'430'556.
    CHECK(collective_ns({0, 360'000'000'000}, 1'000'000'000, 8) == 2'430'556);
    // No overflow at 1 TB over 1024 ranks: 1023/1024 * 1e12 B / 1 GB/s = 999'023'437'500 ns.
    CHECK(collective_ns({0, 1'000'000'000}, 1'000'000'000'000, 1024) == 999'023'437'500);
  }

  TEST_CASE("cost_model: module compute from compute_us or from parameter flops") {
    testing::ScenarioBuilder b(4);
    const auto given = b.module("given", 7);
    const auto derived = b.module("derived", -1);
    b.param(derived, "w", 1'000'000);
    b.param(derived, "b", 1'000);
    b.s.config.train_micro_batch_size_per_gpu = 2;
    AnalyticalCostModel cost(b.s, testing::round_calibration());
    CHECK(cost.compute(given, trace::Phase::Fwd) == 7'000);
    CHECK(cost.compute(given, trace::Phase::Recompute) == 7'000);
    CHECK(cost.compute(given, trace::Phase::Eval) == 7'000);
    CHECK(cost.compute(given, trace::Phase::Bwd) == 14'000);
    // 2 * 1'001'000 numel * 2 tokens / 1e12 flop/s = 4'004 ns; backward twice that.
    CHECK(cost.compute(derived, trace::Phase::Fwd) == 4'004);
    CHECK(cost.compute(derived, trace::Phase::Bwd) == 8'008);
    SUBCASE("timing.tokens_per_micro_batch overrides the micro-batch size") {
      b.s.timing.tokens_per_micro_batch = 4'096;
      AnalyticalCostModel with_tokens(b.s, testing::round_calibration());
      // 2 * 1'001'000 * 4'096 / 1e12 s = 8'200'192 ns.
      CHECK(with_tokens.compute(derived, trace::Phase::Fwd) == 8'200'192);
    }
    SUBCASE("a z3 leaf computes for its whole subtree") {
      b.s.modules[given].compute_us = -1;
      b.s.modules[given].leaf = true;
      b.s.modules[given].children.push_back(derived);
      AnalyticalCostModel leaf(b.s, testing::round_calibration());
      CHECK(leaf.compute(given, trace::Phase::Fwd) == 4'004);
    }
  }

  TEST_CASE("cost_model: h2d copies at the calibrated bandwidth") {
    testing::ScenarioBuilder b(1);
    AnalyticalCostModel cost(b.s, testing::round_calibration());
    CHECK(cost.h2d_copy(1'024) == 2'048);  // 0.5 B/ns
    CHECK(cost.reduce_scatter(4'096, 4) == 4'072);
    CHECK(cost.all_gather(4'096, 0, 1) == 0);
  }

  TEST_CASE("cost_model: an h2d copy costs alpha plus bytes over the bandwidth") {
    testing::ScenarioBuilder b(1);
    Calibration c = testing::round_calibration();
    c.h2d_alpha_ns = 2'500;
    AnalyticalCostModel cost(b.s, c);
    CHECK(cost.h2d_copy(1'024) == 2'500 + 2'048);  // alpha + 1'024 B at 0.5 B/ns
    CHECK(cost.h2d_copy(1) == 2'500 + 2);
    CHECK(cost.h2d_copy(0) == 0);                          // nothing to copy: no copy, no alpha
    CHECK(h2d_copy_ns(2'500, 3, 2'000'000'000) == 2'502);  // 1.5 ns rounds up once
    CHECK(h2d_copy_ns(2'500, 1'000, 0) == 2'500);          // bandwidth not modelled
  }

  TEST_CASE("cost_model: a measured curve is interpolated between its points") {
    CollectiveCalibration c{1'000, 1'000'000'000};
    c.curve = {{1'000, 2'000}, {3'000, 3'000}, {10'000, 10'000}};
    CHECK(collective_ns(c, 1'000, 8) == 2'000);    // a measured point exactly
    CHECK(collective_ns(c, 2'000, 8) == 2'500);    // halfway between the first two
    CHECK(collective_ns(c, 2'001, 2) == 2'501);    // 2'500.5 rounds up; W does not matter
    CHECK(collective_ns(c, 20'000, 8) == 20'000);  // last segment extended
    CHECK(collective_ns(c, 1, 8) == 1'501);        // first segment extended (1'500.5 rounds up)
    c.curve = {{1'000, 5'000}, {2'000, 1'000}};
    CHECK(collective_ns(c, 10'000, 8) == 0);  // never below 0
    CHECK(collective_ns(c, 4'096, 1) == 0);   // one rank: no collective
  }

  TEST_CASE("cost_model: odd params are charged their share of the odd curve") {
    CollectiveCalibration c{1'000, 1'000'000'000};
    c.curve = {{0, 1'000}, {10'000, 2'000}};
    c.odd_curve = {{0, 3'000}, {10'000, 4'000}};
    CHECK(gather_ns(c, 4'096, 0, 4) == 1'410);         // aligned: the curve (1'409.6)
    CHECK(gather_ns(c, 4'096, 4'096, 4) == 3'410);     // all odd: the odd curve
    CHECK(gather_ns(c, 8'192, 4'096, 4) == 2'819);     // half odd: 1'819 + 2'000 / 2
    CHECK(gather_ns(c, 4'096, 4'096, 1) == 0);         // one rank: no collective
    CollectiveCalibration line{1'000, 1'000'000'000};  // no curve: the odd bytes do not matter
    line.odd_curve = c.odd_curve;
    CHECK(gather_ns(line, 4'096, 4'096, 4) == collective_ns(line, 4'096, 4));
    // A rank slice of whole 16-byte vectors: ceil(numel / W) and numel both multiples of 16 / elem.
    CHECK_FALSE(odd_param(1'024, 4, 4));  // 256 fp32 a rank
    CHECK(odd_param(1'023, 4, 4));        // the last slice is 255 elements
    CHECK(odd_param(100, 4, 2));          // 50 fp32 (200 B) a rank
    CHECK(odd_param(15, 4, 2));           // 8 and 7 elements
    CHECK_FALSE(odd_param(64, 2, 9));     // 8 bf16 on each of 8 ranks, the ninth gets none
    CHECK_FALSE(odd_param(7, 16, 2));     // no 16-byte vector path to miss
  }

  TEST_CASE("cost_model: a small h2d copy is interpolated from the measured small copy") {
    Calibration c = testing::round_calibration();  // 0.5 B/ns
    c.h2d_alpha_ns = 2'500;
    c.h2d_small_copy = {64, 1'000};
    c.h2d_line_from_bytes = 4'096;
    CHECK(h2d_copy_ns(c, 4'096) == 2'500 + 8'192);  // from the line's first size on: the line
    CHECK(h2d_copy_ns(c, 64) == 1'000);             // the small copy itself
    CHECK(h2d_copy_ns(c, 1) == 1'000);              // flat below it
    CHECK(h2d_copy_ns(c, 2'080) == 1'000 + 4'846);  // halfway to the line's 10'692
    CHECK(h2d_copy_ns(c, 0) == 0);                  // nothing to copy
    c.h2d_small_copy = {};
    CHECK(h2d_copy_ns(c, 64) == 2'500 + 128);  // without one: the line
  }

  TEST_CASE("cost_model: an embedding is a lookup, a norm elementwise, by their class") {
    testing::ScenarioBuilder b(2);
    const auto embed = b.module("embed", -1);
    b.param(embed, "weight", 32'000 * 1'024);
    b.s.params.back().shape = {32'000, 1'024};
    b.s.params.back().dtype = model::DType::Bf16;
    const auto norm = b.module("norm", -1);
    b.param(norm, "weight", 1'024);
    b.s.timing.tokens_per_micro_batch = 1'000;
    Calibration cal = testing::round_calibration();
    cal.d2d_bytes_per_s = 2'000'000'000'000;  // 2'000 B/ns
    SUBCASE("without a class both multiply by their weights") {
      AnalyticalCostModel cost(b.s, cal);
      // 2 * 32'768'000 * 1'000 / 1e12 s = 65'536'000 ns.
      CHECK(cost.compute(embed, trace::Phase::Fwd) == 65'536'000);
      CHECK(cost.compute(norm, trace::Phase::Fwd) == 2'048);
    }
    SUBCASE("with their classes") {
      b.s.modules[embed].class_name = "Embedding";
      b.s.modules[norm].class_name = "LlamaRMSNorm";
      AnalyticalCostModel cost(b.s, cal);
      // 1'000 tokens * 1'024 bf16 = 2'048'000 B written at 2'000 B/ns.
      CHECK(cost.compute(embed, trace::Phase::Fwd) == 1'024);
      CHECK(cost.compute(embed, trace::Phase::Bwd) == 2'048);
      // fp32 [1'024] weight: 1'000 * 4'096 B read and written = 8'192'000 B at 2'000 B/ns.
      CHECK(cost.compute(norm, trace::Phase::Fwd) == 4'096);
      cal.d2d_bytes_per_s = 0;  // not measured: the default copy bandwidth
      AnalyticalCostModel fallback(b.s, cal);
      CHECK(fallback.compute(embed, trace::Phase::Fwd) ==
            transfer_ns(2'048'000, kDefaultCopyBytesPerSecond));
    }
  }
}

}  // namespace
}  // namespace zfetch::sim
