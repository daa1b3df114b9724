// Benchmarks of the fused gather, cudaMemcpyAsync and the NCCL paths (see bench.h).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>

#include "cuda_kernels/bench.h"
#include "cuda_kernels/buffers.h"
#include "cuda_kernels/calibration.h"
#include "cuda_kernels/check.h"
#include "cuda_kernels/gather_kernel.cuh"
#include "cuda_kernels/partition.h"

namespace zfetch::gpu {

namespace {

std::uint64_t align_up(std::uint64_t x, std::uint64_t a) {
  return (x + a - 1) / a * a;
}

// Non-zero, non-repeating contents (never time on zeros).
__global__ void fill_kernel(std::uint64_t* p, std::uint64_t words, std::uint64_t seed) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < words;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    p[i] = mix64(seed ^ i);
  }
}

void fill(const DeviceBuffer& b, std::uint64_t seed, cudaStream_t stream) {
  fill_kernel<<<264, 256, 0, stream>>>(reinterpret_cast<std::uint64_t*>(b.get()), b.size() / 8,
                                       seed);
  ZFETCH_CUDA_CHECK_LAUNCH();
}

// Sets of buffers to rotate through so that consecutive iterations miss in L2.
int rotation_sets(std::uint64_t set_bytes) {
  int device = 0;
  ZFETCH_CUDA_CHECK(cudaGetDevice(&device));
  int l2 = 0;
  ZFETCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const std::uint64_t want = 4ULL * static_cast<std::uint64_t>(l2);
  return static_cast<int>(std::clamp<std::uint64_t>((want + set_bytes - 1) / set_bytes, 1, 64));
}

// Times enqueue(iteration) on the ranks' streams: three warm-up iterations, then `samples`
// samples of `inner` iterations each (inner sized so a sample lasts about 300 us) between two
// events per stream; a sample's time is the slowest stream's, divided by inner.
template <typename F>
Timing time_on(std::span<LocalRank> ranks, int samples, F&& enqueue) {
  std::vector<cudaEvent_t> start(ranks.size());
  std::vector<cudaEvent_t> stop(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ZFETCH_CUDA_CHECK(cudaSetDevice(ranks[r].device));
    ZFETCH_CUDA_CHECK(cudaEventCreate(&start[r]));
    ZFETCH_CUDA_CHECK(cudaEventCreate(&stop[r]));
  }
  int iteration = 0;
  auto batch = [&](int inner) {
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      ZFETCH_CUDA_CHECK(cudaSetDevice(ranks[r].device));
      ZFETCH_CUDA_CHECK(cudaEventRecord(start[r], ranks[r].stream));
    }
    for (int i = 0; i < inner; ++i) {
      enqueue(iteration++);
    }
    float worst = 0;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      ZFETCH_CUDA_CHECK(cudaSetDevice(ranks[r].device));
      ZFETCH_CUDA_CHECK(cudaEventRecord(stop[r], ranks[r].stream));
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      ZFETCH_CUDA_CHECK(cudaEventSynchronize(stop[r]));
      float ms = 0;
      ZFETCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start[r], stop[r]));
      worst = std::max(worst, ms);
    }
    return static_cast<double>(worst) * 1e6 / inner;
  };
  double estimate = 0;
  for (int w = 0; w < 3; ++w) {
    estimate = batch(1);
  }
  Timing t;
  t.inner = static_cast<int>(std::clamp(300e3 / std::max(estimate, 1.0), 1.0, 1000.0));
  std::vector<double> v;
  for (int s = 0; s < samples; ++s) {
    v.push_back(batch(t.inner));
  }
  std::sort(v.begin(), v.end());
  t.samples = samples;
  t.min_ns = v.front();
  t.max_ns = v.back();
  t.median_ns = median(v);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ZFETCH_CUDA_CHECK(cudaSetDevice(ranks[r].device));
    ZFETCH_CUDA_CHECK(cudaEventDestroy(start[r]));
    ZFETCH_CUDA_CHECK(cudaEventDestroy(stop[r]));
  }
  ZFETCH_CUDA_CHECK(cudaSetDevice(ranks[0].device));
  return t;
}

// Param buffers of a bucket laid out in an arena, each starting 256-byte aligned.
std::vector<std::uint64_t> param_offsets(const BucketLayout& layout, std::uint64_t& set_bytes) {
  std::vector<std::uint64_t> off;
  std::uint64_t at = 0;
  for (const ParamPartition& p : layout.params) {
    off.push_back(at);
    at = align_up(at + p.numel * layout.elem_bytes, 256);
  }
  set_bytes = std::max<std::uint64_t>(at, 256);
  return off;
}

// The kernel and a plain copy of the same bytes, on rank 0's GPU, `sim` shards in one buffer.
void time_local(NcclWorld& world, const BucketLayout& layout, const BenchConfig& config,
                Timing* memcpy_d2d, Timing& kernel, std::uint32_t* chunks,
                double* table_build_ns = nullptr, GatherVariant variant = kDefaultGatherVariant,
                std::uint32_t chunk_bytes = 0, int grid_divisor = 1) {
  LocalRank& lr = world.local()[0];
  ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
  std::uint64_t out_set = 0;
  const std::vector<std::uint64_t> off = param_offsets(layout, out_set);
  const std::uint64_t in_set = align_up(layout.gathered_bytes() + 16, 256);
  const int sets = rotation_sets(in_set + out_set);
  DeviceBuffer in(in_set * static_cast<std::uint64_t>(sets));
  DeviceBuffer out(out_set * static_cast<std::uint64_t>(sets));
  fill(in, config.seed, lr.stream);
  fill(out, config.seed + 1, lr.stream);
  std::vector<const std::byte*> src;
  std::vector<std::byte*> dst;
  for (std::uint32_t r = 0; r < layout.world; ++r) {
    src.push_back(in.get() + r * layout.rank_bytes());
  }
  for (const std::uint64_t o : off) {
    dst.push_back(out.get() + o);
  }
  // The work table is built once per bucket shape and buffers (the replay builds each bucket's at
  // first use and reuses it); its cost, host clock, median of 3 builds.
  std::vector<double> builds;
  for (int b = 0; b < 3; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    const FusedGather probe(layout, src, dst, lr.stream, chunk_bytes, variant);
    builds.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  if (table_build_ns != nullptr) {
    *table_build_ns = median(builds);
  }
  FusedGather gather(layout, src, dst, lr.stream, chunk_bytes, variant);
  gather.set_grid(gather.grid() / grid_divisor);
  if (chunks != nullptr) {
    *chunks = gather.num_chunks();
  }
  std::span<LocalRank> one = world.local().subspan(0, 1);
  const std::uint64_t bytes = layout.output_bytes();
  if (memcpy_d2d != nullptr) {
    *memcpy_d2d = time_on(one, config.samples, [&](int it) {
      const std::uint64_t k = static_cast<std::uint64_t>(it % sets);
      ZFETCH_CUDA_CHECK(cudaMemcpyAsync(out.get() + k * out_set, in.get() + k * in_set, bytes,
                                        cudaMemcpyDeviceToDevice, lr.stream));
    });
  }
  kernel = time_on(one, config.samples, [&](int it) {
    const auto k = static_cast<std::ptrdiff_t>(it % sets);
    gather.launch(lr.stream, k * static_cast<std::ptrdiff_t>(in_set),
                  k * static_cast<std::ptrdiff_t>(out_set));
  });
  ZFETCH_CUDA_CHECK(cudaStreamSynchronize(lr.stream));
}

// The NCCL paths on every rank of `world` for `layout` (W = world size).
struct NcclTimes {
  Timing all_gather;
  Timing ag_copies;
  Timing ag_graph;
  Timing ag_batched;
  Timing ag_kernel;
  Timing reduce_scatter;
  Timing kernel_world;  // fused kernel alone from the gathered buffer (rank 0's GPU)
  std::uint64_t copies = 0;
};

NcclTimes time_nccl(NcclWorld& world, const BucketLayout& layout, const BenchConfig& config,
                    bool collectives_alone, bool copy_baselines) {
  struct PerRank {
    DeviceBuffer send;
    DeviceBuffer recv;
    DeviceBuffer out;
    std::vector<std::uint64_t> off;
    std::unique_ptr<FusedGather> gather;
  };
  std::uint64_t out_set = 0;
  const std::vector<std::uint64_t> off = param_offsets(layout, out_set);
  const std::uint64_t send_set = align_up(layout.rank_bytes() + 16, 256);
  const std::uint64_t recv_set = align_up(layout.gathered_bytes() + 16, 256);
  ZFETCH_CUDA_CHECK(cudaSetDevice(world.local()[0].device));
  const int sets = rotation_sets(send_set + recv_set + out_set);
  const auto k64 = static_cast<std::uint64_t>(sets);
  std::vector<PerRank> ranks;
  for (LocalRank& lr : world.local()) {
    ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
    PerRank pr{DeviceBuffer(send_set * k64), DeviceBuffer(recv_set * k64),
               DeviceBuffer(out_set * k64), off, nullptr};
    fill(pr.send, config.seed + static_cast<std::uint64_t>(lr.rank), lr.stream);
    fill(pr.recv, config.seed + 7, lr.stream);
    fill(pr.out, config.seed + 9, lr.stream);
    std::vector<const std::byte*> src;
    std::vector<std::byte*> dst;
    for (std::uint32_t r = 0; r < layout.world; ++r) {
      src.push_back(pr.recv.get() + r * layout.rank_bytes());
    }
    for (const std::uint64_t o : off) {
      dst.push_back(pr.out.get() + o);
    }
    pr.gather = std::make_unique<FusedGather>(layout, src, dst, lr.stream);
    ranks.push_back(std::move(pr));
  }
  const ncclDataType_t type = nccl_type(layout.elem_bytes, false);
  // Every rank's shard (`send`) and gathered buffer (`recv`) of buffer set k.
  const auto sends = [&](std::uint64_t k) {
    std::vector<std::byte*> v;
    for (PerRank& pr : ranks) {
      v.push_back(pr.send.get() + k * send_set);
    }
    return v;
  };
  const auto recvs = [&](std::uint64_t k) {
    std::vector<std::byte*> v;
    for (PerRank& pr : ranks) {
      v.push_back(pr.recv.get() + k * recv_set);
    }
    return v;
  };
  const auto read_only = [](const std::vector<std::byte*>& v) {
    return std::vector<const std::byte*>(v.begin(), v.end());
  };
  auto gather_all = [&](std::uint64_t k) {
    all_gather(world, read_only(sends(k)), recvs(k), layout.rank_numel, type);
  };
  NcclTimes t;
  if (collectives_alone) {
    t.all_gather = time_on(world.local(), config.samples,
                           [&](int it) { gather_all(static_cast<std::uint64_t>(it % sets)); });
    t.reduce_scatter = time_on(world.local(), config.samples, [&](int it) {
      const auto k = static_cast<std::uint64_t>(it % sets);
      reduce_scatter(world, read_only(recvs(k)), sends(k), layout.rank_numel, type);
    });
  }
  // Each param's output in buffer set k of `pr`.
  std::vector<std::byte*> dst(off.size());
  const auto outputs_of = [&](PerRank& pr, std::uint64_t k) -> const std::vector<std::byte*>& {
    for (std::size_t i = 0; i < off.size(); ++i) {
      dst[i] = pr.out.get() + k * out_set + off[i];
    }
    return dst;
  };
  // The time of an all-gather of buffer set `it % sets` followed on each rank q by
  // after(q, its buffers, its stream, the set).
  const auto time_gather_then = [&](auto&& after) {
    return time_on(world.local(), config.samples, [&](int it) {
      const auto k = static_cast<std::uint64_t>(it % sets);
      gather_all(k);
      std::size_t q = 0;
      for (LocalRank& lr : world.local()) {
        ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
        after(q, ranks[q], lr.stream, k);
        ++q;
      }
    });
  };
  t.ag_copies = time_gather_then([&](std::size_t, PerRank& pr, cudaStream_t s, std::uint64_t k) {
    t.copies = copy_params_per_slice(layout, pr.recv.get() + k * recv_set, outputs_of(pr, k), s);
  });
  if (copy_baselines) {
    // The per-slice copies the fastest ways CUDA offers: captured once per rank and buffer set
    // as a CUDA graph (one launch replays them), and one cudaMemcpyBatchAsync call.
    std::vector<std::vector<cudaGraphExec_t>> graphs(ranks.size());
    std::size_t q = 0;
    for (LocalRank& lr : world.local()) {
      PerRank& pr = ranks[q];
      ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
      for (std::uint64_t k = 0; k < k64; ++k) {
        const std::vector<std::byte*>& outputs = outputs_of(pr, k);
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        ZFETCH_CUDA_CHECK(cudaStreamBeginCapture(lr.stream, cudaStreamCaptureModeThreadLocal));
        copy_params_per_slice(layout, pr.recv.get() + k * recv_set, outputs, lr.stream);
        ZFETCH_CUDA_CHECK(cudaStreamEndCapture(lr.stream, &graph));
        ZFETCH_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        ZFETCH_CUDA_CHECK(cudaGraphDestroy(graph));
        graphs[q].push_back(exec);
      }
      ++q;
    }
    t.ag_graph = time_gather_then([&](std::size_t r, PerRank&, cudaStream_t s, std::uint64_t k) {
      ZFETCH_CUDA_CHECK(cudaGraphLaunch(graphs[r][k], s));
    });
    for (std::vector<cudaGraphExec_t>& per_rank : graphs) {
      for (cudaGraphExec_t exec : per_rank) {
        ZFETCH_CUDA_CHECK(cudaGraphExecDestroy(exec));
      }
    }
    t.ag_batched = time_gather_then([&](std::size_t, PerRank& pr, cudaStream_t s, std::uint64_t k) {
      copy_params_batched(layout, pr.recv.get() + k * recv_set, outputs_of(pr, k), s);
    });
  }
  t.ag_kernel = time_gather_then([&](std::size_t, PerRank& pr, cudaStream_t s, std::uint64_t k) {
    pr.gather->launch(s, static_cast<std::ptrdiff_t>(k * recv_set),
                      static_cast<std::ptrdiff_t>(k * out_set));
  });
  LocalRank& first = world.local()[0];
  ZFETCH_CUDA_CHECK(cudaSetDevice(first.device));
  t.kernel_world = time_on(world.local().subspan(0, 1), config.samples, [&](int it) {
    const auto k = static_cast<std::uint64_t>(it % sets);
    ranks[0].gather->launch(first.stream, static_cast<std::ptrdiff_t>(k * recv_set),
                            static_cast<std::ptrdiff_t>(k * out_set));
  });
  for (LocalRank& lr : world.local()) {
    ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
    ZFETCH_CUDA_CHECK(cudaStreamSynchronize(lr.stream));
  }
  ZFETCH_CUDA_CHECK(cudaSetDevice(first.device));
  return t;
}

}  // namespace

BenchResult run_bench(NcclWorld& world, const BenchConfig& config) {
  BenchResult result;
  result.world = world.world_size();
  result.sim_world = config.sim_world;
  LocalRank& first = world.local()[0];
  ZFETCH_CUDA_CHECK(cudaSetDevice(first.device));
  cudaDeviceProp prop{};
  ZFETCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, first.device));
  result.device = prop.name;
  const auto w = static_cast<std::uint32_t>(world.world_size());
  const std::uint64_t unit = 8ULL * std::lcm(config.sim_world, w);
  for (const std::uint64_t bytes : bench_bucket_sizes(config.min_bytes, config.max_bytes)) {
    const std::vector<std::uint64_t> numels = bench_bucket_numels(bytes, 2, unit);
    SweepPoint p;
    const BucketLayout sim = make_bucket_layout(numels, config.sim_world, 2);
    p.bytes = sim.output_bytes();
    p.params = static_cast<std::uint32_t>(numels.size());
    time_local(world, sim, config, &p.memcpy_d2d, p.kernel, &p.chunks, &p.table_build_ns);
    const BucketLayout real = make_bucket_layout(numels, w, 2);
    p.gathered_bytes = real.gathered_bytes();
    const NcclTimes t = time_nccl(world, real, config, true, false);
    p.all_gather = t.all_gather;
    p.ag_copies = t.ag_copies;
    p.ag_kernel = t.ag_kernel;
    p.reduce_scatter = t.reduce_scatter;
    result.sweep.push_back(p);
  }
  // Kernel variants and chunk sizes on large buckets, each beside a memcpy of the same run.
  for (const std::uint64_t bytes : {256ULL << 20, 1ULL << 30}) {
    if (bytes > config.max_bytes || !config.variants) {
      continue;
    }
    const BucketLayout sim =
        make_bucket_layout(bench_bucket_numels(bytes, 2, unit), config.sim_world, 2);
    struct Trial {
      GatherVariant variant;
      std::uint32_t chunk_bytes;  // 0: auto
      int grid_divisor;
    };
    static constexpr Trial kTrials[] = {
        {GatherVariant::Tile8K, 0, 1},        {GatherVariant::Tile16K, 0, 1},
        {GatherVariant::Tile16K512, 0, 1},    {GatherVariant::Warp8, 0, 1},
        {GatherVariant::Warp4, 0, 1},         {GatherVariant::Warp4, 8192, 2},
        {GatherVariant::Warp8Streaming, 0, 1}};
    for (const Trial& trial : kTrials) {
      VariantPoint vp;
      vp.bytes = sim.output_bytes();
      vp.variant = trial.variant;
      vp.chunk_bytes = trial.chunk_bytes;
      vp.grid_divisor = trial.grid_divisor;
      time_local(world, sim, config, &vp.memcpy_d2d, vp.kernel, &vp.chunks, nullptr, vp.variant,
                 vp.chunk_bytes, vp.grid_divisor);
      result.variants.push_back(vp);
    }
  }
  // A bucket of many small params, 1 to 64 KiB each, odd sizes (bf16).
  std::vector<std::uint64_t> numels;
  for (std::uint32_t i = 0; i < config.small_params; ++i) {
    numels.push_back((1024 + hash3(config.seed, 77, i) % (63 * 1024 + 1)) / 2);
  }
  SmallParamsPoint& s = result.small;
  const BucketLayout sim = make_bucket_layout(numels, config.sim_world, 2);
  s.params = config.small_params;
  s.bytes = sim.output_bytes();
  time_local(world, sim, config, &s.memcpy_d2d, s.kernel_sim, &s.table_chunks, &s.table_build_ns);
  const BucketLayout real = make_bucket_layout(numels, w, 2);
  const NcclTimes t = time_nccl(world, real, config, false, true);
  s.kernel_world = t.kernel_world;
  s.ag_copies = t.ag_copies;
  s.ag_graph = t.ag_graph;
  s.ag_batched = t.ag_batched;
  s.ag_kernel = t.ag_kernel;
  s.copies = t.copies;
  // Pinned host-to-device copies, 4 KiB to 256 MiB, back to back on one stream (each starts
  // when the previous one ends): the cost model's h2d alpha and bandwidth.
  result.h2d_bytes = 256ULL << 20;
  PinnedBuffer host(result.h2d_bytes);
  std::memset(host.get(), 0x5A, result.h2d_bytes);
  DeviceBuffer dev(result.h2d_bytes);
  for (std::uint64_t bytes = 4096; bytes <= result.h2d_bytes; bytes *= 4) {
    const Timing t = time_on(world.local().subspan(0, 1), std::min(config.samples, 10), [&](int) {
      ZFETCH_CUDA_CHECK(
          cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, first.stream));
    });
    result.h2d_points.push_back({bytes, t});
  }
  result.h2d = result.h2d_points.back().time;
  ZFETCH_CUDA_CHECK(cudaStreamSynchronize(first.stream));
  return result;
}

}  // namespace zfetch::gpu
