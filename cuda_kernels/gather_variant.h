// The fused gather kernel's variants, each with a name for output and the command line
// (`zfetch-gpu bench` times them all, `zfetch-gpu verify --variant NAME` checks one).
#pragma once

#include "base/enum_names.h"

namespace zfetch::gpu {

/// Tiles: one block per chunk of at most one tile (grid = chunks), 16-byte vectors per thread.
/// Persistent grids of warps: one warp per chunk, 16-byte loads in flight per lane, with cache
/// hints; such a grid can be given fewer blocks than the GPU holds (FusedGather::set_grid),
/// which leaves room for the kernels of other streams. The numbers are those the bench output
/// printed before the variants had names.
enum class GatherVariant : int {
  Warp4 = 0,            ///< persistent: 4 loads in flight per lane, plain
  Warp8 = 1,            ///< persistent: 8 plain
  Warp4Streaming = 2,   ///< persistent: 4, ld/st.cs
  Warp8NoAllocate = 3,  ///< persistent: 8, ld.nc.L1::no_allocate.L2::256B
  Warp8Streaming = 4,   ///< persistent: 8, ld/st.cs
  Tile8K = 5,           ///< 8 KiB tiles of 256 threads, 2 vectors each
  Tile16K = 6,          ///< 16 KiB tiles of 256 threads, 4 vectors each
  Tile16K512 = 7,       ///< 16 KiB tiles of 512 threads, 2 vectors each
};

inline constexpr base::EnumNames<GatherVariant::Tile16K512> kGatherVariantNames(
    "warp4", "warp8", "warp4-cs", "warp8-nc", "warp8-cs", "tile8k", "tile16k", "tile16k-512");

/// What a gather runs unless told otherwise (docs/gpu.md, "How the kernel got there").
inline constexpr GatherVariant kDefaultGatherVariant = GatherVariant::Tile8K;
/// The replay's: a persistent grid, so that compute kernels run beside it.
inline constexpr GatherVariant kPersistentGatherVariant = GatherVariant::Warp8;

}  // namespace zfetch::gpu
