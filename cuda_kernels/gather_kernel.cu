// The fused ZeRO-3 reassembly kernel (see gather_kernel.cuh). A host-built table of chunks is
// copied either one chunk per block (tile variants: a grid of one block per chunk, the shape of
// cudaMemcpyAsync's own copy kernel) or one chunk per warp of a persistent grid. A group of
// threads copies a chunk with 16-byte vectors when source and destination share their
// alignment, else 4-byte words (funnel-shifted when they differ mod 4).
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <iterator>

#include "cuda_kernels/check.h"
#include "cuda_kernels/gather_kernel.cuh"

namespace zfetch::gpu {

void fail(const char* file, int line, const std::string& message) {
  throw GpuError(std::string(file) + ":" + std::to_string(line) + ": error: " + message);
}

namespace {

constexpr int kWordUnroll = 4;  // independent 4-byte loads in flight per lane (slow paths)

template <int Hint>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  if constexpr (Hint == 1) {
    return __ldcs(p);
  } else if constexpr (Hint == 2) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
    return r;
  } else {
    return *p;
  }
}
template <int Hint>
__device__ __forceinline__ void store16(uint4* p, const uint4& v) {
  if constexpr (Hint == 1) {
    __stcs(p, v);
  } else {
    *p = v;
  }
}
__device__ __forceinline__ std::uint32_t load4(const std::uint32_t* p) {
  return *p;
}

// In every copy below, `Width` threads copy together; `t` is this thread's index among them.

// Single bytes [0, n): heads and tails, n < 16.
template <unsigned Width>
__device__ __forceinline__ void copy_bytes(std::byte* d, const std::byte* s, std::uint64_t n,
                                           unsigned t) {
  for (std::uint64_t i = t; i < n; i += Width) {
    d[i] = s[i];
  }
}

// Body copies, both pointers aligned to the unit; all loads of a round issued before its stores.
template <unsigned Width, int Unroll, int Hint>
__device__ __forceinline__ void copy_vec16(uint4* d, const uint4* s, std::uint64_t n, unsigned t) {
  for (std::uint64_t base = 0; base < n; base += Width * Unroll) {
    uint4 r[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Width + t;
      if (i < n) {
        r[u] = load16<Hint>(s + i);
      }
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Width + t;
      if (i < n) {
        store16<Hint == 1 ? 1 : 0>(d + i, r[u]);
      }
    }
  }
}

template <unsigned Width>
__device__ __forceinline__ void copy_words(std::uint32_t* d, const std::uint32_t* s,
                                           std::uint64_t n, unsigned t) {
  for (std::uint64_t base = 0; base < n; base += Width * kWordUnroll) {
    std::uint32_t r[kWordUnroll];
#pragma unroll
    for (int u = 0; u < kWordUnroll; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Width + t;
      if (i < n) {
        r[u] = load4(s + i);
      }
    }
#pragma unroll
    for (int u = 0; u < kWordUnroll; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Width + t;
      if (i < n) {
        d[i] = r[u];
      }
    }
  }
}

// Destination 4-byte aligned, source off by `off` in 1..3 bytes: each output word is a funnel
// shift of the two aligned source words that cover it.
template <unsigned Width>
__device__ __forceinline__ void copy_words_shifted(std::uint32_t* d, const std::byte* s,
                                                   std::uint64_t n, unsigned t) {
  const auto addr = reinterpret_cast<std::uintptr_t>(s);
  const unsigned shift = static_cast<unsigned>(addr & 3U) * 8U;
  const auto* w = reinterpret_cast<const std::uint32_t*>(addr & ~std::uintptr_t{3});
  for (std::uint64_t base = 0; base < n; base += Width * kWordUnroll) {
    std::uint32_t r[kWordUnroll];
#pragma unroll
    for (int u = 0; u < kWordUnroll; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Width + t;
      if (i < n) {
        r[u] = __funnelshift_r(w[i], w[i + 1], shift);
      }
    }
#pragma unroll
    for (int u = 0; u < kWordUnroll; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Width + t;
      if (i < n) {
        d[i] = r[u];
      }
    }
  }
}

template <unsigned Width, int Unroll, int Hint>
__device__ __forceinline__ void group_copy(std::byte* d, const std::byte* s, std::uint64_t n,
                                           unsigned t) {
  const auto da = reinterpret_cast<std::uintptr_t>(d);
  const auto sa = reinterpret_cast<std::uintptr_t>(s);
  const unsigned align = ((da ^ sa) & 15U) == 0 ? 16U : 4U;
  // Scalar head up to the destination's alignment.
  const std::uint64_t head = std::min<std::uint64_t>((align - (da & (align - 1))) & (align - 1), n);
  copy_bytes<Width>(d, s, head, t);
  d += head;
  s += head;
  n -= head;
  const std::uint64_t units = n / align;
  if (align == 16) {
    copy_vec16<Width, Unroll, Hint>(reinterpret_cast<uint4*>(d), reinterpret_cast<const uint4*>(s),
                                    units, t);
  } else if (((da ^ sa) & 3U) == 0) {
    copy_words<Width>(reinterpret_cast<std::uint32_t*>(d),
                      reinterpret_cast<const std::uint32_t*>(s), units, t);
  } else {
    copy_words_shifted<Width>(reinterpret_cast<std::uint32_t*>(d), s, units, t);
  }
  // Scalar tail.
  const std::uint64_t done = units * align;
  copy_bytes<Width>(d + done, s + done, n - done, t);
}

template <int Unroll, int Hint>
__global__ void __launch_bounds__(kGatherThreads)
    gather_kernel(const DeviceChunk* __restrict__ chunks, std::uint32_t num_chunks,
                  std::ptrdiff_t src_shift, std::ptrdiff_t dst_shift) {
  const unsigned lane = threadIdx.x & 31U;
  const std::uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const std::uint32_t stride = (gridDim.x * blockDim.x) >> 5;
  if (warp >= num_chunks) {
    return;
  }
  DeviceChunk cur = chunks[warp];
  for (std::uint32_t c = warp; c < num_chunks; c += stride) {
    // Load the next descriptor before copying this chunk, so its latency overlaps the copy.
    DeviceChunk next{};
    if (c + stride < num_chunks) {
      next = chunks[c + stride];
    }
    group_copy<32, Unroll, Hint>(cur.dst + dst_shift, cur.src + src_shift, cur.bytes, lane);
    cur = next;
  }
}

// One block per chunk, `Unroll` 16-byte vectors per thread: blocks are dispatched in table
// order and retire after one short copy, so the bytes in flight form one compact window that
// sweeps the buffers in order (cudaMemcpyAsync's copy kernel has this shape; a persistent grid
// whose warps drift apart over the buffers reached 91-93% of it on an H200, docs/gpu.md).
template <unsigned Threads, int Unroll>
__global__ void __launch_bounds__(Threads)
    tile_gather_kernel(const DeviceChunk* __restrict__ chunks, std::ptrdiff_t src_shift,
                       std::ptrdiff_t dst_shift) {
  const DeviceChunk c = chunks[blockIdx.x];
  group_copy<Threads, Unroll, 0>(c.dst + dst_shift, c.src + src_shift, c.bytes, threadIdx.x);
}

// The planted padding bug: every param's padding W - N mod W instead of (W - N mod W) mod W.
BucketLayout padding_off_by_one(const BucketLayout& layout) {
  BucketLayout wrong = layout;
  wrong.rank_numel = 0;
  for (std::size_t i = 0; i < wrong.params.size(); ++i) {
    ParamPartition& p = wrong.params[i];
    p.padding = layout.world - p.numel % layout.world;
    p.part_numel = (p.numel + p.padding) / layout.world;
    wrong.input_offset[i] = wrong.rank_numel;
    wrong.rank_numel += p.part_numel;
  }
  return wrong;
}

using TileKernel = void (*)(const DeviceChunk*, std::ptrdiff_t, std::ptrdiff_t);
using WarpKernel = void (*)(const DeviceChunk*, std::uint32_t, std::ptrdiff_t, std::ptrdiff_t);

// One variant's kernel: a tile kernel <threads, 16-byte vectors per thread> (a tile is
// threads x vectors x 16 bytes) or a persistent grid's <loads in flight per lane, cache hint>.
struct VariantKernel {
  TileShape tile;  // {0, 0}: a persistent grid
  TileKernel tile_kernel;
  WarpKernel warp_kernel;
};

// By GatherVariant value.
const VariantKernel kVariantKernels[] = {
    {{}, nullptr, gather_kernel<4, 0>},                    // Warp4
    {{}, nullptr, gather_kernel<8, 0>},                    // Warp8
    {{}, nullptr, gather_kernel<4, 1>},                    // Warp4Streaming
    {{}, nullptr, gather_kernel<8, 2>},                    // Warp8NoAllocate
    {{}, nullptr, gather_kernel<8, 1>},                    // Warp8Streaming
    {{256, 8192}, tile_gather_kernel<256, 2>, nullptr},    // Tile8K
    {{256, 16384}, tile_gather_kernel<256, 4>, nullptr},   // Tile16K
    {{512, 16384}, tile_gather_kernel<512, 2>, nullptr}};  // Tile16K512
static_assert(std::size(kVariantKernels) == kGatherVariantNames.kCount);

const VariantKernel& variant_kernel(GatherVariant variant) {
  return kVariantKernels[static_cast<std::size_t>(variant)];
}

}  // namespace

TileShape tile_shape(GatherVariant variant) {
  return variant_kernel(variant).tile;
}

void launch_gather(const DeviceChunk* chunks, std::uint32_t num_chunks, int grid,
                   std::ptrdiff_t src_shift, std::ptrdiff_t dst_shift, cudaStream_t stream,
                   GatherVariant variant) {
  if (num_chunks == 0) {
    return;
  }
  const VariantKernel& k = variant_kernel(variant);
  if (k.tile_kernel != nullptr) {
    // One block per chunk: grid.x allows 2^31 - 1 blocks (4 KiB tiles: 8 TiB).
    if (num_chunks > 0x7fffffffU) {
      fail(__FILE__, __LINE__, "a tile gather of more than 2^31 - 1 chunks");
    }
    k.tile_kernel<<<num_chunks, k.tile.threads, 0, stream>>>(chunks, src_shift, dst_shift);
  } else {
    k.warp_kernel<<<grid, kGatherThreads, 0, stream>>>(chunks, num_chunks, src_shift, dst_shift);
  }
  ZFETCH_CUDA_CHECK_LAUNCH();
}

int gather_resident_blocks() {
  int device = 0;
  ZFETCH_CUDA_CHECK(cudaGetDevice(&device));
  int sms = 0;
  ZFETCH_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int per_sm = 0;
  ZFETCH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gather_kernel<8, 0>,
                                                                  kGatherThreads, 0));
  return std::max(1, sms * per_sm);
}

FusedGather::FusedGather(const BucketLayout& layout, std::span<const std::byte* const> rank_src,
                         std::span<std::byte* const> param_dst, cudaStream_t stream,
                         std::uint32_t max_chunk_bytes, GatherVariant variant, PlantedBug planted)
    : variant_(variant) {
  const int resident = gather_resident_blocks();
  const auto warps = static_cast<std::uint32_t>(resident * (kGatherThreads / 32));
  const TileShape tile = tile_shape(variant);
  // A tile variant's chunk is one block's tile; a smaller max_chunk_bytes (tests) still holds.
  chunk_bytes_ = max_chunk_bytes != 0 ? max_chunk_bytes
                 : tile.threads != 0  ? tile.bytes
                                      : choose_chunk_bytes(layout.output_bytes(), warps);
  if (tile.threads != 0) {
    chunk_bytes_ = std::min(chunk_bytes_, tile.bytes);
  }
  std::vector<ChunkDesc> table = build_work_table(
      planted == PlantedBug::PaddingOffByOne ? padding_off_by_one(layout) : layout, chunk_bytes_);
  if (planted == PlantedBug::Overrun && !table.empty()) {
    table.back().bytes += 16;
  }
  std::vector<DeviceChunk> host(table.size());
  for (std::size_t k = 0; k < table.size(); ++k) {
    const ChunkDesc& c = table[k];
    host[k] =
        DeviceChunk{rank_src[c.rank] + c.src_offset, param_dst[c.param] + c.dst_offset, c.bytes, 0};
  }
  num_chunks_ = static_cast<std::uint32_t>(host.size());
  const std::uint32_t blocks_needed =
      (num_chunks_ + kGatherThreads / 32 - 1) / (kGatherThreads / 32);
  grid_ = std::max(1, std::min(resident, static_cast<int>(blocks_needed)));
  if (num_chunks_ > 0) {
    ZFETCH_CUDA_CHECK(cudaMalloc(&table_, host.size() * sizeof(DeviceChunk)));
    ZFETCH_CUDA_CHECK(cudaMemcpyAsync(table_, host.data(), host.size() * sizeof(DeviceChunk),
                                      cudaMemcpyHostToDevice, stream));
    ZFETCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

FusedGather::~FusedGather() {
  if (table_ != nullptr) {
    // Destructors must not throw and a library does not print: a failed free is ignored (a
    // sticky CUDA error surfaces at the next checked call).
    static_cast<void>(cudaFree(table_));
  }
}

void FusedGather::launch(cudaStream_t stream, std::ptrdiff_t src_shift,
                         std::ptrdiff_t dst_shift) const {
  launch_gather(table_, num_chunks_, grid_, src_shift, dst_shift, stream, variant_);
}

}  // namespace zfetch::gpu
