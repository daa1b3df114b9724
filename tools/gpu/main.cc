// zfetch-gpu: checks and timings of ZeRO-3 parameter gathers on real GPUs (verify, bench,
// launch, replay): the driver of the cuda_kernels/ library, which never prints or exits.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "cuda_kernels/bench.h"
#include "cuda_kernels/calibration.h"
#include "cuda_kernels/check.h"
#include "cuda_kernels/gather_kernel.cuh"
#include "cuda_kernels/nccl_world.h"
#include "cuda_kernels/partition.h"
#include "cuda_kernels/replay.h"
#include "cuda_kernels/verify.h"
#include "tools/cli_numbers.h"
#include "tools/gpu/cmd_replay.h"

namespace zfetch::gpu {
// replay.overlap in a `bench --replay-world` file: each figure under its field's name.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReplayCosts::Overlap, copy_ns, gather_ns, copy_and_gather_ns,
                                   spin_beside_ns, spin_ns, spin_beside_copy_ns, short_spin_ns,
                                   copy_beside_short_spin_ns, gather_beside_short_spin_ns)
}  // namespace zfetch::gpu

namespace {

using namespace zfetch::gpu;
using zfetch::tools::decimal_unsigned;

constexpr int kExitOk = 0;
constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitError = 3;
constexpr int kExitSkip = 77;  // CTest SKIP_RETURN_CODE: no GPU here

int visible_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    return 0;
  }
  return count;
}

// RANK/WORLD_SIZE/LOCAL_RANK/ZFETCH_RENDEZVOUS as `zfetch-gpu launch` (or torchrun + a shared
// file path) sets them; nullopt when RANK is unset.
std::optional<LaunchEnv> launch_env() {
  const char* rank = std::getenv("RANK");
  const char* world = std::getenv("WORLD_SIZE");
  const char* local = std::getenv("LOCAL_RANK");
  const char* file = std::getenv("ZFETCH_RENDEZVOUS");
  if (rank == nullptr || world == nullptr || file == nullptr) {
    return std::nullopt;
  }
  LaunchEnv env;
  env.rank = std::atoi(rank);
  env.world_size = std::atoi(world);
  env.local_rank = local != nullptr ? std::atoi(local) : env.rank;
  env.rendezvous = file;
  return env;
}

NcclWorld make_world(int max_gpus) {
  if (const std::optional<LaunchEnv> env = launch_env()) {
    return NcclWorld::from_env(*env);
  }
  return NcclWorld::all_local(max_gpus);
}

std::string prefix() {
  const std::optional<LaunchEnv> env = launch_env();
  return env ? fmt::format("[rank {}/{}] ", env->rank, env->world_size) : std::string();
}

void print_stats(const char* what, const VerifyStats& s) {
  std::printf(
      "%s%-34s buckets %6llu  params %8llu  items %9llu  bytes %12llu  max W %3u  "
      "fp32/bf16/fp16 %llu/%llu/%llu  #wrong %llu  guard %llu  %s\n",
      prefix().c_str(), what, static_cast<unsigned long long>(s.buckets),
      static_cast<unsigned long long>(s.params), static_cast<unsigned long long>(s.chunks),
      static_cast<unsigned long long>(s.bytes), s.max_world,
      static_cast<unsigned long long>(s.by_dtype[0]),
      static_cast<unsigned long long>(s.by_dtype[1]),
      static_cast<unsigned long long>(s.by_dtype[2]), static_cast<unsigned long long>(s.wrong),
      static_cast<unsigned long long>(s.guard_wrong),
      s.wrong == 0 && s.guard_wrong == 0 ? "OK" : "FAILED");
  std::fflush(stdout);
}

struct VerifyOptions {
  VerifyConfig config;
  bool bench_sizes = false;
  std::uint64_t min_bytes = 4096;
  std::uint64_t max_bytes = 1ULL << 30;
  std::string plant;
  std::uint32_t nccl_buckets = 200;
  bool no_nccl = false;
  bool no_kernel = false;
  int max_gpus = 0;
};

int run_verify(const VerifyOptions& o) {
  if (visible_gpus() == 0) {
    std::fprintf(stderr, "zfetch-gpu: SKIP: no CUDA device visible\n");
    return kExitSkip;
  }
  std::uint64_t wrong = 0;
  const std::optional<LaunchEnv> env = launch_env();
  const bool multiprocess = env.has_value();
  VerifyConfig config = o.config;
  if (o.bench_sizes) {
    // The buckets bench times, with bench's unit (every slice 16-byte aligned for W and the
    // simulated world): the kernel over fixed_world simulated ranks, NCCL over the real ones.
    const int gpus = o.max_gpus > 0 ? std::min(o.max_gpus, visible_gpus()) : visible_gpus();
    const auto w = static_cast<std::uint64_t>(multiprocess ? env->world_size : gpus);
    const std::uint64_t unit = 8ULL * std::lcm(std::uint64_t{config.fixed_world}, w);
    for (const std::uint64_t bytes : bench_bucket_sizes(o.min_bytes, o.max_bytes)) {
      config.fixed_buckets.push_back(bench_bucket_numels(bytes, 2, unit));
    }
  }
  if (o.plant == "overrun") {
    config.planted = PlantedBug::Overrun;
  } else if (o.plant == "padding") {
    config.planted = PlantedBug::PaddingOffByOne;
  } else if (o.plant == "race") {
    config.planted = PlantedBug::Race;
  }
  if (!o.no_kernel && !multiprocess) {
    const auto t0 = std::chrono::steady_clock::now();
    const VerifyStats s = verify_kernel(config);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_stats("fused kernel (W shards on 1 GPU)", s);
    std::printf("  seed %llu, %.1f s%s%s%s\n", static_cast<unsigned long long>(config.seed), secs,
                config.per_allocation ? ", one allocation per rank input and param output" : "",
                o.bench_sizes ? ", bench's bucket sizes" : "",
                o.plant.empty() ? "" : (", PLANTED BUG: " + o.plant).c_str());
    wrong += s.wrong + s.guard_wrong;
  }
  if (!o.no_nccl) {
    NcclWorld world = make_world(o.max_gpus);
    VerifyConfig c = config;
    c.buckets = o.nccl_buckets;
    const NcclVerifyStats s = verify_nccl(world, c);
    const std::string mode =
        fmt::format("{} rank(s), {}", world.world_size(),
                    world.single_process() ? "1 process (ncclCommInitAll)" : "1 GPU per process");
    std::printf("%snccl: %s\n", prefix().c_str(), mode.c_str());
    print_stats("ncclAllGather flat buffer", s.all_gather);
    print_stats("all-gather + per-slice memcpy", s.per_slice);
    print_stats("all-gather + cudaMemcpyBatchAsync", s.batched);
    print_stats("all-gather + fused kernel", s.fused);
    wrong += s.all_gather.wrong + s.per_slice.wrong + s.per_slice.guard_wrong + s.batched.wrong +
             s.batched.guard_wrong + s.fused.wrong + s.fused.guard_wrong;
  }
  std::printf("%s# wrong elements: %llu %s\n", prefix().c_str(),
              static_cast<unsigned long long>(wrong), wrong == 0 ? "OK" : "FAILED");
  return wrong == 0 ? kExitOk : kExitWrong;
}

double gbps(double bytes, const Timing& t) {
  return t.median_ns > 0 ? bytes / t.median_ns : 0;
}

nlohmann::json section(const std::vector<TimedPoint>& pts, double bus_factor) {
  nlohmann::json j;
  const LinearFit alg = fit_alpha_bandwidth(pts, 1.0);
  const LinearFit bus = fit_alpha_bandwidth(pts, bus_factor);
  j["alpha_ns"] = bus_factor > 0 ? bus.alpha_ns : alg.alpha_ns;
  j["busbw_GBps"] = bus.bandwidth_gbps;
  j["algbw_GBps"] = alg.bandwidth_gbps;
  j["alpha_algbw_ns"] = alg.alpha_ns;
  j["busbw_factor"] = bus_factor;
  nlohmann::json points = nlohmann::json::array();
  for (const TimedPoint& p : pts) {
    const double alg_bw = p.bytes / p.time_ns;
    points.push_back({{"bytes", static_cast<std::uint64_t>(p.bytes)},
                      {"time_ns", p.time_ns},
                      {"algbw_GBps", alg_bw},
                      {"busbw_GBps", alg_bw * bus_factor}});
  }
  j["points"] = points;
  return j;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

struct BenchOptions {
  BenchConfig config;
  std::string out;
  std::string machine;
  int max_gpus = 0;
  std::uint32_t replay_world = 0;  // > 0: the replay's costs for W simulated ranks instead
  int processes = 1;               // with replay_world: the median over this many processes
};

bool write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) {
    std::fprintf(stderr, "zfetch-gpu: error: cannot write '%s'\n", path.c_str());
    return false;
  }
  return true;
}

// `bench --replay-world W`: what the replay's operations cost on this GPU, measured apart from
// any schedule, as a calibration the simulator predicts a replay with (`zfetch run
// --calibration`): the all-gather is the replay's stand-in (the fused kernel over W simulated
// ranks' shards, a dependent round trip), costed by its measured curve; reduce-scatter is not
// replayed (0); h2d dependent pinned copies, alpha + bytes / bandwidth.
int run_bench_replay(const BenchOptions& o) {
  const ReplayCosts c = measure_replay_costs(o.replay_world);
  cudaDeviceProp prop{};
  int device = 0;
  ZFETCH_CUDA_CHECK(cudaGetDevice(&device));
  ZFETCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const double bus = allgather_bus_factor(static_cast<int>(o.replay_world));
  std::vector<TimedPoint> gather;
  for (std::size_t i = 0; i < c.gather_bytes.size(); ++i) {
    gather.push_back({c.gather_bytes[i], c.gather_ns[i]});
  }
  nlohmann::json j;
  j["format"] = "zfetch-calibration";
  j["version"] = 1;
  j["machine"] = o.machine.empty() ? fmt::format("1x {} (replay stand-ins, {} simulated ranks)",
                                                 prop.name, o.replay_world)
                                   : o.machine;
  j["source"] = fmt::format("zfetch-gpu bench --replay-world {}, {}", o.replay_world, today());
  j["world_size"] = o.replay_world;
  j["allgather"] = section(gather, bus);
  j["allgather"]["interpolate"] = true;
  nlohmann::json odd = nlohmann::json::array();
  for (std::size_t i = 0; i < c.odd_gather_bytes.size(); ++i) {
    odd.push_back({{"bytes", static_cast<std::uint64_t>(c.odd_gather_bytes[i])},
                   {"time_ns", c.odd_gather_ns[i]}});
  }
  j["allgather"]["odd_points"] = odd;
  // A step's fixed cost in a replay: its timing mark, what a round trip with one costs more.
  j["step"] = {{"fixed_ns", std::max(0.0, c.marked_gather_ns - c.smallest_gather_ns)}};
  j["reduce_scatter"] = {{"alpha_ns", 0}, {"busbw_GBps", 0}};
  nlohmann::json h2d_points = nlohmann::json::array();
  for (std::size_t i = 0; i < c.h2d_bytes.size(); ++i) {
    h2d_points.push_back({{"bytes", static_cast<std::uint64_t>(c.h2d_bytes[i])},
                          {"time_ns", c.h2d_ns[i]},
                          {"GBps", c.h2d_bytes[i] / c.h2d_ns[i]}});
  }
  // The smallest copy, below the line's points: what the 64-byte shard's copy adds to its gather
  // as a replay runs them (the pattern's slopes), not a chain of copies alone (docs/gpu.md).
  j["h2d"] = {{"bandwidth_GBps", c.h2d_bw_gbps},
              {"alpha_ns", c.h2d_alpha_ns},
              {"points", h2d_points},
              {"small_copy",
               {{"bytes", static_cast<std::uint64_t>(c.h2d_tiny_bytes)},
                {"time_ns", c.pattern_small_copy_ns}}},
              // Copies pipelined beside gathers, as a prefetching replay runs them: the simulator's
              // copy bandwidth (docs/timeline.md).
              {"beside_gather",
               {{"bytes", static_cast<std::uint64_t>(c.h2d_pipelined_bytes)},
                {"time_ns", c.h2d_beside_gather_ns}}},
              // The same size of copy in a prefetching replay run by the replay itself (for
              // reading: the simulator charges beside_gather's rate, docs/gpu.md).
              {"in_prefetch",
               {{"bytes", static_cast<std::uint64_t>(c.prefetch_copy_bytes)},
                {"time_ns", c.prefetch_copy_ns},
                {"repeats_ns", c.prefetch_copy_repeats_ns}}}};
  nlohmann::json tiny = nlohmann::json::array();
  for (const ReplayCosts::TinyGather& t : c.tiny_gathers) {
    tiny.push_back({{"params", t.params},
                    {"elem_bytes", t.elem_bytes},
                    {"numel", t.numel},
                    {"bytes", static_cast<std::uint64_t>(t.bytes)},
                    {"time_ns", t.ns}});
  }
  nlohmann::json pattern = nlohmann::json::array();
  for (const ReplayCosts::PatternPoint& p : c.pattern) {
    pattern.push_back({{"shard_bytes", static_cast<std::uint64_t>(p.shard_bytes)},
                       {"bytes", static_cast<std::uint64_t>(p.bytes)},
                       {"gather_ns", p.gather_ns},
                       {"offloaded_ns", p.offloaded_ns},
                       {"step_ns", p.step_ns}});
  }
  j["replay"] = {{"spin_gap_ns", c.spin_gap_ns},
                 {"smallest_gather_ns", c.smallest_gather_ns},
                 {"gather_after_compute_ns", c.gather_after_compute_ns},
                 {"h2d_tiny_ns", c.h2d_tiny_ns},
                 {"h2d_tiny_repeats_ns", c.h2d_tiny_repeats_ns},
                 {"pattern", pattern},
                 {"h2d_gather_ns", c.h2d_gather_ns},
                 {"marked_gather_ns", c.marked_gather_ns},
                 {"h2d_pipelined_alone_ns", c.h2d_pipelined_ns},
                 {"overlap", c.overlap},
                 {"tiny_gathers", tiny}};
  j["notes"] =
      "allgather: the fused gather kernel over world_size simulated ranks' shards on one GPU (a "
      "persistent grid of half the GPU, as the replay runs it), each a dependent round trip "
      "compute -> comm -> compute in a CUDA graph, buckets of 4 bf16 params (sizes a multiple of "
      "8 * W elements) cycled over 4x L2; bytes = W * shard "
      "bytes (what the timeline costs); interpolate: the simulator costs a gather by these points. "
      "allgather.odd_points: the same for buckets of one fp32 param whose rank slices are not "
      "whole 16-byte vectors (the simulator charges a gather's odd params' share of the "
      "difference). reduce_scatter: not replayed (0). h2d: dependent pinned copies (compute -> "
      "h2d -> compute) of 4 KiB to 64 MiB, alpha + bytes / bandwidth; h2d.small_copy: what the "
      "64-byte shard's copy adds to its gather in replay.pattern (the median of 3); "
      "h2d.beside_gather: 16 MiB copies pipelined beside gathers, the rate the simulator "
      "charges; h2d.in_prefetch (for reading): "
      "those copies in a synthetic prefetching replay (per copy, the slope over 2 to 8 copies a "
      "step, median of 3). replay.overlap (for reading): those copies, gathers and compute "
      "kernels side by side. step.fixed_ns: what a step's timing mark adds to a "
      "round trip. replay: the fixed "
      "costs of the smallest ops, each the median per op of a chain of 1000; replay.pattern: "
      "synthetic schedules run by the replay itself, steps of 8 to 64 sync gathers of one "
      "bucket shape, without and with their shards' copies: per gather, the slope of step time "
      "over gathers, 3 repetitions.";
  if (!o.out.empty() && !write_json(o.out, j)) {
    return kExitUsage;
  }
  std::printf(
      "# replay costs on %s, %u simulated ranks: gather fit alpha %.0f ns, %.1f GB/s "
      "(W*shard bytes); h2d alpha %.0f ns, %.1f GB/s; compute kernel gap %.0f ns\n",
      prop.name, o.replay_world, c.gather_alpha_ns, c.gather_bw_gbps, c.h2d_alpha_ns, c.h2d_bw_gbps,
      c.spin_gap_ns);
  for (std::size_t i = 0; i < c.gather_bytes.size(); ++i) {
    std::printf("  gather %12.0f B %10.2f us\n", c.gather_bytes[i], c.gather_ns[i] / 1e3);
  }
  for (std::size_t i = 0; i < c.odd_gather_bytes.size(); ++i) {
    std::printf("  odd-param gather %12.0f B %10.2f us\n", c.odd_gather_bytes[i],
                c.odd_gather_ns[i] / 1e3);
  }
  std::printf(
      "# fixed costs: smallest gather %.0f ns, after a compute kernel %.0f ns, with a step mark "
      "%.0f ns; its shard's h2d copy %.0f ns, h2d + gather %.0f ns\n",
      c.smallest_gather_ns, c.gather_after_compute_ns, c.marked_gather_ns, c.h2d_tiny_ns,
      c.h2d_gather_ns);
  std::printf("# the h2d copy's chain, 3 repetitions with buffers of their own:");
  for (const double t : c.h2d_tiny_repeats_ns) {
    std::printf(" %.0f", t);
  }
  std::printf(" ns\n# as the replay runs them (per gather; plain / offloaded / step intercept):\n");
  for (const ReplayCosts::PatternPoint& p : c.pattern) {
    std::printf("  shard %5.0f B:", p.shard_bytes);
    for (std::size_t r = 0; r < p.gather_ns.size(); ++r) {
      std::printf("  %.0f / %.0f / %.0f", p.gather_ns[r], p.offloaded_ns[r], p.step_ns[r]);
    }
    std::printf(" ns\n");
  }
  std::printf("# h2d.small_copy (the copy's share at the smallest shard, median) %.0f ns\n",
              c.pattern_small_copy_ns);
  std::printf("# pipelined h2d copies of %.0f B: %.0f ns alone, %.0f ns beside gathers\n",
              c.h2d_pipelined_bytes, c.h2d_pipelined_ns, c.h2d_beside_gather_ns);
  std::printf("# h2d.in_prefetch: copies of %.0f B in a prefetching replay, per copy:",
              c.prefetch_copy_bytes);
  for (const double t : c.prefetch_copy_repeats_ns) {
    std::printf(" %.0f", t);
  }
  std::printf(" ns (median %.0f)\n", c.prefetch_copy_ns);
  const ReplayCosts::Overlap& v = c.overlap;
  std::printf(
      "# overlap (those copies' buckets, per op): copy %.0f, gather %.0f, both %.0f ns; a %.0f "
      "ns spin alone %.0f, beside a copy it then waits for %.0f ns; a %.0f ns spin beside a copy "
      "%.0f, beside a gather %.0f ns\n",
      v.copy_ns, v.gather_ns, v.copy_and_gather_ns, v.spin_beside_ns, v.spin_ns,
      v.spin_beside_copy_ns, v.short_spin_ns, v.copy_beside_short_spin_ns,
      v.gather_beside_short_spin_ns);
  for (const ReplayCosts::TinyGather& t : c.tiny_gathers) {
    std::printf("  tiny gather %2u params x %3llu x %u B (%6.0f B) %8.0f ns\n", t.params,
                static_cast<unsigned long long>(t.numel), t.elem_bytes, t.bytes, t.ns);
  }
  return kExitOk;
}

int run_bench_replay_processes(const BenchOptions& o);  // below, beside run_launch

int run_bench_cmd(const BenchOptions& o) {
  if (visible_gpus() == 0) {
    std::fprintf(stderr, "zfetch-gpu: SKIP: no CUDA device visible\n");
    return kExitSkip;
  }
  if (o.replay_world > 0) {
    return o.processes > 1 ? run_bench_replay_processes(o) : run_bench_replay(o);
  }
  NcclWorld world = make_world(o.max_gpus);
  const BenchResult r = run_bench(world, o.config);
  const int w = r.world;
  // algbw = bytes / time and busbw = algbw * (W-1)/W for all-gather and reduce-scatter, as
  // NVIDIA/nccl-tests doc/PERFORMANCE.md defines them (src/all_gather.cu AllGatherGetBw).
  const double bus = allgather_bus_factor(w);
  std::vector<TimedPoint> ag;
  std::vector<TimedPoint> rs;
  std::vector<TimedPoint> kern;
  for (const SweepPoint& p : r.sweep) {
    ag.push_back({static_cast<double>(p.gathered_bytes), p.all_gather.median_ns});
    rs.push_back({static_cast<double>(p.gathered_bytes), p.reduce_scatter.median_ns});
    kern.push_back({static_cast<double>(p.bytes), p.kernel.median_ns});
  }
  const SweepPoint& big = r.sweep.back();
  nlohmann::json j;
  j["format"] = "zfetch-calibration";
  j["version"] = 1;
  j["machine"] = o.machine.empty() ? fmt::format("{}x{} {}", w, 1, r.device) : o.machine;
  j["source"] = fmt::format("zfetch-gpu bench, {}", today());
  j["world_size"] = w;
  j["allgather"] = section(ag, bus);
  j["gather_kernel"] = section(kern, 1.0);
  j["gather_kernel"]["simulated_world"] = r.sim_world;
  j["d2d_copy_GBps"] = gbps(static_cast<double>(big.bytes), big.memcpy_d2d);
  // h2d: alpha and bandwidth fitted over the size sweep (the cost model's h2d copy is
  // alpha + bytes / bandwidth); bytes/time_ns the largest copy.
  std::vector<TimedPoint> h2d_pts;
  nlohmann::json h2d_points = nlohmann::json::array();
  for (const BenchResult::SizedTiming& p : r.h2d_points) {
    h2d_pts.push_back({static_cast<double>(p.bytes), p.time.median_ns});
    h2d_points.push_back({{"bytes", p.bytes},
                          {"time_ns", p.time.median_ns},
                          {"GBps", gbps(static_cast<double>(p.bytes), p.time)}});
  }
  const LinearFit h2d_fit = fit_alpha_bandwidth(h2d_pts, 1.0);
  j["h2d"] = {{"alpha_ns", h2d_fit.alpha_ns},
              {"bandwidth_GBps", h2d_fit.bandwidth_gbps},
              {"bytes", r.h2d_bytes},
              {"time_ns", r.h2d.median_ns},
              {"points", h2d_points}};
  nlohmann::json rsj = section(rs, bus);
  j["reduce_scatter"] = rsj;
  const SmallParamsPoint& s = r.small;
  j["small_params_bucket"] = {{"params", s.params},
                              {"bytes", s.bytes},
                              {"memcpys_per_gather", s.copies},
                              {"kernel_ns", s.kernel_world.median_ns},
                              {"kernel_sim_world_ns", s.kernel_sim.median_ns},
                              {"memcpy_d2d_ns", s.memcpy_d2d.median_ns},
                              {"allgather_plus_memcpys_ns", s.ag_copies.median_ns},
                              {"allgather_plus_memcpy_graph_ns", s.ag_graph.median_ns},
                              {"allgather_plus_memcpy_batch_ns", s.ag_batched.median_ns},
                              {"allgather_plus_kernel_ns", s.ag_kernel.median_ns},
                              {"table_chunks", s.table_chunks},
                              {"table_build_ns", s.table_build_ns}};
  j["notes"] = fmt::format(
      "bytes: allgather = gathered output (W*rank input), reduce_scatter = input, gather_kernel ="
      " real param bytes reassembled from {} simulated ranks' shards on one GPU; medians of {} "
      "samples after warm-up, buffers rotated over 4x L2. busbw = algbw*(W-1)/W "
      "(nccl-tests doc/PERFORMANCE.md); with W=1 it is 0 and algbw_GBps/alpha_algbw_ns hold the "
      "fit.",
      r.sim_world, o.config.samples);
  if (!o.out.empty() && !write_json(o.out, j)) {
    return kExitUsage;
  }
  std::printf(
      "# device %s, NCCL ranks %d, kernel gathers %u simulated ranks' shards; medians (us)\n",
      r.device.c_str(), w, r.sim_world);
  std::printf("# %12s %6s %9s %9s %7s %9s %9s %9s %9s %9s %8s %8s\n", "bytes", "params", "memcpy",
              "kernel", "k/copy", "allgath", "ag+cpys", "ag+kern", "redscat", "ag_algbw",
              "ag_busbw", "kern_GBps");
  bool pass95 = true;
  for (const SweepPoint& p : r.sweep) {
    const double ratio = p.memcpy_d2d.median_ns / p.kernel.median_ns;
    if (p.bytes >= (64ULL << 20) && ratio < 0.95) {
      pass95 = false;
    }
    std::printf("  %12llu %6u %9.2f %9.2f %6.1f%% %9.2f %9.2f %9.2f %9.2f %9.1f %8.1f %8.1f\n",
                static_cast<unsigned long long>(p.bytes), p.params, p.memcpy_d2d.median_ns / 1e3,
                p.kernel.median_ns / 1e3, 100.0 * ratio, p.all_gather.median_ns / 1e3,
                p.ag_copies.median_ns / 1e3, p.ag_kernel.median_ns / 1e3,
                p.reduce_scatter.median_ns / 1e3,
                gbps(static_cast<double>(p.gathered_bytes), p.all_gather),
                gbps(static_cast<double>(p.gathered_bytes), p.all_gather) * bus,
                gbps(static_cast<double>(p.bytes), p.kernel));
  }
  if (!r.variants.empty()) {
    std::printf(
        "# kernel variants (tiles: tile8k: 8 KiB x 256 threads, tile16k: 16 KiB x 256, "
        "tile16k-512: 16 KiB x 512; persistent warps: warp4, warp8, warp4-cs (.cs), warp8-nc "
        "(nc.L2::256B), warp8-cs; default %s)\n",
        std::string(kGatherVariantNames[kDefaultGatherVariant]).c_str());
    std::printf("# %12s %11s %7s %8s %5s %9s %9s %7s\n", "bytes", "variant", "chunk", "chunks",
                "grid/", "memcpy", "kernel", "k/copy");
  }
  for (const VariantPoint& v : r.variants) {
    std::printf("  %12llu %11s %7u %8u %5d %9.2f %9.2f %6.1f%%\n",
                static_cast<unsigned long long>(v.bytes),
                std::string(kGatherVariantNames[v.variant]).c_str(), v.chunk_bytes, v.chunks,
                v.grid_divisor, v.memcpy_d2d.median_ns / 1e3, v.kernel.median_ns / 1e3,
                100.0 * v.memcpy_d2d.median_ns / v.kernel.median_ns);
  }
  std::printf("# small-params bucket: %u params, %llu bytes, %llu memcpys per gather\n", s.params,
              static_cast<unsigned long long>(s.bytes), static_cast<unsigned long long>(s.copies));
  std::printf(
      "  kernel (W=%d layout) %.2f us | kernel (W=%u sim) %.2f us | memcpy %.2f us | "
      "allgather+memcpys %.2f us | allgather+kernel %.2f us | speedup %.1fx (kernel) "
      "%.1fx (ag+kernel)\n",
      w, s.kernel_world.median_ns / 1e3, r.sim_world, s.kernel_sim.median_ns / 1e3,
      s.memcpy_d2d.median_ns / 1e3, s.ag_copies.median_ns / 1e3, s.ag_kernel.median_ns / 1e3,
      s.ag_copies.median_ns / s.kernel_world.median_ns,
      s.ag_copies.median_ns / s.ag_kernel.median_ns);
  std::printf("SMALL path=allgather+memcpys_host_launched us=%.2f\n", s.ag_copies.median_ns / 1e3);
  std::printf("SMALL path=allgather+memcpys_cuda_graph us=%.2f\n", s.ag_graph.median_ns / 1e3);
  std::printf("SMALL path=allgather+cudaMemcpyBatchAsync us=%.2f\n", s.ag_batched.median_ns / 1e3);
  std::printf("SMALL path=allgather+fused_kernel us=%.2f\n", s.ag_kernel.median_ns / 1e3);
  std::printf("SMALL path=fused_kernel_alone us=%.2f\n", s.kernel_world.median_ns / 1e3);
  std::printf("SMALL path=memcpy_of_all_bytes us=%.2f\n", s.memcpy_d2d.median_ns / 1e3);
  std::printf(
      "# work table: %u chunks (W=%u sim) built and uploaded in %.1f us (host clock, median of 3);"
      " built once per bucket shape, then every gather of that bucket reuses it; largest sweep "
      "bucket: %.1f us\n",
      s.table_chunks, r.sim_world, s.table_build_ns / 1e3, big.table_build_ns / 1e3);
  std::printf(
      "# h2d pinned %.1f GB/s (256 MiB), fit alpha %.2f us %.1f GB/s | d2d copy %.1f GB/s | "
      "allgather alpha %.2f us algbw %.1f busbw %.1f GB/s | kernel alpha %.2f us %.1f GB/s | "
      "kernel >= 95%% of memcpy for >= 64 MiB: %s\n",
      gbps(static_cast<double>(r.h2d_bytes), r.h2d), j["h2d"]["alpha_ns"].get<double>() / 1e3,
      j["h2d"]["bandwidth_GBps"].get<double>(),
      gbps(static_cast<double>(big.bytes), big.memcpy_d2d),
      j["allgather"]["alpha_algbw_ns"].get<double>() / 1e3,
      j["allgather"]["algbw_GBps"].get<double>(), j["allgather"]["busbw_GBps"].get<double>(),
      j["gather_kernel"]["alpha_ns"].get<double>() / 1e3,
      j["gather_kernel"]["algbw_GBps"].get<double>(), pass95 ? "yes" : "NO");
  return kExitOk;
}

// Starts this program again with `args` (after `in_child` ran in the child); -1 if it could not.
template <typename InChild>
pid_t start_self(const std::vector<std::string>& args, InChild&& in_child) {
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("zfetch-gpu: fork");
    return -1;
  }
  if (pid == 0) {
    in_child();
    std::vector<char*> argv;
    std::string self = "/proc/self/exe";
    argv.push_back(self.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    std::perror("zfetch-gpu: execv");
    _exit(kExitError);
  }
  return pid;
}

// The exit status of a child started by start_self.
int wait_exit(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) {
    return kExitError;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : kExitError;
}

// Starts `n` copies of this program with RANK/WORLD_SIZE/LOCAL_RANK/ZFETCH_RENDEZVOUS set (what
// mpirun or torchrun would do), waits for all, and returns the worst exit status.
int run_launch(int n, const std::vector<std::string>& args) {
  const std::string file =
      fmt::format("/tmp/zfetch-gpu-rendezvous-{}-{}", static_cast<long>(getpid()),
                  std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<pid_t> children;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = start_self(args, [&] {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("ZFETCH_RENDEZVOUS", file.c_str(), 1);
      setenv("NCCL_NVLS_ENABLE", "0", 0);  // never NVLink multicast (KINDS.md)
    });
    if (pid < 0) {
      return kExitError;
    }
    children.push_back(pid);
  }
  int worst = 0;
  for (const pid_t pid : children) {
    worst = std::max(worst, wait_exit(pid));
  }
  std::remove(file.c_str());
  return worst;
}

// The median over `files` (calibrations of one shape) of every number at the same place; what is
// not a number, or not in every file, is the first file's. Integers that agree stay integers.
nlohmann::json median_of(const std::vector<nlohmann::json>& files) {
  const nlohmann::json& first = files.front();
  if (first.is_number()) {
    std::vector<double> v;
    for (const nlohmann::json& f : files) {
      if (!f.is_number()) {
        return first;
      }
      v.push_back(f.get<double>());
    }
    if (first.is_number_integer() &&
        std::all_of(files.begin(), files.end(),
                    [&](const nlohmann::json& f) { return f == first; })) {
      return first;
    }
    return median(v);
  }
  nlohmann::json out = first;
  if (first.is_object()) {
    for (auto it = first.begin(); it != first.end(); ++it) {
      std::vector<nlohmann::json> at;
      for (const nlohmann::json& f : files) {
        if (!f.is_object() || !f.contains(it.key())) {
          break;
        }
        at.push_back(f.at(it.key()));
      }
      if (at.size() == files.size()) {
        out[it.key()] = median_of(at);
      }
    }
  } else if (first.is_array()) {
    for (std::size_t i = 0; i < first.size(); ++i) {
      std::vector<nlohmann::json> at;
      for (const nlohmann::json& f : files) {
        if (!f.is_array() || f.size() != first.size()) {
          return first;
        }
        at.push_back(f.at(i));
      }
      out[i] = median_of(at);
    }
  }
  return out;
}

// `bench --replay-world W --processes N`: N bench processes one after another (the small fixed
// costs move between processes by up to 0.25 us, docs/gpu.md "Why, measured"), each writing
// OUT.process-K.json, then one calibration OUT whose every figure is the median over them, with
// the spread of those that decide the latency-bound replays.
int run_bench_replay_processes(const BenchOptions& o) {
  if (o.out.empty()) {
    std::fprintf(stderr, "zfetch-gpu: error: bench --processes needs --out\n");
    return kExitUsage;
  }
  std::vector<nlohmann::json> files;
  for (int k = 0; k < o.processes; ++k) {
    const std::string out = fmt::format("{}.process-{}.json", o.out, k + 1);
    std::vector<std::string> args = {"bench", "--replay-world", std::to_string(o.replay_world),
                                     "--out", out};
    if (!o.machine.empty()) {
      args.insert(args.end(), {"--machine", o.machine});
    }
    std::fflush(stdout);
    const int code = wait_exit(start_self(args, [] {}));
    if (code != kExitOk) {
      return code;
    }
    std::ifstream f(out);
    nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
    if (j.is_discarded()) {
      std::fprintf(stderr, "zfetch-gpu: error: cannot read '%s'\n", out.c_str());
      return kExitError;
    }
    files.push_back(std::move(j));
  }
  nlohmann::json merged = median_of(files);
  merged["source"] = fmt::format(
      "zfetch-gpu bench --replay-world {} --processes {}, {}: each "
      "figure the median over {} bench processes",
      o.replay_world, o.processes, today(), o.processes);
  nlohmann::json spread;
  for (const char* at : {"/h2d/small_copy/time_ns", "/step/fixed_ns", "/h2d/in_prefetch/time_ns",
                         "/allgather/points/0/time_ns"}) {
    const nlohmann::json::json_pointer ptr(at);
    nlohmann::json v = nlohmann::json::array();
    for (const nlohmann::json& f : files) {
      v.push_back(f.contains(ptr) ? f.at(ptr) : nlohmann::json());
    }
    spread[at] = v;
  }
  merged["per_process"] = spread;
  std::printf("# replay costs, the median over %d bench processes: %s\n", o.processes,
              spread.dump().c_str());
  return write_json(o.out, merged) ? kExitOk : kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zfetch-gpu: exact checks and timings of ZeRO-3 parameter gathers on GPUs"};
  app.require_subcommand(1);
  std::function<int()> action;

  VerifyOptions vo;
  CLI::App* verify = app.add_subcommand("verify", "randomized exact data check (#wrong must be 0)");
  verify->add_option("--buckets", vo.config.buckets, "randomized buckets for the fused kernel")
      ->check(decimal_unsigned(0, UINT32_MAX));
  verify->add_option("--seed", vo.config.seed, "seed of the bucket stream and the data")
      ->check(decimal_unsigned());
  verify->add_option("--max-world", vo.config.max_world, "largest simulated world size")
      ->check(decimal_unsigned(1, 4096));
  verify->add_option("--max-elems", vo.config.max_elems, "largest bucket, in elements")
      ->check(decimal_unsigned());
  std::map<std::string, zfetch::gpu::GatherVariant> variants;
  for (const std::string_view name : zfetch::gpu::kGatherVariantNames.names()) {
    variants.emplace(name, *zfetch::gpu::kGatherVariantNames.find(name));
  }
  verify
      ->add_option(
          "--variant", vo.config.variant,
          "gather kernel variant, by name (default: " +
              std::string(zfetch::gpu::kGatherVariantNames[zfetch::gpu::kDefaultGatherVariant]) +
              ")")
      ->transform(CLI::CheckedTransformer(variants));
  verify->add_option("--threads", vo.config.threads, "host threads for the kernel check")
      ->check(decimal_unsigned(1, 64));
  verify->add_option("--nccl-buckets", vo.nccl_buckets, "buckets through NCCL on all GPUs")
      ->check(decimal_unsigned(0, UINT32_MAX));
  verify->add_option("--max-gpus", vo.max_gpus, "use at most this many local GPUs (0: all)")
      ->check(decimal_unsigned(0, INT_MAX));
  verify->add_flag("--no-nccl", vo.no_nccl, "skip the NCCL check");
  verify->add_flag("--no-kernel", vo.no_kernel, "skip the single-GPU kernel check");
  verify->add_flag("--per-allocation", vo.config.per_allocation,
                   "every rank input and param output its own exact cudaMalloc (for memcheck)");
  verify->add_flag(
      "--bench-sizes", vo.bench_sizes,
      "check the buckets bench times (--min-bytes..--max-bytes) instead of random ones");
  verify->add_option("--min-bytes", vo.min_bytes, "smallest bench bucket (--bench-sizes)")
      ->check(decimal_unsigned());
  verify->add_option("--max-bytes", vo.max_bytes, "largest bench bucket (--bench-sizes)")
      ->check(decimal_unsigned());
  verify
      ->add_option("--sim-world", vo.config.fixed_world,
                   "simulated ranks of the kernel check (--bench-sizes)")
      ->check(decimal_unsigned(1, 1024));
  verify
      ->add_option("--plant", vo.plant,
                   "test only: plant a bug verify must report (exit 1): overrun, padding, race")
      ->check(CLI::IsMember({"overrun", "padding", "race"}));
  verify->callback([&] { action = [&] { return run_verify(vo); }; });

  BenchOptions bo;
  CLI::App* bench = app.add_subcommand("bench", "time kernel, memcpy and NCCL; write calibration");
  bench->add_option("--out", bo.out, "calibration JSON to write");
  bench->add_option("--machine", bo.machine, "machine name recorded in the calibration file");
  bench->add_option("--min-bytes", bo.config.min_bytes, "smallest bucket")
      ->check(decimal_unsigned());
  bench->add_option("--max-bytes", bo.config.max_bytes, "largest bucket")
      ->check(decimal_unsigned());
  bench->add_option("--samples", bo.config.samples, "timed samples per point")
      ->check(decimal_unsigned(1, 1000));
  bench->add_option("--sim-world", bo.config.sim_world, "simulated ranks for the kernel")
      ->check(decimal_unsigned(1, 1024));
  bench->add_flag("!--no-variants", bo.config.variants, "skip the kernel-variant table");
  bench->add_option("--max-gpus", bo.max_gpus, "use at most this many local GPUs (0: all)")
      ->check(decimal_unsigned(0, INT_MAX));
  bench
      ->add_option("--replay-world", bo.replay_world,
                   "instead: measure what `replay` runs for W simulated ranks and write that "
                   "calibration (for `zfetch run --calibration`)")
      ->check(decimal_unsigned(2, 1024));
  bench
      ->add_option("--processes", bo.processes,
                   "with --replay-world: measure in this many bench processes, one after another, "
                   "and write the median of each figure (needs --out)")
      ->check(decimal_unsigned(1, 99));
  bench->callback([&] { action = [&] { return run_bench_cmd(bo); }; });

  int nproc = 1;
  std::vector<std::string> rest;
  CLI::App* launch = app.add_subcommand(
      "launch", "run `zfetch-gpu ARGS...` as N processes, one GPU each (file rendezvous)");
  launch->add_option("-n,--nproc", nproc, "processes")
      ->required()
      ->check(decimal_unsigned(1, 1024));
  launch->add_option("args", rest, "subcommand and its options, after --")->required();
  launch->callback([&] { action = [&] { return run_launch(nproc, rest); }; });

  zfetch::gpu::setup_replay(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const GpuError& e) {
    std::fprintf(stderr, "%s\n", e.what());  // file:line: error: <call> failed: <reason>
    return kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zfetch-gpu: error: %s\n", e.what());
    return kExitError;
  }
}
