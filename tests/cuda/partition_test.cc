// Host-side checks of cuda_kernels/: ZeRO-3 partition arithmetic, the gather's work table
// (applied with memcpy on the host), and the calibration fit. Needs no GPU.
#include "cuda_kernels/partition.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "cuda_kernels/calibration.h"

namespace zfetch::gpu {
namespace {

// Applies `table` on the host: what the kernel does on the device.
std::vector<std::vector<std::byte>> apply(const BucketLayout& layout,
                                          const std::vector<ChunkDesc>& table, std::uint64_t seed) {
  std::vector<std::vector<std::byte>> ranks(layout.world);
  for (std::uint32_t r = 0; r < layout.world; ++r) {
    ranks[r].resize(layout.rank_bytes());
    fill_rank_input(layout, seed, r, ranks[r]);
  }
  std::vector<std::vector<std::byte>> params;
  for (const ParamPartition& p : layout.params) {
    params.emplace_back(p.numel * layout.elem_bytes, std::byte{0xA5});
  }
  for (const ChunkDesc& c : table) {
    REQUIRE(c.src_offset + c.bytes <= layout.rank_bytes());
    REQUIRE(c.dst_offset + c.bytes <= params[c.param].size());
    std::memcpy(params[c.param].data() + c.dst_offset, ranks[c.rank].data() + c.src_offset,
                c.bytes);
  }
  return params;
}

void check_bucket(const std::vector<std::uint64_t>& numels, std::uint32_t world,
                  std::uint32_t elem_bytes, std::uint32_t chunk) {
  const BucketLayout layout = make_bucket_layout(numels, world, elem_bytes);
  const std::vector<ChunkDesc> table = build_work_table(layout, chunk);
  std::uint64_t covered = 0;
  for (const ChunkDesc& c : table) {
    CHECK(c.bytes > 0);
    CHECK(c.bytes <= chunk);
    covered += c.bytes;
  }
  // Every real byte is written exactly once: the chunks' bytes add up to the output.
  CHECK(covered == layout.output_bytes());
  const auto params = apply(layout, table, 42);
  for (std::uint32_t i = 0; i < numels.size(); ++i) {
    std::vector<std::byte> expected(numels[i] * elem_bytes);
    fill_expected_param(elem_bytes, 42, i, expected);
    CHECK(params[i] == expected);
  }
}

TEST_SUITE("cuda") {
  TEST_CASE("partition: padding and partition size follow DeepSpeed") {
    // N=15, W=2 -> padding 1, P=8; rank 1 holds 7 real elements + 1 pad (test_zero.py).
    const ParamPartition p = partition_param(15, 2);
    CHECK(p.padding == 1);
    CHECK(p.part_numel == 8);
    CHECK(real_numel(p, 0) == 8);
    CHECK(real_numel(p, 1) == 7);
    // N=3, W=8 -> padding 5, P=1; ranks 3..7 hold only padding.
    const ParamPartition q = partition_param(3, 8);
    CHECK(q.padding == 5);
    CHECK(q.part_numel == 1);
    CHECK(real_numel(q, 2) == 1);
    CHECK(real_numel(q, 3) == 0);
    // N=0: nothing to hold anywhere.
    const ParamPartition z = partition_param(0, 4);
    CHECK(z.padding == 0);
    CHECK(z.part_numel == 0);
    CHECK(real_numel(z, 0) == 0);
    // W=1: the whole param, no padding.
    CHECK(partition_param(17, 1).part_numel == 17);
  }

  TEST_CASE("partition: a rank's flat input concatenates its partitions in id order") {
    // numels {15, 3, 0, 8}, W=2 -> P {8, 2, 0, 4}; offsets {0, 8, 10, 10}; rank input 14.
    const std::vector<std::uint64_t> numels = {15, 3, 0, 8};
    const BucketLayout layout = make_bucket_layout(numels, 2, 2);
    CHECK(layout.rank_numel == 14);
    CHECK(layout.input_offset == std::vector<std::uint64_t>{0, 8, 10, 10});
    CHECK(layout.gathered_bytes() == 2 * 14 * 2);
    CHECK(layout.output_bytes() == 26 * 2);
  }

  TEST_CASE("work_table: one chunk per real slice, none for padding or empty params") {
    // numels {15, 3, 0}, W=4 -> P {4, 1, 0}: param 0 has 4 slices (4,4,4,3), param 1 has 3.
    const std::vector<std::uint64_t> numels = {15, 3, 0};
    const BucketLayout layout = make_bucket_layout(numels, 4, 4);
    const std::vector<ChunkDesc> table = build_work_table(layout, 1024);
    REQUIRE(table.size() == 7);
    CHECK(table[3].rank == 3);
    CHECK(table[3].bytes == 12);
    CHECK(table[3].dst_offset == 48);
    CHECK(table[4].param == 1);
    CHECK(table[4].src_offset == 16);  // after param 0's partition of 4 fp32 elements
  }

  TEST_CASE("work_table: splits fall on 16-byte multiples of the destination offset") {
    const std::vector<std::uint64_t> numels = {1001};
    const BucketLayout layout = make_bucket_layout(numels, 3, 2);  // P = 334 -> 668 bytes
    const std::vector<ChunkDesc> table = build_work_table(layout, 64);
    for (std::size_t k = 0; k + 1 < table.size(); ++k) {
      if (table[k + 1].rank == table[k].rank) {
        CHECK((table[k + 1].dst_offset % 64) == 0);
      }
    }
  }

  TEST_CASE("work_table: applied on the host it rebuilds every param exactly") {
    SUBCASE("odd sizes, bf16") {
      check_bucket({15, 1, 0, 7, 1000, 33}, 2, 2, 16);
    }
    SUBCASE("params smaller than the world") {
      check_bucket({1, 2, 3, 0, 63, 64, 65}, 64, 2, 256);
    }
    SUBCASE("fp32, large chunks") {
      check_bucket({100000, 5, 77777}, 7, 4, 65536);
    }
    SUBCASE("world 1") {
      check_bucket({9, 0, 12345}, 1, 2, 1024);
    }
    SUBCASE("randomized") {
      for (std::uint64_t b = 0; b < 200; ++b) {
        std::vector<std::uint64_t> numels;
        const std::uint64_t n = 1 + hash3(1, b, 0) % 12;
        for (std::uint64_t i = 0; i < n; ++i) {
          numels.push_back(hash3(1, b, i + 1) % 3000);
        }
        const auto world = static_cast<std::uint32_t>(1 + hash3(2, b, 0) % 70);
        const std::uint32_t eb = hash3(3, b, 0) % 2 == 0 ? 2 : 4;
        check_bucket(numels, world, eb, 16u << (hash3(4, b, 0) % 8));
      }
    }
  }

  TEST_CASE("choose_chunk_bytes: about four chunks per warp, clamped") {
    CHECK(choose_chunk_bytes(4096, 8448) == 1024);
    CHECK(choose_chunk_bytes(1ULL << 30, 8448) == 32768);  // 2^30/33792 = 31775 -> 32768
    CHECK(choose_chunk_bytes(1ULL << 40, 8448) == 65536);
  }

  TEST_CASE("bench buckets: x4 up to 16 MiB, then x2; sizes a multiple of the unit") {
    const std::vector<std::uint64_t> sizes = bench_bucket_sizes(4096, 1ULL << 30);
    REQUIRE(sizes.size() == 13);  // 4 KiB .. 16 MiB (7), 32 MiB .. 1 GiB (6)
    CHECK(sizes.front() == 4096);
    CHECK(sizes[6] == (16ULL << 20));
    CHECK(sizes[7] == (32ULL << 20));
    CHECK(sizes.back() == (1ULL << 30));
    for (const std::uint64_t bytes : sizes) {
      const std::vector<std::uint64_t> numels = bench_bucket_numels(bytes, 2, 64);
      std::uint64_t total = 0;
      for (const std::uint64_t n : numels) {
        CHECK(n % 64 == 0);
        total += n * 2;
      }
      CHECK(total <= bytes);
      CHECK(total + numels.size() * 64 * 2 * 2 >= bytes);  // short by less than a unit per param
    }
    CHECK(bench_bucket_numels(64ULL << 20, 2, 64).size() == 16);  // 4 layers of 4 params
    check_bucket(bench_bucket_numels(1ULL << 20, 2, 64), 8, 2, 8192);
  }

  TEST_CASE("median: the middle value, or the mean of the middle two; 0 when empty") {
    CHECK(median({}) == 0.0);
    CHECK(median({5.0, 1.0, 3.0}) == 3.0);
    CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  }

  TEST_CASE("fit: recovers alpha and bandwidth of an exact line") {
    // time = 5000 ns + bytes / 400 GB/s; busbw factor (W-1)/W = 1/2 for W=2 -> busbw 200.
    std::vector<TimedPoint> pts;
    for (double b = 4096; b <= 1e9; b *= 4) {
      pts.push_back({b, 5000 + b / 400});
    }
    const LinearFit alg = fit_alpha_bandwidth(pts, 1.0);
    CHECK(alg.alpha_ns == doctest::Approx(5000).epsilon(1e-6));
    CHECK(alg.bandwidth_gbps == doctest::Approx(400).epsilon(1e-6));
    const LinearFit bus = fit_alpha_bandwidth(pts, allgather_bus_factor(2));
    CHECK(bus.bandwidth_gbps == doctest::Approx(200).epsilon(1e-6));
    CHECK(allgather_bus_factor(1) == 0.0);
    CHECK(fit_alpha_bandwidth(pts, 0.0).bandwidth_gbps == 0.0);
  }
}

}  // namespace
}  // namespace zfetch::gpu
