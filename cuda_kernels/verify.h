// Exact data checks of the fused gather and of the NCCL path, nccl-tests style: inputs a pure
// function of (seed, rank, index), expected outputs built independently on the host, outputs
// poisoned before each run, and correctness reported as a count of wrong elements.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda_kernels/gather_kernel.cuh"
#include "cuda_kernels/nccl_world.h"
#include "cuda_kernels/partition.h"

namespace zfetch::gpu {

/// A randomized bucket: shape, dtype and buffer placement, a pure function of (seed, index).
struct RandomBucket {
  std::uint32_t world = 1;
  std::uint32_t elem_bytes = 2;
  bool half = false;                        ///< fp16 rather than bf16 when elem_bytes == 2
  std::vector<std::uint64_t> numels;        ///< params, in id order
  bool flat_source = false;                 ///< one rank-major gathered buffer, else W buffers
  std::uint32_t chunk_bytes = 0;            ///< 0: choose_chunk_bytes
  std::vector<std::uint32_t> dst_misalign;  ///< per param, bytes (multiple of elem_bytes)
  std::vector<std::uint32_t> src_misalign;  ///< per rank, bytes (multiple of elem_bytes)
};

/// Bucket `index` of the stream seeded by `seed`: W in 1..max_world (or `force_world` when > 0),
/// fp32/bf16/fp16, 1..300 params of 0 to 1M elements (zero-size, smaller than W, odd sizes),
/// at most `max_elems` elements in all.
[[nodiscard]] RandomBucket random_bucket(std::uint64_t seed, std::uint64_t index,
                                         std::uint32_t max_world, std::uint64_t max_elems,
                                         std::uint32_t force_world = 0);

/// Totals of a check run; `wrong` counts wrong elements inside params plus changed guard bytes
/// around them (must be 0).
struct VerifyStats {
  std::uint64_t buckets = 0;
  std::uint64_t params = 0;
  std::uint64_t chunks = 0;  ///< kernel work items, or memcpys for the per-slice path
  std::uint64_t bytes = 0;   ///< real parameter bytes written
  std::uint64_t wrong = 0;
  std::uint64_t guard_wrong = 0;
  std::uint32_t max_world = 0;
  std::uint64_t by_dtype[3] = {0, 0, 0};  ///< fp32, bf16, fp16 buckets
};

struct VerifyConfig {
  std::uint64_t seed = 1;
  std::uint32_t buckets = 10000;
  std::uint32_t max_world = 64;
  std::uint64_t max_elems = 1u << 20;  ///< elements per bucket at most
  std::uint32_t threads = 8;           ///< host threads (own streams) of the kernel check
  GatherVariant variant = kDefaultGatherVariant;  ///< of the gather kernel
  /// Every rank input and every param output of the kernel check its own cudaMalloc of exactly
  /// its bytes (sources rounded up to 4, the kernel's precondition), so that compute-sanitizer
  /// memcheck sees any access past a buffer (in the arenas it would land in a neighbour).
  bool per_allocation = false;
  /// When not empty, these buckets (bf16, params' numels in id order, no misalignment) are
  /// checked instead of `buckets` random ones: the kernel over `fixed_world` simulated ranks'
  /// shards, NCCL over the world's ranks (what `bench` times; bench_bucket_numels).
  std::vector<std::vector<std::uint64_t>> fixed_buckets;
  std::uint32_t fixed_world = 8;
  PlantedBug planted = PlantedBug::None;  ///< test-only: a bug verify must report
};

/// The fused kernel on the current device, W simulated ranks' shards all on it.
[[nodiscard]] VerifyStats verify_kernel(const VerifyConfig& config);

/// Results of the NCCL check for this process's ranks.
struct NcclVerifyStats {
  VerifyStats all_gather;  ///< the gathered flat buffer against every rank's input
  VerifyStats per_slice;   ///< all-gather then one cudaMemcpyAsync per (param, rank) slice
  VerifyStats batched;     ///< all-gather then the same copies as one cudaMemcpyBatchAsync
  VerifyStats fused;       ///< all-gather then the fused kernel from the gathered buffer
};

/// ncclAllGather across `world` (W = its world size) then both reassemblies, on every local GPU.
[[nodiscard]] NcclVerifyStats verify_nccl(NcclWorld& world, const VerifyConfig& config);

}  // namespace zfetch::gpu
