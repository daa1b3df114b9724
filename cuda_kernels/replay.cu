// `zfetch-gpu replay`: the calibration of what a replay runs, and the replay itself, as CUDA
// graphs (see replay.h, docs/gpu.md "Replay").
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

#include "cuda_kernels/buffers.h"
#include "cuda_kernels/calibration.h"
#include "cuda_kernels/check.h"
#include "cuda_kernels/gather_kernel.cuh"
#include "cuda_kernels/partition.h"
#include "cuda_kernels/replay.h"
#include "cuda_kernels/replay_deps.h"
#include "cuda_kernels/replay_walk.h"

namespace zfetch::gpu {

namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The compute stand-in: one warp spins for `ns` nanoseconds of the global timer. With `stamp`,
// it writes its start and end there (a replay's per-op trace: no node of its own).
__global__ void replay_spin_kernel(std::uint64_t ns, std::uint64_t* stamp) {
  const std::uint64_t start = global_ns();
  std::uint64_t now = start;
  while (now - start < ns) {
    now = global_ns();
  }
  if (stamp != nullptr && threadIdx.x == 0) {
    stamp[0] = start;
    stamp[1] = now;
  }
}

__global__ void replay_fill_kernel(std::uint64_t* p, std::uint64_t words, std::uint64_t seed) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < words;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    p[i] = mix64(seed ^ i);
  }
}

void fill(std::byte* p, std::uint64_t bytes, std::uint64_t seed, cudaStream_t s) {
  if (bytes >= 8) {
    replay_fill_kernel<<<264, 256, 0, s>>>(reinterpret_cast<std::uint64_t*>(p), bytes / 8, seed);
    ZFETCH_CUDA_CHECK_LAUNCH();
  }
}

using Ref = ReplayDeps::Ref;

// Owns events, streams and a graph; everything a replay (or a calibration graph) needs. Nodes are
// captured from four streams, one per chain (compute, comm, h2d, marks); before each op the
// stream's dependencies are set explicitly from ReplayDeps (replay_deps.h): the op's stream order
// and the waits the schedule asks for, without the edges these already imply (unless `reduce` is
// off).
class Graph {
 public:
  explicit Graph(bool reduce = true) : deps_(reduce) {
    for (cudaStream_t& s : streams_) {
      ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    }
  }
  ~Graph() {
    if (exec_ != nullptr) {
      cudaGraphExecDestroy(exec_);
    }
    if (graph_ != nullptr) {
      cudaGraphDestroy(graph_);
    }
    for (cudaEvent_t e : events_) {
      cudaEventDestroy(e);
    }
    for (cudaStream_t s : streams_) {
      cudaStreamDestroy(s);
    }
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  void begin() {
    ZFETCH_CUDA_CHECK(cudaStreamBeginCapture(streams_[kCompute], cudaStreamCaptureModeThreadLocal));
  }
  // What the next node on `chain` depends on (compute's: the current point of the step).
  const std::vector<Ref>& point(int chain) const { return deps_.front(chain); }
  void depend(int chain, const Ref& r) { deps_.depend(chain, r); }
  void depend(int chain, const std::vector<Ref>& refs) { deps_.depend(chain, refs); }
  // The stream to capture the next op of `chain` on, its dependencies set to point(chain).
  cudaStream_t prepare(int chain) {
    cudaStream_t s = streams_[chain];
    if (chain != kCompute && !forked_[chain]) {
      // A side stream joins the capture by waiting on an event recorded in it.
      ZFETCH_CUDA_CHECK(cudaStreamWaitEvent(s, event_on(streams_[kCompute]), 0));
      forked_[chain] = true;
    }
    std::vector<cudaGraphNode_t> nodes;
    for (const Ref& r : deps_.front(chain)) {
      nodes.push_back(nodes_[r.id]);
    }
    if (!nodes.empty()) {
      ZFETCH_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(s, nodes.data(), nullptr, nodes.size(),
                                                            cudaStreamSetCaptureDependencies));
    }
    return s;
  }
  // The node `capture(stream)` issues on `chain` after point(chain) (invalid when it adds none).
  template <typename Capture>
  Ref add(int chain, Capture&& capture) {
    capture(prepare(chain));
    return added(chain);
  }
  // The last node the op just captured on `chain` added (invalid when it added none).
  Ref added(int chain) {
    const cudaGraphNode_t t = tail(streams_[chain]);
    const std::vector<Ref>& f = deps_.front(chain);
    if (t == nullptr || (f.size() == 1 && nodes_[f[0].id] == t)) {
      return {};
    }
    nodes_.push_back(t);
    return deps_.add(chain, nodes_.size() - 1);
  }
  // The newest node of `chain` (invalid before its first).
  const Ref& last(int chain) const { return deps_.last(chain); }
  // A timing event recorded inside the graph on the marks' chain, after point(kMark)
  // (timing_mark in replay_walk.h says what it waits for).
  cudaEvent_t add_mark() {
    cudaEvent_t e = nullptr;
    ZFETCH_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
    ZFETCH_CUDA_CHECK(cudaEventRecordWithFlags(e, prepare(kMark), cudaEventRecordExternal));
    added(kMark);
    return e;
  }
  // Every compute kernel from now on stamps its start and end into the next two of `slots`
  // (while `count` kernels have not used them up).
  void stamp_spins(std::uint64_t* slots, std::size_t count) {
    stamps_ = slots;
    stamps_left_ = count;
  }
  void spin(std::uint64_t ns) {
    std::uint64_t* stamp = nullptr;
    if (stamps_left_ > 0) {
      stamp = stamps_;
      stamps_ += 2;
      --stamps_left_;
    }
    replay_spin_kernel<<<1, 32, 0, prepare(kCompute)>>>(ns, stamp);
    ZFETCH_CUDA_CHECK_LAUNCH();
    added(kCompute);
  }
  void end() {
    // Every side stream joins compute: its last node is in compute's final dependency set (no
    // node follows, so these are no edges).
    std::vector<cudaGraphNode_t> nodes;
    for (const Ref& r : deps_.front(kCompute)) {
      nodes.push_back(nodes_[r.id]);
    }
    for (int c : {kComm, kH2d, kMark}) {
      const Ref& r = deps_.last(c);
      if (r.valid() && std::find(nodes.begin(), nodes.end(), nodes_[r.id]) == nodes.end()) {
        nodes.push_back(nodes_[r.id]);
      }
    }
    if (!nodes.empty()) {
      ZFETCH_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(streams_[kCompute], nodes.data(),
                                                            nullptr, nodes.size(),
                                                            cudaStreamSetCaptureDependencies));
    }
    ZFETCH_CUDA_CHECK(cudaStreamEndCapture(streams_[kCompute], &graph_));
    ZFETCH_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  // Runs the graph once; returns its time in ns (host-side events around the launch).
  double launch() {
    if (start_ == nullptr) {
      ZFETCH_CUDA_CHECK(cudaEventCreate(&start_));
      ZFETCH_CUDA_CHECK(cudaEventCreate(&stop_));
      events_.push_back(start_);
      events_.push_back(stop_);
    }
    cudaStream_t s = streams_[kCompute];
    ZFETCH_CUDA_CHECK(cudaEventRecord(start_, s));
    ZFETCH_CUDA_CHECK(cudaGraphLaunch(exec_, s));
    ZFETCH_CUDA_CHECK(cudaEventRecord(stop_, s));
    ZFETCH_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    ZFETCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) * 1e6;
  }
  std::uint64_t nodes() const { return deps_.nodes(); }
  std::uint64_t edges() const { return deps_.edges(); }

 private:
  // The single node that `s`'s capture depends on now (after an op on it), else nullptr.
  static cudaGraphNode_t tail(cudaStream_t s) {
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* deps = nullptr;
    std::size_t n = 0;
    ZFETCH_CUDA_CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &n));
    return n == 1 ? deps[0] : nullptr;
  }
  cudaEvent_t event_on(cudaStream_t s) {
    cudaEvent_t e = nullptr;
    ZFETCH_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
    ZFETCH_CUDA_CHECK(cudaEventRecord(e, s));
    return e;
  }
  ReplayDeps deps_;
  std::vector<cudaGraphNode_t> nodes_;  // by ReplayDeps id
  std::array<cudaStream_t, ReplayDeps::kChains> streams_{};
  std::array<bool, ReplayDeps::kChains> forked_{};
  std::vector<cudaEvent_t> events_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::uint64_t* stamps_ = nullptr;
  std::size_t stamps_left_ = 0;
};

// The gather of one bucket: its params grouped by element size (one fused launch per group),
// W simulated ranks' inputs in one buffer per group, outputs in the params' own buffers.
struct Bucket {
  struct Group {
    BucketLayout layout;
    DeviceBuffer input;  // W * rank_bytes, rank-major
    std::unique_ptr<FusedGather> gather;
  };
  std::vector<Group> groups;
  std::uint64_t shard_bytes = 0;  // one rank's input bytes (what h2d copies)
  void launch(cudaStream_t s) const {
    for (const Group& g : groups) {
      g.gather->launch(s);
    }
  }
  // This rank's shards copied from `host` into rank 0's slot of each group's input.
  void copy_shards(const std::byte* host, cudaStream_t s) const {
    for (const Group& g : groups) {
      if (g.layout.rank_bytes() > 0) {
        ZFETCH_CUDA_CHECK(
            cudaMemcpyAsync(g.input.get(), host, g.layout.rank_bytes(), cudaMemcpyHostToDevice, s));
      }
    }
  }
};

class BucketSet {
 public:
  BucketSet(std::uint32_t world, cudaStream_t stream) : world_(world), stream_(stream) {}
  // The bucket of `params` (indices into `specs`), built on first use.
  const Bucket& get(const std::vector<std::uint32_t>& params,
                    const std::vector<ReplayParam>& specs) {
    auto it = buckets_.find(params);
    if (it != buckets_.end()) {
      return *it->second;
    }
    auto b = std::make_unique<Bucket>();
    std::map<std::uint32_t, std::vector<std::uint32_t>> by_size;
    std::vector<std::uint32_t> sorted = params;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint32_t p : sorted) {
      by_size[specs[p].elem_bytes].push_back(p);
    }
    for (const auto& [elem, ps] : by_size) {
      Bucket::Group g;
      std::vector<std::uint64_t> numels;
      for (std::uint32_t p : ps) {
        numels.push_back(specs[p].numel);
      }
      g.layout = make_bucket_layout(numels, world_, elem);
      g.input = DeviceBuffer(g.layout.gathered_bytes());
      bytes_ += g.input.size();
      fill(g.input.get(), g.input.size(), 0x5eed + buckets_.size(), stream_);
      std::vector<const std::byte*> src;
      for (std::uint32_t r = 0; r < world_; ++r) {
        src.push_back(g.input.get() + r * g.layout.rank_bytes());
      }
      std::vector<std::byte*> dst;
      for (std::uint32_t p : ps) {
        dst.push_back(output(p, specs[p]));
      }
      // A persistent grid of half the GPU, so that compute kernels run beside the gather as
      // they do beside NCCL (tile variants take every SM until their last block retires).
      g.gather =
          std::make_unique<FusedGather>(g.layout, src, dst, stream_, 0, kPersistentGatherVariant);
      g.gather->set_grid(std::max(1, gather_resident_blocks() / 2));
      b->shard_bytes += g.layout.rank_bytes();
      b->groups.push_back(std::move(g));
    }
    return *buckets_.emplace(params, std::move(b)).first->second;
  }
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::byte* output(std::uint32_t p, const ReplayParam& spec) {
    auto it = outputs_.find(p);
    if (it == outputs_.end()) {
      it = outputs_
               .emplace(p, DeviceBuffer(std::max<std::uint64_t>(spec.numel * spec.elem_bytes, 16)))
               .first;
      bytes_ += it->second.size();
    }
    return it->second.get();
  }
  std::uint32_t world_;
  cudaStream_t stream_;
  std::map<std::vector<std::uint32_t>, std::unique_ptr<Bucket>> buckets_;
  std::map<std::uint32_t, DeviceBuffer> outputs_;
  std::uint64_t bytes_ = 0;
};

// Median over `samples` launches of a graph that repeats a body `reps` times, per body.
template <typename Body>
double time_graph(int reps, int samples, Body&& body) {
  Graph g;
  g.begin();
  for (int i = 0; i < reps; ++i) {
    body(g);
  }
  g.end();
  g.launch();
  std::vector<double> v;
  for (int s = 0; s < samples; ++s) {
    v.push_back(g.launch() / reps);
  }
  return median(v);
}

// Back-to-back compute stand-ins: period - spin = the gap a kernel adds.
double measure_spin_gap() {
  std::vector<double> gaps;
  for (std::uint64_t ns : {5'000ULL, 20'000ULL, 50'000ULL}) {
    const double period = time_graph(100, 5, [&](Graph& g) { g.spin(ns); });
    gaps.push_back(period - static_cast<double>(ns));
  }
  return std::max(0.0, median(gaps));
}

// A dependent round trip compute -> gather -> compute, as the replay issues a waited gather.
void round_trip(Graph& g, const Bucket& b) {
  g.depend(kCompute, issue_gather(g, b, nullptr, false, true));
}

// Dependent round trips of buckets of `params_of(bytes)`, for bytes from `first` to 1 GiB in
// x`step` steps: (W * shard bytes, ns per round trip). Each size cycles through enough buckets to
// hold 4x L2 (a replay's gathers each move other buffers, so they start with a cold L2, as bench
// rotates sets), one size at a time (at most ~2 GiB on the GPU).
template <typename ParamsOf>
std::vector<TimedPoint> measure_curve(std::uint32_t world, cudaStream_t setup, std::uint64_t first,
                                      std::uint64_t step, ParamsOf&& params_of) {
  int device = 0;
  ZFETCH_CUDA_CHECK(cudaGetDevice(&device));
  int l2 = 0;
  ZFETCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  std::vector<TimedPoint> pts;
  for (std::uint64_t bytes = first; bytes <= (1ULL << 30); bytes *= step) {
    std::vector<ReplayParam> specs;
    BucketSet set(world, setup);
    const auto copies = static_cast<int>(
        std::clamp<std::uint64_t>(4ULL * static_cast<std::uint64_t>(l2) / (2 * bytes) + 1, 1, 64));
    std::vector<const Bucket*> rotation;
    for (int c = 0; c < copies; ++c) {
      std::vector<std::uint32_t> ps;
      for (const ReplayParam& p : params_of(bytes)) {
        ps.push_back(static_cast<std::uint32_t>(specs.size()));
        specs.push_back(p);
      }
      rotation.push_back(&set.get(ps, specs));
    }
    ZFETCH_CUDA_CHECK(cudaStreamSynchronize(setup));
    const int reps = static_cast<int>(std::clamp<std::uint64_t>((1ULL << 30) / bytes, 8, 1000));
    int next = 0;
    const double t = time_graph(reps, 5, [&](Graph& g) {
      round_trip(g, *rotation[static_cast<std::size_t>(next++ % copies)]);
    });
    pts.push_back({static_cast<double>(rotation.front()->shard_bytes) * world, t});
  }
  return pts;
}

// The fixed costs of the smallest operations, each the median per op of a chain of many in one
// graph: what a latency-bound schedule spends beyond the curves (docs/gpu.md "Fixed costs").
void measure_fixed_costs(std::uint32_t world, cudaStream_t setup, ReplayCosts& m) {
  constexpr int kReps = 1000;
  constexpr int kRotation = 4;  // buckets of one shape taken in turn
  std::vector<ReplayParam> specs;
  BucketSet set(world, setup);
  auto shape = [&](std::uint32_t params, std::uint64_t numel, std::uint32_t elem) {
    std::vector<const Bucket*> rotation;
    for (int c = 0; c < kRotation; ++c) {
      std::vector<std::uint32_t> ps;
      for (std::uint32_t k = 0; k < params; ++k) {
        ps.push_back(static_cast<std::uint32_t>(specs.size()));
        specs.push_back({numel, elem});
      }
      rotation.push_back(&set.get(ps, specs));
    }
    return rotation;
  };
  // Odd fp32 sizes (the 4-byte path, one chunk per param and rank) from 1 to 64 params, and the
  // curve's own shape (bf16, a multiple of 8 * W elements) with 1 and 4 params.
  const std::uint64_t unit = 8ULL * world;
  const std::vector<std::array<std::uint64_t, 3>> shapes = {{1, 15, 4},   {1, 100, 4}, {3, 15, 4},
                                                            {4, 15, 4},   {16, 15, 4}, {64, 15, 4},
                                                            {1, unit, 2}, {4, unit, 2}};
  std::vector<std::vector<const Bucket*>> rotations;
  for (const auto& [params, numel, elem] : shapes) {
    rotations.push_back(
        shape(static_cast<std::uint32_t>(params), numel, static_cast<std::uint32_t>(elem)));
  }
  ZFETCH_CUDA_CHECK(cudaStreamSynchronize(setup));
  auto chain = [&](const std::vector<const Bucket*>& rotation, auto&& body) {
    int next = 0;
    return time_graph(kReps, 5, [&](Graph& g) {
      body(g, *rotation[static_cast<std::size_t>(next++ % kRotation)]);
    });
  };
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Bucket& b = *rotations[i].front();
    m.tiny_gathers.push_back({static_cast<std::uint32_t>(shapes[i][0]),
                              static_cast<std::uint32_t>(shapes[i][2]), shapes[i][1],
                              static_cast<double>(b.shard_bytes) * world,
                              chain(rotations[i], round_trip)});
  }
  const std::vector<const Bucket*>& smallest = rotations.back();
  m.smallest_gather_ns = m.tiny_gathers.back().ns;
  // A gather issued right after a compute kernel (a getter or a persistent gather in the middle
  // of a forward): the pair's period less the kernel's.
  constexpr std::uint64_t kSpinNs = 2000;
  const double spin_alone = time_graph(200, 5, [&](Graph& g) { g.spin(kSpinNs); });
  int next = 0;
  const double spin_and_gather = time_graph(200, 5, [&](Graph& g) {
    g.spin(kSpinNs);
    round_trip(g, *smallest[static_cast<std::size_t>(next++ % kRotation)]);
  });
  m.gather_after_compute_ns = spin_and_gather - spin_alone;
  // The offloaded gather of the smallest bucket: its shard copied from pinned memory first, and
  // the copy alone, both dependent on compute.
  PinnedBuffer host(4096);
  std::memset(host.get(), 0x5a, host.size());
  m.h2d_gather_ns = chain(smallest, [&](Graph& g, const Bucket& b) {
    g.depend(kCompute, issue_gather(g, b, host.get(), true, true));
  });
  m.h2d_tiny_bytes = static_cast<double>(smallest.front()->shard_bytes);
  // The copy alone, three times, each from a pinned buffer of its own (where a buffer lands
  // could decide how long a copy from it takes: the spread says whether it does).
  for (int r = 0; r < 3; ++r) {
    PinnedBuffer own(4096);
    std::memset(own.get(), 0x5a + r, own.size());
    m.h2d_tiny_repeats_ns.push_back(chain(smallest, [&](Graph& g, const Bucket& b) {
      g.depend(kCompute, issue_gather(g, b, own.get(), true, false));
    }));
  }
  m.h2d_tiny_ns = median(m.h2d_tiny_repeats_ns);
  // A step mark (an event recorded off compute's chain) at the start of each round trip, added
  // after it as the replay adds its marks.
  m.marked_gather_ns = chain(smallest, [&](Graph& g, const Bucket& b) {
    const std::vector<Ref> start = g.point(kCompute);
    round_trip(g, b);
    timing_mark(g, start);
  });
}

// Offloaded gathers as a prefetching replay issues them: copies back to back on h2d (none waits
// for compute), each bucket's gather on comm after its copy, so that a copy runs beside the
// previous bucket's gather; and the same copies with no gather. Shards of 16 MiB (the offload
// transformer's copies are 14 MB); per copy, the median of a chain of 16. Their ratio is what a
// concurrent gather costs a copy; the h2d line was measured with every copy alone.
void measure_pipelined_h2d(std::uint32_t world, cudaStream_t setup, ReplayCosts& m) {
  constexpr std::uint64_t kShard = 16ULL << 20;
  constexpr int kRotation = 4;
  std::vector<ReplayParam> specs;
  BucketSet set(world, setup);
  std::vector<const Bucket*> rotation;
  for (int c = 0; c < kRotation; ++c) {
    std::vector<std::uint32_t> ps;
    for (int k = 0; k < 4; ++k) {
      ps.push_back(static_cast<std::uint32_t>(specs.size()));
      specs.push_back({kShard * world / 4 / 2, 2});
    }
    rotation.push_back(&set.get(ps, specs));
  }
  ZFETCH_CUDA_CHECK(cudaStreamSynchronize(setup));
  PinnedBuffer host(rotation.front()->shard_bytes);
  std::memset(host.get(), 0x5a, host.size());
  auto pipelined = [&](bool gather) {
    int next = 0;
    return time_graph(16, 5, [&](Graph& g) {
      issue_gather(g, *rotation[static_cast<std::size_t>(next++ % kRotation)], host.get(), true,
                   gather);
    });
  };
  m.h2d_pipelined_bytes = static_cast<double>(rotation.front()->shard_bytes);
  m.h2d_pipelined_ns = pipelined(false);
  m.h2d_beside_gather_ns = pipelined(true);

  // What a copy, a gather and compute cost each other when they overlap, and what compute pays
  // for waiting on another stream's node (ReplayCosts::Overlap), per op of a chain of 16.
  constexpr std::uint64_t kBesideSpinNs = 400'000;  // longer than the copy
  constexpr std::uint64_t kShortSpinNs = 5'000;     // shorter than the copy and the gather
  int next = 0;
  auto bucket = [&]() -> const Bucket& {
    return *rotation[static_cast<std::size_t>(next++ % kRotation)];
  };
  auto chain = [&](auto&& body) { return time_graph(16, 5, [&](Graph& g) { body(g); }); };
  ReplayCosts::Overlap& o = m.overlap;
  o.copy_ns = chain(
      [&](Graph& g) { g.depend(kCompute, issue_gather(g, bucket(), host.get(), true, false)); });
  o.gather_ns = chain([&](Graph& g) { round_trip(g, bucket()); });
  o.copy_and_gather_ns = chain([&](Graph& g) {
    const Ref copy = issue_gather(g, bucket(), host.get(), true, false);
    const Ref gather = issue_gather(g, bucket(), nullptr, false, true);
    g.depend(kCompute, copy);
    g.depend(kCompute, gather);
  });
  o.spin_ns = chain([&](Graph& g) { g.spin(kBesideSpinNs); });
  o.spin_beside_copy_ns = chain([&](Graph& g) {
    const Ref copy = issue_gather(g, bucket(), host.get(), true, false);
    g.spin(kBesideSpinNs);
    g.depend(kCompute, copy);
  });
  o.copy_beside_short_spin_ns = chain([&](Graph& g) {
    const Ref copy = issue_gather(g, bucket(), host.get(), true, false);
    g.spin(kShortSpinNs);
    g.depend(kCompute, copy);
  });
  o.gather_beside_short_spin_ns = chain([&](Graph& g) {
    const Ref gather = issue_gather(g, bucket(), nullptr, false, true);
    g.spin(kShortSpinNs);
    g.depend(kCompute, gather);
  });
  o.spin_beside_ns = static_cast<double>(kBesideSpinNs);
  o.short_spin_ns = static_cast<double>(kShortSpinNs);
}

// The smallest ops as a replay incurs them, measured by the replay itself: synthetic schedules
// (steps of 8, 16, 32 and 64 sync gathers of one bucket shape, taken in turn from 4 buckets,
// after a first step that is not used) run by run_replay, with its walk, lead-in, timing marks,
// warm-up and median of 15 launches. A step's time over its gathers is a line: the slope is one
// gather's cost, the intercept what a step adds. With offload each gather's shard is first copied
// from pinned memory, as an offloaded replay does; the difference of the slopes is the copy's
// cost in that pattern. Three repetitions, each with buckets and a pinned buffer of its own.
void measure_pattern_costs(std::uint32_t world, ReplayCosts& m) {
  constexpr int kRepetitions = 3;
  constexpr int kRotation = 4;
  constexpr std::array<int, 5> kGathers = {8, 8, 16, 32, 64};  // the first step is not used
  const std::uint64_t unit = 8ULL * world;
  ReplayConfig config;
  config.spin_gap_ns = m.spin_gap_ns;
  for (const std::uint64_t multiple : {1ULL, 8ULL, 64ULL}) {
    ReplaySchedule s;
    s.world_size = world;
    for (int b = 0; b < kRotation * 4; ++b) {
      s.params.push_back({multiple * unit, 2});
    }
    const std::int64_t full = static_cast<std::int64_t>(4 * multiple * unit * 2);
    for (std::size_t k = 0; k < kGathers.size(); ++k) {
      ReplayOp step;
      step.kind = ReplayOp::Kind::Step;
      step.step = static_cast<std::int32_t>(k);
      s.ops.push_back(step);
      for (int i = 0; i < kGathers[k]; ++i) {
        ReplayOp op;
        op.kind = ReplayOp::Kind::Gather;
        op.sync = true;
        op.gather_kind = "getter";
        const auto first = static_cast<std::uint32_t>(4 * (i % kRotation));
        op.params = {first, first + 1, first + 2, first + 3};
        op.full_bytes = full;
        op.shard_bytes = full / static_cast<std::int64_t>(world);
        s.ops.push_back(op);
      }
    }
    ReplayCosts::PatternPoint p;
    p.shard_bytes = static_cast<double>(full / world);
    p.bytes = static_cast<double>(full);
    for (int r = 0; r < kRepetitions; ++r) {
      for (const bool offload : {false, true}) {
        s.offload = offload;
        const ReplayMeasurement run = run_replay(s, config);
        std::vector<TimedPoint> pts;
        for (std::size_t k = 1; k < kGathers.size(); ++k) {
          pts.push_back({static_cast<double>(kGathers[k]), run.step_median_ns[k]});
        }
        // The line's slope in ns per gather (fit_alpha_bandwidth's "bandwidth" is gathers per ns).
        const LinearFit f = fit_alpha_bandwidth(pts, 1.0);
        const double per_gather = f.bandwidth_gbps > 0 ? 1.0 / f.bandwidth_gbps : 0.0;
        (offload ? p.offloaded_ns : p.gather_ns).push_back(per_gather);
        if (!offload) {
          p.step_ns.push_back(f.alpha_ns);
        }
      }
    }
    m.pattern.push_back(p);
  }
  std::vector<double> copies;
  const ReplayCosts::PatternPoint& smallest = m.pattern.front();
  for (std::size_t r = 0; r < smallest.gather_ns.size(); ++r) {
    copies.push_back(smallest.offloaded_ns[r] - smallest.gather_ns[r]);
  }
  m.pattern_small_copy_ns = std::max(0.0, median(copies));
}

// Large offloaded copies as a prefetching replay runs them, measured by the replay itself:
// synthetic schedules whose steps issue K offloaded prefetch gathers of 16 MiB shards (4 bf16
// params, taken in turn from 4 buckets), each gather's copy issued at compute's point, and after
// each issue a short compute op that waits for the gather issued before (so the copies run back to
// back on h2d, beside the gathers and the compute kernels, each after a node of another stream).
// Steps of 2 (not used), 2, 4, 6 and 8 gathers; per copy, the slope of step time over K, three
// repetitions. For reading: whether a copy in a prefetch pipeline costs more than beside_gather's
// (docs/gpu.md "Why, measured": on an H200 it does not).
void measure_prefetch_pipeline(std::uint32_t world, ReplayCosts& m) {
  constexpr int kRepetitions = 3;
  constexpr int kRotation = 4;
  constexpr std::array<int, 5> kGathers = {2, 2, 4, 6, 8};  // the first step is not used
  constexpr std::uint64_t kShard = 16ULL << 20;
  constexpr std::int64_t kComputeNs = 20'000;
  ReplaySchedule s;
  s.world_size = world;
  s.offload = true;
  for (int b = 0; b < kRotation * 4; ++b) {
    s.params.push_back({kShard * world / 4 / 2, 2});
  }
  const auto full = static_cast<std::int64_t>(kShard * world);
  for (std::size_t k = 0; k < kGathers.size(); ++k) {
    ReplayOp step;
    step.kind = ReplayOp::Kind::Step;
    step.step = static_cast<std::int32_t>(k);
    s.ops.push_back(step);
    std::vector<std::uint32_t> issued;
    auto compute_after = [&](std::uint32_t gather) {
      ReplayOp c;
      c.kind = ReplayOp::Kind::Compute;
      c.dur_ns = kComputeNs;
      c.waits = {gather};
      s.ops.push_back(c);
    };
    for (int i = 0; i < kGathers[k]; ++i) {
      ReplayOp op;
      op.kind = ReplayOp::Kind::Gather;
      op.gather_kind = "prefetch";
      const auto first = static_cast<std::uint32_t>(4 * (i % kRotation));
      op.params = {first, first + 1, first + 2, first + 3};
      op.full_bytes = full;
      op.shard_bytes = full / static_cast<std::int64_t>(world);
      issued.push_back(static_cast<std::uint32_t>(s.ops.size()));
      s.ops.push_back(op);
      if (i > 0) {
        compute_after(issued[issued.size() - 2]);
      }
    }
    compute_after(issued.back());
    ReplayOp drain;
    drain.kind = ReplayOp::Kind::Drain;
    s.ops.push_back(drain);
  }
  ReplayConfig config;
  config.spin_gap_ns = m.spin_gap_ns;
  m.prefetch_copy_bytes = static_cast<double>(kShard);
  for (int r = 0; r < kRepetitions; ++r) {
    const ReplayMeasurement run = run_replay(s, config);
    std::vector<TimedPoint> pts;
    for (std::size_t k = 1; k < kGathers.size(); ++k) {
      pts.push_back({static_cast<double>(kGathers[k]), run.step_median_ns[k]});
    }
    const LinearFit f = fit_alpha_bandwidth(pts, 1.0);
    m.prefetch_copy_repeats_ns.push_back(f.bandwidth_gbps > 0 ? 1.0 / f.bandwidth_gbps : 0.0);
  }
  m.prefetch_copy_ns = median(m.prefetch_copy_repeats_ns);
}

}  // namespace

ReplayCosts measure_replay_costs(std::uint32_t world) {
  ReplayCosts m;
  m.spin_gap_ns = measure_spin_gap();
  // Dependent gathers as the replay issues them: compute -> comm (gather) -> compute, a chain of
  // gather kernels in one graph, samples of milliseconds. Buckets of 4 bf16 params; bytes
  // counted as the timeline costs them, W * shard bytes. (Subtracting a compute kernel put
  // between them was tried: alpha 1.8 us, which predicted the small-gather scenarios 50-70% low.)
  cudaStream_t setup = nullptr;
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&setup, cudaStreamNonBlocking));
  {
    // Params of a multiple of 8 * W elements (every rank's slice 16-byte aligned, as transformer
    // shapes are), 4 bf16 params a bucket, from the smallest such bucket (256 B, 512 B at W = 8):
    // the tiny scenarios' gathers move a few hundred bytes, and a curve that starts above them
    // would be extended below its range.
    const std::uint64_t unit = 8ULL * world;
    const std::vector<TimedPoint> pts = measure_curve(
        world, setup, std::max<std::uint64_t>(256, 8 * unit), 2, [&](std::uint64_t bytes) {
          return std::vector<ReplayParam>(4, {std::max(unit, bytes / 2 / 4 / unit * unit), 2});
        });
    for (const TimedPoint& p : pts) {
      m.gather_bytes.push_back(p.bytes);
      m.gather_ns.push_back(p.time_ns);
    }
    // Odd params: one fp32 param a bucket whose every rank slice is 8 bytes short of whole
    // 16-byte vectors (W * (4k + 2) elements), which the kernel copies by its slower paths.
    const std::vector<TimedPoint> odd =
        measure_curve(world, setup, 64, 4, [&](std::uint64_t bytes) {
          const std::uint64_t per_rank = std::max<std::uint64_t>(bytes / 4 / world, 2) / 4 * 4 + 2;
          return std::vector<ReplayParam>(1, {per_rank * world, 4});
        });
    for (const TimedPoint& p : odd) {
      m.odd_gather_bytes.push_back(p.bytes);
      m.odd_gather_ns.push_back(p.time_ns);
    }
    const LinearFit f = fit_alpha_bandwidth(pts, 1.0);
    m.gather_alpha_ns = f.alpha_ns;
    m.gather_bw_gbps = f.bandwidth_gbps;
  }
  // Pinned host-to-device copies, dependent the same way (a chain of copies on h2d), 4 KiB to
  // 64 MiB: alpha + bytes / bandwidth, the timeline's h2d copy.
  {
    PinnedBuffer host(64ULL << 20);
    std::memset(host.get(), 0x5a, host.size());
    DeviceBuffer dev(64ULL << 20);
    std::vector<TimedPoint> pts;
    for (std::uint64_t bytes = 4096; bytes <= (64ULL << 20); bytes *= 4) {
      const int reps = static_cast<int>(std::clamp<std::uint64_t>((64ULL << 20) / bytes, 8, 1000));
      const double t = time_graph(reps, 5, [&](Graph& g) {
        g.depend(kH2d, g.point(kCompute));
        ZFETCH_CUDA_CHECK(
            cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, g.prepare(kH2d)));
        g.depend(kCompute, g.added(kH2d));
      });
      m.h2d_bytes.push_back(static_cast<double>(bytes));
      m.h2d_ns.push_back(t);
      pts.push_back({static_cast<double>(bytes), t});
    }
    const LinearFit f = fit_alpha_bandwidth(pts, 1.0);
    m.h2d_alpha_ns = f.alpha_ns;
    m.h2d_bw_gbps = f.bandwidth_gbps;
  }
  measure_pipelined_h2d(world, setup, m);
  measure_fixed_costs(world, setup, m);
  measure_pattern_costs(world, m);
  measure_prefetch_pipeline(world, m);
  ZFETCH_CUDA_CHECK(cudaStreamDestroy(setup));
  return m;
}

ReplayMeasurement run_replay(const ReplaySchedule& schedule, const ReplayConfig& config) {
  ReplayMeasurement out;
  int device = 0;
  ZFETCH_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  ZFETCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  out.device = prop.name;
  const auto world = static_cast<std::uint32_t>(schedule.world_size);
  cudaStream_t setup = nullptr;
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&setup, cudaStreamNonBlocking));
  BucketSet set(world, setup);
  std::uint64_t max_shard = 0;
  for (const ReplayOp& op : schedule.ops) {
    if (op.kind == ReplayOp::Kind::Gather) {
      max_shard = std::max(max_shard, set.get(op.params, schedule.params).shard_bytes);
    }
  }
  ZFETCH_CUDA_CHECK(cudaStreamSynchronize(setup));
  out.device_bytes = set.bytes();
  out.spin_gap_ns = config.spin_gap_ns >= 0 ? config.spin_gap_ns : measure_spin_gap();
  const auto gap = static_cast<std::int64_t>(out.spin_gap_ns);
  PinnedBuffer host(schedule.offload ? std::max<std::uint64_t>(max_shard, 16) : 0);
  if (schedule.offload) {
    std::memset(host.get(), 0x3c, host.size());
  }

  // The compute ops that get a kernel (walk_replay's rule), for a trace: the lead-in's stamp
  // first, then theirs in order.
  std::vector<std::uint32_t> traced_ops;
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    const ReplayOp& op = schedule.ops[i];
    if (op.kind == ReplayOp::Kind::Compute && op.dur_ns > gap) {
      traced_ops.push_back(static_cast<std::uint32_t>(i));
    }
  }
  const bool trace = config.trace_compute && config.lead_in_ns > 0;
  const std::size_t stamps = trace ? traced_ops.size() + 1 : 0;
  DeviceBuffer stamp_buffer(std::max<std::size_t>(stamps, 1) * 2 * sizeof(std::uint64_t));
  std::vector<std::uint64_t> stamp_host(stamps * 2);
  std::vector<std::vector<double>> trace_start(traced_ops.size());
  std::vector<std::vector<double>> trace_end(traced_ops.size());

  Graph g(config.reduce_edges);
  g.begin();
  if (trace) {
    g.stamp_spins(reinterpret_cast<std::uint64_t*>(stamp_buffer.get()), stamps);
  }
  if (config.lead_in_ns > 0) {
    g.spin(config.lead_in_ns);
  }
  ReplayWalkCounts counts;
  const std::vector<cudaEvent_t> marks = walk_replay(
      g, schedule,
      [&](const std::vector<std::uint32_t>& params) -> const Bucket& {
        return set.get(params, schedule.params);
      },
      host.get(), gap, counts);
  out.steps = std::move(counts.steps);
  out.gather_ops = counts.gather_ops;
  out.compute_kernels = counts.compute_kernels;
  out.compute_skipped = counts.compute_skipped;
  g.end();
  out.graph_nodes = g.nodes();
  out.graph_edges = g.edges();
  const std::size_t steps = out.steps.size();
  out.step_samples.assign(steps, {});
  std::vector<double> runs;
  for (int r = 0; r < config.warmup + config.repeats; ++r) {
    const double total = g.launch();
    if (r < config.warmup) {
      continue;
    }
    runs.push_back(total);
    for (std::size_t k = 0; k < steps; ++k) {
      float ms = 0;
      ZFETCH_CUDA_CHECK(cudaEventElapsedTime(&ms, marks[k], marks[k + 1]));
      out.step_samples[k].push_back(static_cast<double>(ms) * 1e6);
    }
    if (trace) {
      ZFETCH_CUDA_CHECK(cudaMemcpy(stamp_host.data(), stamp_buffer.get(),
                                   stamp_host.size() * sizeof(std::uint64_t),
                                   cudaMemcpyDeviceToHost));
      const std::uint64_t zero = stamp_host[1];  // the lead-in's end
      for (std::size_t k = 0; k < traced_ops.size(); ++k) {
        trace_start[k].push_back(static_cast<double>(stamp_host[2 * k + 2] - zero));
        trace_end[k].push_back(static_cast<double>(stamp_host[2 * k + 3] - zero));
      }
    }
  }
  for (std::size_t k = 0; k < traced_ops.size() && trace; ++k) {
    out.compute_trace.push_back({traced_ops[k], median(trace_start[k]), median(trace_end[k])});
  }
  for (const std::vector<double>& v : out.step_samples) {
    out.step_median_ns.push_back(median(v));
  }
  out.run_median_ns = median(runs);
  ZFETCH_CUDA_CHECK(cudaStreamDestroy(setup));
  return out;
}

}  // namespace zfetch::gpu
