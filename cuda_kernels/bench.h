// Timing of the fused gather, a plain device-to-device copy and the NCCL paths (nccl-tests
// method: warm-up, CUDA events, medians; buffers rotated beyond L2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_kernels/gather_variant.h"
#include "cuda_kernels/nccl_world.h"

namespace zfetch::gpu {

struct BenchConfig {
  std::uint64_t min_bytes = 4096;
  std::uint64_t max_bytes = 1ULL << 30;
  int samples = 20;             ///< timed samples per measurement (median reported)
  std::uint32_t sim_world = 8;  ///< simulated ranks whose shards the kernel gathers on one GPU
  std::uint32_t small_params = 1000;
  std::uint64_t seed = 1;
  bool variants = true;  ///< also time every kernel variant on 256 MiB and 1 GiB buckets
};

/// Median and spread of per-iteration times; a sample times `inner` back-to-back iterations.
struct Timing {
  double median_ns = 0;
  double min_ns = 0;
  double max_ns = 0;
  int samples = 0;
  int inner = 0;
};

struct SweepPoint {
  std::uint64_t bytes = 0;  ///< real parameter bytes of the bucket (bf16)
  std::uint32_t params = 0;
  std::uint32_t chunks = 0;
  Timing memcpy_d2d;                 ///< one cudaMemcpyAsync of `bytes`
  Timing kernel;                     ///< fused gather of sim_world shards on one GPU
  std::uint64_t gathered_bytes = 0;  ///< the NCCL layout's W * rank_bytes
  Timing all_gather;                 ///< ncclAllGather alone
  Timing ag_copies;                  ///< all-gather + one cudaMemcpyAsync per (param, rank) slice
  Timing ag_kernel;                  ///< all-gather + the fused kernel
  Timing reduce_scatter;             ///< ncclReduceScatter, input gathered_bytes
  double table_build_ns = 0;  ///< building the kernel's work table and uploading it (host clock)
};

struct SmallParamsPoint {
  std::uint32_t params = 0;
  std::uint64_t bytes = 0;
  std::uint64_t copies = 0;  ///< memcpys of the per-slice path per iteration
  Timing memcpy_d2d;
  Timing kernel_world;  ///< fused gather from the W-rank gathered buffer (NCCL's layout)
  Timing kernel_sim;    ///< fused gather of sim_world shards
  Timing ag_copies;     ///< all-gather + one host-launched cudaMemcpyAsync per slice (DeepSpeed)
  Timing ag_graph;      ///< all-gather + the same copies replayed as one captured CUDA graph
  Timing ag_batched;    ///< all-gather + the same copies as one cudaMemcpyBatchAsync
  Timing ag_kernel;     ///< all-gather + the fused kernel
  double table_build_ns = 0;  ///< the fused kernel's work table built and uploaded (host clock)
  std::uint32_t table_chunks = 0;
};

/// One kernel variant / chunk size on a large bucket, with a memcpy of the same run.
struct VariantPoint {
  std::uint64_t bytes = 0;
  GatherVariant variant = kDefaultGatherVariant;
  std::uint32_t chunk_bytes = 0;  ///< 0: choose_chunk_bytes
  std::uint32_t chunks = 0;
  int grid_divisor = 1;  ///< persistent grid = resident blocks / grid_divisor
  Timing memcpy_d2d;
  Timing kernel;
};

struct BenchResult {
  std::string device;
  int world = 1;
  std::uint32_t sim_world = 8;
  std::vector<SweepPoint> sweep;
  SmallParamsPoint small;
  std::vector<VariantPoint> variants;
  std::uint64_t h2d_bytes = 0;
  Timing h2d;  ///< the h2d_bytes copy
  struct SizedTiming {
    std::uint64_t bytes = 0;
    Timing time;
  };
  std::vector<SizedTiming> h2d_points;  ///< pinned host-to-device copies, 4 KiB to h2d_bytes
};

/// Runs the sweep (min_bytes to max_bytes, x4 to 16 MiB then x2), the small-params bucket and
/// pinned host-to-device copies (4 KiB to 256 MiB); kernels and copies on the first local GPU, NCCL
/// on all ranks.
[[nodiscard]] BenchResult run_bench(NcclWorld& world, const BenchConfig& config);

}  // namespace zfetch::gpu
