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
    if (std::memcmp(param, expected.data(), n * eb) != 0) {  // count elements only when needed
      for (std::uint64_t j = 0; j < n; ++j) {
        stats.wrong += std::memcmp(param + j * eb, expected.data() + j * eb, eb) != 0 ? 1 : 0;
      }
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

std::uint32_t bucket_count(const VerifyConfig& config) {
  return config.fixed_buckets.empty() ? config.buckets
                                      : static_cast<std::uint32_t>(config.fixed_buckets.size());
}

// Bucket `index` of the check: a random one, or fixed bucket `index` over `world` ranks.
RandomBucket bucket_at(const VerifyConfig& config, std::uint32_t index, std::uint32_t world,
                       std::uint32_t force_world) {
  if (config.fixed_buckets.empty()) {
    return random_bucket(config.seed, index, world, config.max_elems, force_world);
  }
  RandomBucket b;
  b.world = force_world > 0 ? force_world : world;
  b.elem_bytes = 2;
  b.numels = config.fixed_buckets[index];
  b.dst_misalign.assign(b.numels.size(), 0);
  b.src_misalign.assign(b.world, 0);
  return b;
}

// Slack after the inputs: the planted padding bug reads up to one element per param past a
// rank's input, which must stay inside the arena (verify reports wrong data, not a crash).
std::uint64_t input_slack(const BucketLayout& layout) {
  return 4096 + layout.params.size() * 8;
}

// Spins for `ns` of the global timer: holds a stream back (the planted race's window).
__global__ void delay_kernel(std::uint64_t ns) {
  std::uint64_t start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (std::uint64_t now = start; now - start < ns;) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
}

// Device buffers of one bucket in per-allocation mode: one cudaMalloc per rank input and per
// param output, each exactly as large as the bucket needs (plus its misalignment).
struct OwnAllocations {
  std::vector<DeviceBuffer> inputs;
  std::vector<DeviceBuffer> outputs;
};

// One worker: its own stream, arenas and pinned buffers; buckets first, first + step, ...
void verify_kernel_worker(const VerifyConfig& config, int device, std::uint32_t first,
                          std::uint32_t step, VerifyStats& stats) {
  ZFETCH_CUDA_CHECK(cudaSetDevice(device));
  const std::uint32_t count = bucket_count(config);
  const std::uint32_t world = config.fixed_buckets.empty() ? config.max_world : config.fixed_world;
  // Arenas as large as this worker's largest bucket needs.
  std::uint64_t in_cap = 16;
  std::uint64_t out_cap = 16;
  for (std::uint32_t bi = first; bi < count; bi += step) {
    const RandomBucket b = bucket_at(config, bi, world, 0);
    const BucketLayout layout = make_bucket_layout(b.numels, b.world, b.elem_bytes);
    const Placement pl = place(b, layout);
    in_cap = std::max(in_cap, pl.in_bytes + input_slack(layout));
    out_cap = std::max(out_cap, pl.out_bytes);
  }
  DeviceBuffer in(config.per_allocation ? 0 : in_cap);
  DeviceBuffer out(config.per_allocation ? 0 : out_cap);
  PinnedBuffer host_in(in_cap);
  PinnedBuffer host_out(out_cap);
  cudaStream_t stream = nullptr;
  cudaStream_t racing = nullptr;  // the planted race's gather stream
  cudaEvent_t poisoned = nullptr;
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&racing, cudaStreamNonBlocking));
  ZFETCH_CUDA_CHECK(cudaEventCreateWithFlags(&poisoned, cudaEventDisableTiming));
  const bool race = config.planted == PlantedBug::Race;
  for (std::uint32_t bi = first; bi < count; bi += step) {
    const RandomBucket b = bucket_at(config, bi, world, 0);
    const BucketLayout layout = make_bucket_layout(b.numels, b.world, b.elem_bytes);
    const Placement pl = place(b, layout);
    std::memset(host_in.get(), static_cast<int>(kInputFill), pl.in_bytes);
    for (std::uint32_t r = 0; r < b.world; ++r) {
      fill_rank_input(layout, config.seed, r,
                      std::span<std::byte>(host_in.get() + pl.src[r], layout.rank_bytes()));
    }
    std::vector<const std::byte*> src;
    std::vector<std::byte*> dst;
    OwnAllocations own;
    if (config.per_allocation) {
      // Sources readable to the next 4-byte boundary (FusedGather's precondition), no further;
      // each output exactly its misalignment plus its param's bytes.
      for (std::uint32_t r = 0; r < b.world; ++r) {
        const std::uint64_t misalign = b.flat_source ? 0 : b.src_misalign[r];
        own.inputs.push_back(DeviceBuffer::exact((misalign + layout.rank_bytes() + 3) / 4 * 4));
        src.push_back(own.inputs.back().get() + misalign);
      }
      for (std::size_t i = 0; i < layout.params.size(); ++i) {
        own.outputs.push_back(
            DeviceBuffer::exact(b.dst_misalign[i] + layout.params[i].numel * b.elem_bytes));
        dst.push_back(own.outputs.back().get() + b.dst_misalign[i]);
      }
    } else {
      for (const std::uint64_t o : pl.src) {
        src.push_back(in.get() + o);
      }
      for (const std::uint64_t o : pl.dst) {
        dst.push_back(out.get() + o);
      }
    }
    // The table first: its upload synchronizes `stream`, which would close the race's window.
    const FusedGather gather(layout, src, dst, stream, b.chunk_bytes, config.variant,
                             config.planted);
    // Outputs poisoned, then (the planted race: only on `stream`, behind a 2 ms delay that the
    // gather on `racing` does not wait for) the inputs uploaded.
    if (config.per_allocation) {
      for (DeviceBuffer& o : own.outputs) {
        ZFETCH_CUDA_CHECK(cudaMemsetAsync(o.get(), static_cast<int>(kPoison), o.size(), stream));
      }
    } else {
      ZFETCH_CUDA_CHECK(
          cudaMemsetAsync(out.get(), static_cast<int>(kPoison), pl.out_bytes, stream));
    }
    if (race) {
      if (!config.per_allocation) {
        ZFETCH_CUDA_CHECK(
            cudaMemsetAsync(in.get(), static_cast<int>(kInputFill), pl.in_bytes, stream));
      }
      ZFETCH_CUDA_CHECK(cudaEventRecord(poisoned, stream));
      delay_kernel<<<1, 1, 0, stream>>>(2'000'000);
      ZFETCH_CUDA_CHECK_LAUNCH();
    }
    if (config.per_allocation) {
      for (std::uint32_t r = 0; r < b.world; ++r) {
        std::byte* at = own.inputs[r].get() + (b.flat_source ? 0 : b.src_misalign[r]);
        ZFETCH_CUDA_CHECK(cudaMemcpyAsync(at, host_in.get() + pl.src[r], layout.rank_bytes(),
                                          cudaMemcpyHostToDevice, stream));
      }
    } else {
      ZFETCH_CUDA_CHECK(
          cudaMemcpyAsync(in.get(), host_in.get(), pl.in_bytes, cudaMemcpyHostToDevice, stream));
    }
    if (race) {
      ZFETCH_CUDA_CHECK(cudaStreamWaitEvent(racing, poisoned, 0));
      gather.launch(racing);
      ZFETCH_CUDA_CHECK(cudaStreamSynchronize(racing));
    } else {
      gather.launch(stream);
    }
    if (config.per_allocation) {
      // Each output, its misalignment prefix included, into its place in the host image (whose
      // other bytes stay poison: the guard check then covers the prefixes).
      std::memset(host_out.get(), static_cast<int>(kPoison), pl.out_bytes);
      for (std::size_t i = 0; i < own.outputs.size(); ++i) {
        if (own.outputs[i].size() > 0) {
          ZFETCH_CUDA_CHECK(cudaMemcpyAsync(host_out.get() + pl.dst[i] - b.dst_misalign[i],
                                            own.outputs[i].get(), own.outputs[i].size(),
                                            cudaMemcpyDeviceToHost, stream));
        }
      }
    } else {
      ZFETCH_CUDA_CHECK(
          cudaMemcpyAsync(host_out.get(), out.get(), pl.out_bytes, cudaMemcpyDeviceToHost, stream));
    }
    ZFETCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    check_output(layout, config.seed, pl, host_out.get(), stats);
    stats.chunks += gather.num_chunks();
    count_bucket(b, stats);
  }
  ZFETCH_CUDA_CHECK(cudaEventDestroy(poisoned));
  ZFETCH_CUDA_CHECK(cudaStreamDestroy(racing));
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
  const std::uint32_t workers = std::max(1u, std::min(config.threads, bucket_count(config)));
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
  const std::uint32_t count = bucket_count(config);
  // Buffers as large as the largest bucket needs.
  std::uint64_t rank_cap = 16;
  std::uint64_t out_cap = 16;
  for (std::uint32_t bi = 0; bi < count; ++bi) {
    const RandomBucket b = bucket_at(config, bi, w, w);
    const BucketLayout layout = make_bucket_layout(b.numels, w, b.elem_bytes);
    rank_cap = std::max(rank_cap, layout.rank_bytes() + input_slack(layout));
    out_cap = std::max(out_cap, place(b, layout).out_bytes);
  }
  const std::uint64_t gathered_cap = rank_cap * w;
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
  for (std::uint32_t bi = 0; bi < count; ++bi) {
    RandomBucket b = bucket_at(config, bi, w, w);
    b.flat_source = true;
    std::fill(b.src_misalign.begin(), b.src_misalign.end(), 0);
    const BucketLayout layout = make_bucket_layout(b.numels, w, b.elem_bytes);
    const Placement pl = place(b, layout);
    const std::uint64_t rb = layout.rank_bytes();
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
      if (std::memcmp(host_got.get(), host_all.get(), layout.gathered_bytes()) != 0) {
        for (std::uint64_t e = 0; e < layout.gathered_bytes(); e += b.elem_bytes) {
          stats.all_gather.wrong +=
              std::memcmp(host_got.get() + e, host_all.get() + e, b.elem_bytes) != 0 ? 1 : 0;
        }
      }
      stats.all_gather.bytes += layout.gathered_bytes();
      count_bucket(b, stats.all_gather);
      std::vector<std::byte*> dst;
      for (const std::uint64_t o : pl.dst) {
        dst.push_back(pr.out.get() + o);
      }
      // One copy path from the gathered buffer into the poisoned outputs, read back and checked.
      const auto check_path = [&](auto& path, auto&& copy) {
        ZFETCH_CUDA_CHECK(
            cudaMemsetAsync(pr.out.get(), static_cast<int>(kPoison), pl.out_bytes, lr.stream));
        path.chunks += copy();
        ZFETCH_CUDA_CHECK(cudaMemcpyAsync(host_got.get(), pr.out.get(), pl.out_bytes,
                                          cudaMemcpyDeviceToHost, lr.stream));
        ZFETCH_CUDA_CHECK(cudaStreamSynchronize(lr.stream));
        check_output(layout, config.seed, pl, host_got.get(), path);
        count_bucket(b, path);
      };
      // DeepSpeed's path: one memcpy per (param, rank) slice.
      check_path(stats.per_slice,
                 [&] { return copy_params_per_slice(layout, pr.gathered.get(), dst, lr.stream); });
      // The same copies as one batch (a baseline bench times).
      check_path(stats.batched,
                 [&] { return copy_params_batched(layout, pr.gathered.get(), dst, lr.stream); });
      // The fused kernel from the same gathered buffer.
      std::vector<const std::byte*> src;
      for (std::uint32_t r = 0; r < w; ++r) {
        src.push_back(pr.gathered.get() + r * rb);
      }
      const FusedGather gather(layout, src, dst, lr.stream, b.chunk_bytes, config.variant,
                               config.planted);
      check_path(stats.fused, [&] {
        gather.launch(lr.stream);
        return gather.num_chunks();
      });
    }
  }
  return stats;
}

}  // namespace zfetch::gpu
