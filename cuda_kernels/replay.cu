// `zfetch-gpu replay`: the calibration of what a replay runs, and the replay itself, as CUDA
// graphs (see replay.h, docs/gpu.md "Replay").
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>

#include "cuda_kernels/buffers.h"
#include "cuda_kernels/calibration.h"
#include "cuda_kernels/check.h"
#include "cuda_kernels/gather_kernel.cuh"
#include "cuda_kernels/partition.h"
#include "cuda_kernels/replay.h"

namespace zfetch::gpu {

namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The compute stand-in: one warp spins for `ns` nanoseconds of the global timer.
__global__ void replay_spin_kernel(std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
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

double median(std::vector<double> v) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Owns events, streams and a graph; everything a replay (or a calibration graph) needs.
class Graph {
 public:
  Graph() {
    ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
    ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&h2d_, cudaStreamNonBlocking));
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
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(comm_);
    cudaStreamDestroy(h2d_);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  cudaStream_t compute() const { return compute_; }
  cudaStream_t comm() const { return comm_; }
  cudaStream_t h2d() const { return h2d_; }

  void begin() {
    ZFETCH_CUDA_CHECK(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal));
  }
  // A new event recorded at the end of `s` (captured: an edge source).
  // nullptr for a side stream that the capture never forked into (nothing to wait for).
  cudaEvent_t mark(cudaStream_t s) {
    if (s != compute_ && !forked(s)) {
      return nullptr;
    }
    cudaEvent_t e = nullptr;
    ZFETCH_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
    ZFETCH_CUDA_CHECK(cudaEventRecord(e, s));
    return e;
  }
  void wait(cudaStream_t s, cudaEvent_t e) {
    if (e == nullptr) {
      return;
    }
    ZFETCH_CUDA_CHECK(cudaStreamWaitEvent(s, e, 0));
    if (s == comm_) {
      comm_forked_ = true;
    } else if (s == h2d_) {
      h2d_forked_ = true;
    }
  }
  bool forked(cudaStream_t s) const { return s == comm_ ? comm_forked_ : h2d_forked_; }
  // A timing event recorded inside the graph on the compute stream.
  cudaEvent_t timing_mark() {
    cudaEvent_t e = nullptr;
    ZFETCH_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
    ZFETCH_CUDA_CHECK(cudaEventRecordWithFlags(e, compute_, cudaEventRecordExternal));
    compute_node_added();
    return e;
  }
  void spin(std::uint64_t ns) {
    replay_spin_kernel<<<1, 32, 0, compute_>>>(ns);
    ZFETCH_CUDA_CHECK_LAUNCH();
    compute_node_added();
  }

  // Compute's dependencies are set explicitly: a capture merges every waited event into the
  // stream's set until a node is added, so a run of waits with no compute kernel between them
  // (short compute ops have none) made each later gather depend on every earlier one: O(n^2)
  // edges, 34 us per gather in many_params. Side streams are chains, so compute needs only the
  // newest node it waited on from each, plus its own last node.
  struct Dep {
    int stream = -1;  // 0 comm, 1 h2d
    std::uint64_t seq = 0;
    cudaGraphNode_t node = nullptr;
  };
  // The op just captured on side stream `s` (comm or h2d).
  Dep side_done(cudaStream_t s) {
    const int k = s == comm_ ? 0 : 1;
    Dep d{k, ++seq_[k], tail(s)};
    last_[k] = d;
    return d;
  }
  void compute_wait(const Dep& d) {
    if (d.stream < 0 || d.seq <= done_[d.stream] || d.node == nullptr) {
      return;
    }
    done_[d.stream] = d.seq;
    need_[d.stream] = d.node;
    std::vector<cudaGraphNode_t> nodes;
    if (own_ != nullptr) {
      nodes.push_back(own_);
    }
    for (cudaGraphNode_t n : need_) {
      if (n != nullptr) {
        nodes.push_back(n);
      }
    }
    ZFETCH_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(
        compute_, nodes.data(), nullptr, nodes.size(), cudaStreamSetCaptureDependencies));
  }
  // Compute waits for everything issued on the side streams so far.
  void drain() {
    compute_wait(last_[0]);
    compute_wait(last_[1]);
  }
  void end() {
    // Every forked stream joins compute before the capture ends.
    drain();
    ZFETCH_CUDA_CHECK(cudaStreamEndCapture(compute_, &graph_));
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
    ZFETCH_CUDA_CHECK(cudaEventRecord(start_, compute_));
    ZFETCH_CUDA_CHECK(cudaGraphLaunch(exec_, compute_));
    ZFETCH_CUDA_CHECK(cudaEventRecord(stop_, compute_));
    ZFETCH_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    ZFETCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) * 1e6;
  }

 private:
  // The single node that `s`'s capture depends on now (after an op on it), else nullptr.
  static cudaGraphNode_t tail(cudaStream_t s) {
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* deps = nullptr;
    std::size_t n = 0;
    ZFETCH_CUDA_CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &deps, nullptr, &n));
    return n == 1 ? deps[0] : nullptr;
  }
  void compute_node_added() {
    own_ = tail(compute_);
    need_ = {nullptr, nullptr};
  }
  cudaGraphNode_t own_ = nullptr;
  std::array<cudaGraphNode_t, 2> need_{nullptr, nullptr};
  std::array<std::uint64_t, 2> seq_{0, 0};
  std::array<std::uint64_t, 2> done_{0, 0};
  std::array<Dep, 2> last_{};
  cudaStream_t compute_ = nullptr;
  cudaStream_t comm_ = nullptr;
  cudaStream_t h2d_ = nullptr;
  bool comm_forked_ = false;
  bool h2d_forked_ = false;
  std::vector<cudaEvent_t> events_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
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

ReplayMeasuredCalibration measure(const ReplaySchedule& schedule, double spin_gap_given,
                                  BucketSet& own) {
  ReplayMeasuredCalibration m;
  const auto world = static_cast<std::uint32_t>(schedule.world_size);
  // Compute stand-ins back to back: period - spin = the gap a kernel adds.
  if (spin_gap_given >= 0) {
    m.spin_gap_ns = spin_gap_given;
  } else {
    std::vector<double> gaps;
    for (std::uint64_t ns : {5'000ULL, 20'000ULL, 50'000ULL}) {
      const double period = time_graph(100, 5, [&](Graph& g) { g.spin(ns); });
      gaps.push_back(period - static_cast<double>(ns));
    }
    m.spin_gap_ns = std::max(0.0, median(gaps));
  }
  // An empty round trip compute -> comm -> compute (what each dependent gather adds).
  m.cross_stream_ns = time_graph(200, 5, [](Graph& g) {
    g.wait(g.comm(), g.mark(g.compute()));
    g.compute_wait(g.side_done(g.comm()));
  });
  // Dependent gathers as the replay issues them: compute -> comm (gather) -> compute, samples of
  // milliseconds. Buckets of 4 bf16 params; bytes counted as the timeline costs them, W * shard
  // bytes. (Subtracting a compute kernel put between them was tried: alpha 1.8 us, which
  // predicted the small-gather scenarios 50-70% low.)
  cudaStream_t setup = nullptr;
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&setup, cudaStreamNonBlocking));
  {
    BucketSet set(world, setup);
    std::vector<ReplayParam> specs;
    std::vector<TimedPoint> pts;
    for (std::uint64_t bytes = 4096; bytes <= (512ULL << 20); bytes *= 4) {
      std::vector<std::uint32_t> ps;
      for (int k = 0; k < 4; ++k) {
        ps.push_back(static_cast<std::uint32_t>(specs.size()));
        specs.push_back({bytes / 2 / 4 + static_cast<std::uint64_t>(k) * 7, 2});
      }
      const Bucket& b = set.get(ps, specs);
      ZFETCH_CUDA_CHECK(cudaStreamSynchronize(setup));
      const int reps = static_cast<int>(std::clamp<std::uint64_t>((1ULL << 30) / bytes, 8, 1000));
      const double t = time_graph(reps, 5, [&](Graph& g) {
        g.wait(g.comm(), g.mark(g.compute()));
        b.launch(g.comm());
        g.compute_wait(g.side_done(g.comm()));
      });
      const double gathered = static_cast<double>(b.shard_bytes) * world;
      m.gather_bytes.push_back(gathered);
      m.gather_ns.push_back(t);
      pts.push_back({gathered, t});
    }
    // The schedule's own buckets: its gathers in issue order, split by size into up to 6 bins of
    // equal count; each bin timed as a graph of its gathers (each a dependent round trip), one
    // point (mean bytes, mean time) per bin. When the bins span a size range (max/min >= 4) they
    // alone are fitted (the sweep's mid sizes bend the line away from what the schedule runs).
    std::vector<const ReplayOp*> gathers;
    for (const ReplayOp& op : schedule.ops) {
      if (op.kind == ReplayOp::Kind::Gather && world > 1) {
        gathers.push_back(&op);
      }
    }
    std::sort(gathers.begin(), gathers.end(),
              [](const ReplayOp* a, const ReplayOp* b) { return a->shard_bytes < b->shard_bytes; });
    std::vector<TimedPoint> own_pts;
    const std::size_t bins = std::min<std::size_t>(6, gathers.size());
    for (std::size_t k = 0; k < bins; ++k) {
      const std::size_t lo = k * gathers.size() / bins;
      const std::size_t hi = (k + 1) * gathers.size() / bins;
      std::vector<const Bucket*> bs;
      double bytes = 0;
      for (std::size_t i = lo; i < hi; ++i) {
        bs.push_back(&own.get(gathers[i]->params, schedule.params));
        bytes += static_cast<double>(gathers[i]->shard_bytes) * world;
      }
      const double t = time_graph(1, 5, [&](Graph& g) {
        for (const Bucket* b : bs) {
          g.wait(g.comm(), g.mark(g.compute()));
          b->launch(g.comm());
          g.compute_wait(g.side_done(g.comm()));
        }
      });
      const double n = static_cast<double>(bs.size());
      own_pts.push_back({bytes / n, t / n});
      m.gather_bytes.push_back(bytes / n);
      m.gather_ns.push_back(t / n);
    }
    const bool spans = own_pts.size() >= 2 && own_pts.back().bytes >= 4 * own_pts.front().bytes;
    if (spans) {
      pts = own_pts;
    } else {
      pts.insert(pts.end(), own_pts.begin(), own_pts.end());
    }
    m.fit_on = spans ? "schedule buckets" : "sweep + schedule buckets";
    const LinearFit f = fit_alpha_bandwidth(pts, 1.0);
    m.gather_alpha_ns = f.alpha_ns;
    m.gather_bw_gbps = f.bandwidth_gbps;
  }
  // Pinned host-to-device copies, dependent the same way (h2d stream).
  {
    PinnedBuffer host(64ULL << 20);
    std::memset(host.get(), 0x5a, host.size());
    DeviceBuffer dev(64ULL << 20);
    std::vector<TimedPoint> pts;
    for (std::uint64_t bytes = 4096; bytes <= (64ULL << 20); bytes *= 4) {
      const int reps = static_cast<int>(std::clamp<std::uint64_t>((64ULL << 20) / bytes, 8, 1000));
      const double t = time_graph(reps, 5, [&](Graph& g) {
        g.wait(g.h2d(), g.mark(g.compute()));
        ZFETCH_CUDA_CHECK(
            cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, g.h2d()));
        g.compute_wait(g.side_done(g.h2d()));
      });
      m.h2d_bytes.push_back(static_cast<double>(bytes));
      m.h2d_ns.push_back(t);
      pts.push_back({static_cast<double>(bytes), t});
    }
    const LinearFit f = fit_alpha_bandwidth(pts, 1.0);
    m.h2d_alpha_ns = f.alpha_ns;
    m.h2d_bw_gbps = f.bandwidth_gbps;
  }
  ZFETCH_CUDA_CHECK(cudaStreamDestroy(setup));
  // As the timeline takes them: all_gather(W*shard) = alpha + (W-1)/W * bytes / busbw, so
  // busbw = bw * (W-1)/W gives alpha + bytes / bw; reduce-scatter is not replayed (0); h2d has
  // no alpha in the model, only its bandwidth.
  ReplayCalibration& c = m.calibration;
  c.machine = "replay-measured";
  c.allgather_alpha_ns = std::llround(m.gather_alpha_ns);
  c.allgather_busbw =
      std::llround(m.gather_bw_gbps * 1e9 * allgather_bus_factor(static_cast<int>(world)));
  c.rs_alpha_ns = 0;
  c.rs_busbw = 0;
  c.h2d_bytes_per_s = std::llround(m.h2d_bw_gbps * 1e9);
  return m;
}

}  // namespace

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
  if (config.measure_calibration) {
    out.measured = measure(schedule, config.spin_gap_ns, set);
  } else {
    out.measured.calibration = config.calibration;
    out.measured.spin_gap_ns = std::max(0.0, config.spin_gap_ns);
  }
  const auto gap = static_cast<std::int64_t>(out.measured.spin_gap_ns);
  PinnedBuffer host(schedule.offload ? std::max<std::uint64_t>(max_shard, 16) : 0);
  if (schedule.offload) {
    std::memset(host.get(), 0x3c, host.size());
  }

  Graph g;
  std::vector<Graph::Dep> ready(schedule.ops.size());
  std::vector<cudaEvent_t> marks;
  g.begin();
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    const ReplayOp& op = schedule.ops[i];
    switch (op.kind) {
    case ReplayOp::Kind::Step:
      marks.push_back(g.timing_mark());
      out.steps.push_back(op.step);
      break;
    case ReplayOp::Kind::Gather: {
      const Bucket& b = set.get(op.params, schedule.params);
      const cudaEvent_t issue = g.mark(g.compute());  // issued at compute's current time
      Graph::Dep dep;
      cudaEvent_t h2d_done = nullptr;
      if (schedule.offload) {
        g.wait(g.h2d(), issue);
        // This rank's shards land in rank 0's slot of each group's input.
        for (const Bucket::Group& grp : b.groups) {
          ZFETCH_CUDA_CHECK(cudaMemcpyAsync(grp.input.get(), host.get(), grp.layout.rank_bytes(),
                                            cudaMemcpyHostToDevice, g.h2d()));
        }
        dep = g.side_done(g.h2d());
        h2d_done = g.mark(g.h2d());
      }
      if (world > 1) {
        g.wait(g.comm(), h2d_done != nullptr ? h2d_done : issue);
        b.launch(g.comm());
        dep = g.side_done(g.comm());
        ++out.gather_ops;
      }
      ready[i] = dep;
      if (op.sync) {
        g.compute_wait(dep);
      }
      break;
    }
    case ReplayOp::Kind::Wait:
      g.compute_wait(ready[op.waits[0]]);
      break;
    case ReplayOp::Kind::Compute:
      for (std::uint32_t w : op.waits) {
        g.compute_wait(ready[w]);
      }
      if (op.dur_ns > gap) {
        g.spin(static_cast<std::uint64_t>(op.dur_ns - gap));
        ++out.compute_kernels;
      } else {
        ++out.compute_skipped;
      }
      break;
    case ReplayOp::Kind::Rs:
      break;  // not replayed (its calibration is 0 in the prediction)
    case ReplayOp::Kind::Drain:
      g.drain();
      break;
    }
  }
  marks.push_back(g.timing_mark());
  g.end();
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
  }
  for (const std::vector<double>& v : out.step_samples) {
    out.step_median_ns.push_back(median(v));
  }
  out.run_median_ns = median(runs);
  ZFETCH_CUDA_CHECK(cudaStreamDestroy(setup));
  return out;
}

}  // namespace zfetch::gpu
