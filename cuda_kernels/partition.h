// ZeRO-3 partition arithmetic and the host-built work table of the fused gather kernel (no CUDA).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace zfetch::gpu {

/// How one param of `numel` elements is split over `world` ranks
/// (DeepSpeed `Init._partition_param`; docs/semantics.md 1.3).
struct ParamPartition {
  std::uint64_t numel = 0;       ///< N, real elements
  std::uint64_t padding = 0;     ///< (W - N mod W) mod W
  std::uint64_t part_numel = 0;  ///< P = (N + padding) / W; rank r owns flat [r*P, (r+1)*P)
};

/// Partition of a param of `numel` elements over `world` >= 1 ranks.
[[nodiscard]] ParamPartition partition_param(std::uint64_t numel, std::uint32_t world);

/// Real (non-padding) elements rank `rank` holds: clamp(N - r*P, 0, P).
[[nodiscard]] std::uint64_t real_numel(const ParamPartition& p, std::uint32_t rank);

/// A coalesced bucket (docs/semantics.md 1.4, 4.6): params sorted by id; each rank's flat
/// all-gather input is the concatenation of its partitions of every param, in that order.
struct BucketLayout {
  std::uint32_t world = 1;
  std::uint32_t elem_bytes = 2;
  std::vector<ParamPartition> params;
  std::vector<std::uint64_t> input_offset;  ///< element offset of param i inside a rank's input
  std::uint64_t rank_numel = 0;             ///< sum of P_i: one rank's flat input, in elements

  [[nodiscard]] std::uint64_t rank_bytes() const { return rank_numel * elem_bytes; }
  /// Bytes of the flat gathered buffer (W * rank_bytes), what ncclAllGather writes.
  [[nodiscard]] std::uint64_t gathered_bytes() const { return rank_bytes() * world; }
  /// Bytes of real parameter data: sum N_i * elem_bytes.
  [[nodiscard]] std::uint64_t output_bytes() const;
};

/// Layout of a bucket whose params (already sorted by id) have `numels` elements.
[[nodiscard]] BucketLayout make_bucket_layout(std::span<const std::uint64_t> numels,
                                              std::uint32_t world, std::uint32_t elem_bytes);

/// One contiguous copy of the reassembly: `bytes` from rank `rank`'s flat input at `src_offset`
/// into param `param`'s own buffer at `dst_offset`.
struct ChunkDesc {
  std::uint64_t src_offset = 0;
  std::uint64_t dst_offset = 0;
  std::uint32_t bytes = 0;
  std::uint32_t param = 0;
  std::uint32_t rank = 0;
};

/// The copies that rebuild every param of `layout`: one per (param, rank) slice holding real
/// data, split into chunks of at most `max_chunk_bytes` (a multiple of 16, >= 16). Split points
/// fall on 16-byte multiples of the destination offset so that every chunk after the first of a
/// slice starts 16-byte aligned when the param buffer is. Chunks come param by param, rank by
/// rank (the order DeepSpeed copies in); zero-size params and pure-padding slices yield none.
[[nodiscard]] std::vector<ChunkDesc> build_work_table(const BucketLayout& layout,
                                                      std::uint32_t max_chunk_bytes);

/// Chunk size for a bucket of `total_bytes` run by `concurrent_warps` warps: about four chunks
/// per warp, rounded up to 1 KiB, clamped to [1 KiB, 64 KiB].
[[nodiscard]] std::uint32_t choose_chunk_bytes(std::uint64_t total_bytes,
                                               std::uint32_t concurrent_warps);

/// The bucket sizes `zfetch-gpu bench` sweeps (and `verify --bench-sizes` checks): `min_bytes`,
/// then x4 up to 16 MiB, then x2, up to `max_bytes`.
[[nodiscard]] std::vector<std::uint64_t> bench_bucket_sizes(std::uint64_t min_bytes,
                                                            std::uint64_t max_bytes);

/// The params (numels, in id order) of the transformer-like bucket of about `bytes` bytes that
/// bench times: per layer (1 to 4 layers, one per 16 MiB) three large matrices and one small
/// vector; every size a multiple of `unit` elements (so that every rank's slice is 16-byte
/// aligned when `unit` is a multiple of 8 * W); one param below 8 units.
[[nodiscard]] std::vector<std::uint64_t> bench_bucket_numels(std::uint64_t bytes,
                                                             std::uint32_t elem_bytes,
                                                             std::uint64_t unit);

/// Counter-based hash (splitmix64 finaliser over the inputs), the pattern of
/// NVIDIA/nccl-tests verifiable/verifiable.cu: test data is a pure function of its coordinates.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
[[nodiscard]] constexpr std::uint64_t hash3(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return mix64(mix64(mix64(a) ^ b) ^ c);
}

/// Per-param key of param_value: hash3(seed, param, 0), computed once per param.
[[nodiscard]] constexpr std::uint64_t param_key(std::uint64_t seed, std::uint64_t param) {
  return hash3(seed, param, 0);
}
/// Bit pattern of element `index` of a param whose key is `key` (the full, gathered param).
[[nodiscard]] constexpr std::uint64_t param_value_keyed(std::uint64_t key, std::uint64_t index) {
  return mix64(key ^ (index * 0xd1b54a32d192ed03ULL));
}
/// Bit pattern of element `index` of param `param`: a pure function of (seed, param, index).
[[nodiscard]] constexpr std::uint64_t param_value(std::uint64_t seed, std::uint64_t param,
                                                  std::uint64_t index) {
  return param_value_keyed(param_key(seed, param), index);
}
/// Bit pattern of a padding element: rank `rank`, element `index` of its partition of `param`.
[[nodiscard]] constexpr std::uint64_t pad_value(std::uint64_t seed, std::uint64_t param,
                                                std::uint32_t rank, std::uint64_t index) {
  return mix64(hash3(seed ^ 0x5a5a5a5a5a5a5a5aULL, param, rank) + index);
}

/// Fills `out` (layout.rank_bytes() bytes) with rank `rank`'s flat all-gather input: element k of
/// its partition of param i is param_value(seed, i, r*P_i + k) when r*P_i + k < N_i, else padding.
void fill_rank_input(const BucketLayout& layout, std::uint64_t seed, std::uint32_t rank,
                     std::span<std::byte> out);

/// Fills `out` (N_i * elem_bytes bytes) with the expected full param `param`, built from
/// param_value alone, independently of the partition arithmetic.
void fill_expected_param(std::uint32_t elem_bytes, std::uint64_t seed, std::uint32_t param,
                         std::span<std::byte> out);

}  // namespace zfetch::gpu
