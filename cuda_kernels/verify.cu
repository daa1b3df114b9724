// Exact data checks of the fused gather and the NCCL path (see verify.h).
#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <thread>

#include "cuda_kernels/buffers.h"
#include "cuda_kernels/check.h"
#include "cuda_kernels/gather_kernel.cuh"
#include "cuda_kernels/verify.h"

namespace zfetch::gpu {

namespace {

constexpr std::byte kPoison{0xA5};
constexpr std::byte kInputFill{0x3C};
constexpr std::uint64_t kGuard = 64;  // poisoned bytes checked after each param
constexpr std::uint64_t kMaxParams = 300;

// Counter-based stream: the k-th draw is hash3(seed, index, k).
class Draws {
 public:
  Draws(std::uint64_t seed, std::uint64_t index) : seed_(seed), index_(index) {}
  std::uint64_t next() { return hash3(seed_, index_, counter_++); }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }

 private:
  std::uint64_t seed_;
  std::uint64_t index_;
  std::uint64_t counter_ = 0;
};

std::uint64_t align_up(std::uint64_t x, std::uint64_t a) {
  return (x + a - 1) / a * a;
}

// Where every buffer of a bucket lives inside the two arenas.
struct Placement {
  std::vector<std::uint64_t> src;  // rank r's input offset in the input arena
  std::vector<std::uint64_t> dst;  // param i's offset in the output arena
  std::uint64_t in_bytes = 0;
  std::uint64_t out_bytes = 0;
};

Placement place(const RandomBucket& b, const BucketLayout& layout) {
  Placement pl;
  std::uint64_t at = 0;
  for (std::uint32_t r = 0; r < layout.world; ++r) {
    if (b.flat_source) {
      pl.src.push_back(b.src_misalign[0] + r * layout.rank_bytes());
      at = pl.src.back() + layout.rank_bytes();
    } else {
      pl.src.push_back(align_up(at, 256) + b.src_misalign[r]);
      at = pl.src.back() + layout.rank_bytes();
    }
  }
  pl.in_bytes = at + 16;
  at = 0;
  for (std::size_t i = 0; i < layout.params.size(); ++i) {
    pl.dst.push_back(align_up(at, 256) + b.dst_misalign[i]);
    at = pl.dst.back() + layout.params[i].numel * layout.elem_bytes + kGuard;
  }
  pl.out_bytes = at;
  return pl;
}

// Compares a device output image against the expected params and the poison around them.
void check_output(const BucketLayout& layout, std::uint64_t seed, const Placement& pl,
                  const std::byte* got, VerifyStats& stats) {
  const std::uint32_t eb = layout.elem_bytes;
  std::vector<std::byte> expected;
  std::uint64_t cursor = 0;
  for (std::uint32_t i = 0; i < layout.params.size(); ++i) {
    for (std::uint64_t k = cursor; k < pl.dst[i]; ++k) {
      stats.guard_wrong += got[k] != kPoison ? 1 : 0;
    }
    const std::uint64_t n = layout.params[i].numel;
    expected.resize(n * eb);
    fill_expected_param(eb, seed, i, expected);
    const std::byte* param = got + pl.dst[i];
    for (std::uint64_t j = 0; j < n; ++j) {
      stats.wrong += std::memcmp(param + j * eb, expected.data() + j * eb, eb) != 0 ? 1 : 0;
    }
    cursor = pl.dst[i] + n * eb;
    stats.bytes += n * eb;
  }
  for (std::uint64_t k = cursor; k < pl.out_bytes; ++k) {
    stats.guard_wrong += got[k] != kPoison ? 1 : 0;
  }
  stats.params += layout.params.size();
}

void count_bucket(const RandomBucket& b, VerifyStats& stats) {
  ++stats.buckets;
  stats.max_world = std::max(stats.max_world, b.world);
  stats.by_dtype[b.elem_bytes == 4 ? 0 : (b.half ? 2 : 1)] += 1;
}

}  // namespace

RandomBucket random_bucket(std::uint64_t seed, std::uint64_t index, std::uint32_t max_world,
                           std::uint64_t max_elems, std::uint32_t force_world) {
  Draws d(seed, index);
  RandomBucket b;
  static constexpr std::array<std::uint32_t, 10> kWorlds = {1, 2, 3, 4, 7, 8, 16, 32, 63, 64};
  const std::uint64_t wc = d.below(100);
  if (force_world > 0) {
    b.world = force_world;
  } else if (wc < 30) {
    b.world = static_cast<std::uint32_t>(1 + d.below(std::min<std::uint32_t>(8, max_world)));
  } else if (wc < 55) {
    const std::uint32_t w = kWorlds[d.below(kWorlds.size())];
    b.world = std::min(w, max_world);
  } else {
    b.world = static_cast<std::uint32_t>(1 + d.below(max_world));
  }
  const std::uint64_t dt = d.below(3);
  b.elem_bytes = dt == 0 ? 4 : 2;
  b.half = dt == 2;
  const std::uint64_t pc = d.below(100);
  const std::uint64_t nparams =
      pc < 50 ? 1 + d.below(8) : (pc < 90 ? 1 + d.below(48) : 1 + d.below(kMaxParams));
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < nparams; ++i) {
    const std::uint64_t c = d.below(100);
    std::uint64_t n = 0;
    if (c < 8) {
      n = 0;
    } else if (c < 25) {
      n = d.below(b.world + 1);  // smaller than a shard's worth
    } else if (c < 60) {
      n = d.below(1000);
    } else if (c < 90) {
      n = d.below(10000);
    } else if (c < 99) {
      n = d.below(100000);
    } else {
      n = d.below(1000000);
    }
    if (total + n > max_elems) {
      n = max_elems - total;
    }
    total += n;
    b.numels.push_back(n);
  }
  b.flat_source = d.below(2) == 0;
  static constexpr std::array<std::uint32_t, 4> kChunks = {0, 16, 256, 4096};
  b.chunk_bytes = kChunks[d.below(kChunks.size())];
  if (b.chunk_bytes != 0 && total * b.elem_bytes / b.chunk_bytes > 200000) {
    b.chunk_bytes = 0;
  }
  const std::uint32_t slots = 256 / b.elem_bytes;
  for (std::uint64_t i = 0; i < nparams; ++i) {
    b.dst_misalign.push_back(
        d.below(2) == 0 ? 0 : static_cast<std::uint32_t>(d.below(slots)) * b.elem_bytes);
  }
  for (std::uint32_t r = 0; r < b.world; ++r) {
    b.src_misalign.push_back(
        d.below(2) == 0 ? 0 : static_cast<std::uint32_t>(d.below(slots)) * b.elem_bytes);
  }
  return b;
}

namespace {

int variant_of(const VerifyConfig& config) {
  return config.variant < 0 ? kDefaultGatherVariant : config.variant;
}

// One worker: its own stream, arenas and pinned buffers; buckets first, first + step, ...
void verify_kernel_worker(const VerifyConfig& config, int device, std::uint32_t first,
                          std::uint32_t step, VerifyStats& stats) {
  ZFETCH_CUDA_CHECK(cudaSetDevice(device));
  // Inputs hold the real elements plus padding (< W per param) and per-rank alignment;
  // outputs the real elements plus alignment and guard per param.
  const std::uint64_t in_cap = config.max_elems * 4 + kMaxParams * config.max_world * 4 +
                               std::uint64_t{config.max_world} * 512 + 4096;
  const std::uint64_t out_cap = config.max_elems * 4 + kMaxParams * (512 + kGuard) + 4096;
  DeviceBuffer in(in_cap);
  DeviceBuffer out(out_cap);
  PinnedBuffer host_in(in_cap);
  PinnedBuffer host_out(out_cap);
  cudaStream_t stream = nullptr;
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (std::uint32_t bi = first; bi < config.buckets; bi += step) {
    const RandomBucket b = random_bucket(config.seed, bi, config.max_world, config.max_elems);
    const BucketLayout layout = make_bucket_layout(b.numels, b.world, b.elem_bytes);
    const Placement pl = place(b, layout);
    if (pl.in_bytes > in_cap || pl.out_bytes > out_cap) {
      fail(__FILE__, __LINE__, "verify bucket exceeds its arena (internal sizing bug)");
    }
    std::memset(host_in.get(), static_cast<int>(kInputFill), pl.in_bytes);
    for (std::uint32_t r = 0; r < b.world; ++r) {
      fill_rank_input(layout, config.seed, r,
                      std::span<std::byte>(host_in.get() + pl.src[r], layout.rank_bytes()));
    }
    ZFETCH_CUDA_CHECK(
        cudaMemcpyAsync(in.get(), host_in.get(), pl.in_bytes, cudaMemcpyHostToDevice, stream));
    ZFETCH_CUDA_CHECK(cudaMemsetAsync(out.get(), static_cast<int>(kPoison), pl.out_bytes, stream));
    std::vector<const std::byte*> src;
    std::vector<std::byte*> dst;
    for (const std::uint64_t o : pl.src) {
      src.push_back(in.get() + o);
    }
    for (const std::uint64_t o : pl.dst) {
      dst.push_back(out.get() + o);
    }
    const FusedGather gather(layout, src, dst, stream, b.chunk_bytes, variant_of(config));
    gather.launch(stream);
    ZFETCH_CUDA_CHECK(
        cudaMemcpyAsync(host_out.get(), out.get(), pl.out_bytes, cudaMemcpyDeviceToHost, stream));
    ZFETCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    check_output(layout, config.seed, pl, host_out.get(), stats);
    stats.chunks += gather.num_chunks();
    count_bucket(b, stats);
  }
  ZFETCH_CUDA_CHECK(cudaStreamDestroy(stream));
}

void merge(VerifyStats& into, const VerifyStats& s) {
  into.buckets += s.buckets;
  into.params += s.params;
  into.chunks += s.chunks;
  into.bytes += s.bytes;
  into.wrong += s.wrong;
  into.guard_wrong += s.guard_wrong;
  into.max_world = std::max(into.max_world, s.max_world);
  for (int k = 0; k < 3; ++k) {
    into.by_dtype[k] += s.by_dtype[k];
  }
}

}  // namespace

VerifyStats verify_kernel(const VerifyConfig& config) {
  int device = 0;
  ZFETCH_CUDA_CHECK(cudaGetDevice(&device));
  const std::uint32_t workers = std::max(1u, std::min(config.threads, config.buckets));
  std::vector<VerifyStats> parts(workers);
  std::vector<std::exception_ptr> errors(workers);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < workers; ++t) {
    threads.emplace_back([&, t] {
      try {
        verify_kernel_worker(config, device, t, workers, parts[t]);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (std::thread& th : threads) {
    th.join();
  }
  for (const std::exception_ptr& e : errors) {
    if (e) {
      std::rethrow_exception(e);
    }
  }
  VerifyStats stats;
  for (const VerifyStats& p : parts) {
    merge(stats, p);
  }
  return stats;
}

NcclVerifyStats verify_nccl(NcclWorld& world, const VerifyConfig& config) {
  NcclVerifyStats stats;
  const auto w = static_cast<std::uint32_t>(world.world_size());
  const std::uint64_t rank_cap = config.max_elems * 4 / w + kMaxParams * 4 + 4096;
  const std::uint64_t gathered_cap = rank_cap * w + 4096;
  const std::uint64_t out_cap = config.max_elems * 4 + kMaxParams * (512 + kGuard) + 4096;
  struct PerRank {
    DeviceBuffer send;
    DeviceBuffer gathered;
    DeviceBuffer out;
  };
  std::vector<PerRank> bufs;
  for (LocalRank& lr : world.local()) {
    ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
    bufs.push_back(
        PerRank{DeviceBuffer(rank_cap), DeviceBuffer(gathered_cap), DeviceBuffer(out_cap)});
  }
  PinnedBuffer host_all(gathered_cap);
  PinnedBuffer host_got(std::max(gathered_cap, out_cap));
  for (std::uint32_t bi = 0; bi < config.buckets; ++bi) {
    RandomBucket b = random_bucket(config.seed, bi, w, config.max_elems, w);
    b.flat_source = true;
    std::fill(b.src_misalign.begin(), b.src_misalign.end(), 0);
    const BucketLayout layout = make_bucket_layout(b.numels, w, b.elem_bytes);
    const Placement pl = place(b, layout);
    const std::uint64_t rb = layout.rank_bytes();
    if (pl.out_bytes > out_cap || layout.gathered_bytes() > gathered_cap) {
      fail(__FILE__, __LINE__, "verify bucket exceeds its arena (internal sizing bug)");
    }
    for (std::uint32_t r = 0; r < w; ++r) {
      fill_rank_input(layout, config.seed, r, std::span<std::byte>(host_all.get() + r * rb, rb));
    }
    std::vector<const std::byte*> send;
    std::vector<std::byte*> recv;
    std::size_t k = 0;
    for (LocalRank& lr : world.local()) {
      ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
      PerRank& pr = bufs[k++];
      ZFETCH_CUDA_CHECK(cudaMemcpyAsync(pr.send.get(), host_all.get() + lr.rank * rb, rb,
                                        cudaMemcpyHostToDevice, lr.stream));
      ZFETCH_CUDA_CHECK(cudaMemsetAsync(pr.gathered.get(), static_cast<int>(kPoison),
                                        layout.gathered_bytes(), lr.stream));
      send.push_back(pr.send.get());
      recv.push_back(pr.gathered.get());
    }
    // Every rank builds the same bucket, so all agree to skip an empty one.
    if (layout.rank_numel > 0) {
      all_gather(world, send, recv, layout.rank_numel, nccl_type(b.elem_bytes, b.half));
    }
    k = 0;
    for (LocalRank& lr : world.local()) {
      ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
      PerRank& pr = bufs[k++];
      // The gathered buffer itself, element by element, against every rank's input.
      ZFETCH_CUDA_CHECK(cudaMemcpyAsync(host_got.get(), pr.gathered.get(), layout.gathered_bytes(),
                                        cudaMemcpyDeviceToHost, lr.stream));
      ZFETCH_CUDA_CHECK(cudaStreamSynchronize(lr.stream));
      for (std::uint64_t e = 0; e < layout.gathered_bytes(); e += b.elem_bytes) {
        stats.all_gather.wrong +=
            std::memcmp(host_got.get() + e, host_all.get() + e, b.elem_bytes) != 0 ? 1 : 0;
      }
      stats.all_gather.bytes += layout.gathered_bytes();
      count_bucket(b, stats.all_gather);
      std::vector<std::byte*> dst;
      for (const std::uint64_t o : pl.dst) {
        dst.push_back(pr.out.get() + o);
      }
      // DeepSpeed's path: one memcpy per (param, rank) slice.
      ZFETCH_CUDA_CHECK(
          cudaMemsetAsync(pr.out.get(), static_cast<int>(kPoison), pl.out_bytes, lr.stream));
      stats.per_slice.chunks += copy_params_per_slice(layout, pr.gathered.get(), dst, lr.stream);
      ZFETCH_CUDA_CHECK(cudaMemcpyAsync(host_got.get(), pr.out.get(), pl.out_bytes,
                                        cudaMemcpyDeviceToHost, lr.stream));
      ZFETCH_CUDA_CHECK(cudaStreamSynchronize(lr.stream));
      check_output(layout, config.seed, pl, host_got.get(), stats.per_slice);
      count_bucket(b, stats.per_slice);
      // The fused kernel from the same gathered buffer.
      std::vector<const std::byte*> src;
      for (std::uint32_t r = 0; r < w; ++r) {
        src.push_back(pr.gathered.get() + r * rb);
      }
      ZFETCH_CUDA_CHECK(
          cudaMemsetAsync(pr.out.get(), static_cast<int>(kPoison), pl.out_bytes, lr.stream));
      const FusedGather gather(layout, src, dst, lr.stream, b.chunk_bytes, variant_of(config));
      gather.launch(lr.stream);
      ZFETCH_CUDA_CHECK(cudaMemcpyAsync(host_got.get(), pr.out.get(), pl.out_bytes,
                                        cudaMemcpyDeviceToHost, lr.stream));
      ZFETCH_CUDA_CHECK(cudaStreamSynchronize(lr.stream));
      check_output(layout, config.seed, pl, host_got.get(), stats.fused);
      stats.fused.chunks += gather.num_chunks();
      count_bucket(b, stats.fused);
    }
  }
  return stats;
}

}  // namespace zfetch::gpu
