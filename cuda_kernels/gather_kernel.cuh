// The fused ZeRO-3 reassembly kernel: one launch copies every (param, rank) slice of a bucket.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cuda_kernels/gather_variant.h"
#include "cuda_kernels/partition.h"

namespace zfetch::gpu {

/// One warp's unit of work in device memory: absolute addresses, built on the host.
struct alignas(16) DeviceChunk {
  const std::byte* src;
  std::byte* dst;
  std::uint64_t bytes;
  std::uint64_t reserved;
};

/// Threads per block of the gather kernel (8 warps).
inline constexpr int kGatherThreads = 256;

/// Bugs planted on purpose so that tests can show `zfetch-gpu verify` reports each one (never set
/// outside those tests): Overrun: the table's last chunk copies 16 bytes too many (writes past its
/// param's end); PaddingOffByOne: the table is built with padding W - N mod W (the outer mod W
/// left out, so params whose size W divides are laid out one element per rank too long); Race:
/// the gather is launched on a stream not ordered after its inputs' upload (verify plants it).
enum class PlantedBug { None, Overrun, PaddingOffByOne, Race };

/// A tile variant's block: `threads` threads copying chunks of at most `bytes`; {0, 0} for the
/// persistent variants.
struct TileShape {
  std::uint32_t threads = 0;
  std::uint32_t bytes = 0;
};
[[nodiscard]] TileShape tile_shape(GatherVariant variant);

/// Launches the gather over `num_chunks` chunks in `chunks` (device memory) with `grid` blocks;
/// every address is offset by `src_shift` / `dst_shift` bytes (benchmarks rotate buffer sets
/// that way; 0 otherwise). Checks the launch.
void launch_gather(const DeviceChunk* chunks, std::uint32_t num_chunks, int grid,
                   std::ptrdiff_t src_shift, std::ptrdiff_t dst_shift, cudaStream_t stream,
                   GatherVariant variant = kDefaultGatherVariant);

/// Blocks of a persistent grid on the current device: resident blocks (occupancy) times SMs.
[[nodiscard]] int gather_resident_blocks();

/// A bucket's reassembly, planned once for fixed buffers: the host-built work table in a small
/// device table, launched as one persistent-grid kernel.
///
/// Preconditions: every source (rank) buffer is readable up to the next 4-byte boundary past its
/// last byte (cudaMalloc allocations are; the misaligned path reads whole aligned words).
class FusedGather {
 public:
  /// Plans the gather of `layout` from `rank_src[r]` (rank r's flat input, device pointers) into
  /// `param_dst[i]` (param i's own buffer of N_i elements). `max_chunk_bytes` 0 picks
  /// choose_chunk_bytes. Uploads the table on `stream` (current device) and waits for it: a plain
  /// cudaMemcpy from pageable memory may return before its DMA lands, and the non-blocking
  /// streams the kernel runs on do not order after it (seen: wrong elements on an H200).
  FusedGather(const BucketLayout& layout, std::span<const std::byte* const> rank_src,
              std::span<std::byte* const> param_dst, cudaStream_t stream,
              std::uint32_t max_chunk_bytes = 0, GatherVariant variant = kDefaultGatherVariant,
              PlantedBug planted = PlantedBug::None);
  ~FusedGather();
  FusedGather(const FusedGather&) = delete;
  FusedGather& operator=(const FusedGather&) = delete;

  /// Enqueues the gather on `stream`.
  void launch(cudaStream_t stream, std::ptrdiff_t src_shift = 0,
              std::ptrdiff_t dst_shift = 0) const;

  [[nodiscard]] std::uint32_t num_chunks() const { return num_chunks_; }
  [[nodiscard]] std::uint32_t chunk_bytes() const { return chunk_bytes_; }
  [[nodiscard]] int grid() const { return grid_; }
  /// Overrides the persistent grid's block count (benchmarks of the grid size, room for other
  /// streams); >= 1. Tile variants always launch one block per chunk and ignore it.
  void set_grid(int blocks) { grid_ = blocks < 1 ? 1 : blocks; }

 private:
  DeviceChunk* table_ = nullptr;
  std::uint32_t num_chunks_ = 0;
  std::uint32_t chunk_bytes_ = 0;
  int grid_ = 1;
  GatherVariant variant_ = kDefaultGatherVariant;
};

}  // namespace zfetch::gpu
