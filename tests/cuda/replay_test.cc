// Host-side checks of `zfetch-gpu replay`: the dependencies of its graph (implied edges left
// out, timing marks off compute's chain) and the schedule file it reads. Needs no GPU.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cuda_kernels/replay_deps.h"
#include "cuda_kernels/replay_schedule_file.h"
#include "cuda_kernels/replay_walk.h"

namespace zfetch::gpu {
namespace {

using Ref = ReplayDeps::Ref;

// The replay's graph without CUDA, for walk_replay and issue_gather (replay_walk.h): a node is
// its ReplayDeps id, and captures are never run.
struct DepsGraph {
  ReplayDeps deps;
  std::size_t next = 0;
  explicit DepsGraph(bool reduce) : deps(reduce) {}
  [[nodiscard]] const std::vector<Ref>& point(int chain) const { return deps.front(chain); }
  [[nodiscard]] const Ref& last(int chain) const { return deps.last(chain); }
  void depend(int chain, const Ref& r) { deps.depend(chain, r); }
  void depend(int chain, const std::vector<Ref>& refs) { deps.depend(chain, refs); }
  std::vector<Ref> by_id;  // every node
  Ref node(int chain) { return by_id.emplace_back(deps.add(chain, next++)); }
  template <typename Capture>
  Ref add(int chain, Capture&& /*capture*/) {
    return node(chain);
  }
  void spin(std::uint64_t /*ns*/) { node(kCompute); }
  Ref add_mark() { return node(kMark); }
  // A gather issued at compute's point, optionally after its h2d copy; compute does not wait.
  Ref gather(bool copy) { return issue_gather(*this, kBucket, nullptr, copy, true); }
  // Sources of a node's edges: the front its chain had just before it was added.
  [[nodiscard]] std::vector<std::size_t> front_ids(int chain) const {
    std::vector<std::size_t> ids;
    for (const Ref& r : deps.front(chain)) {
      ids.push_back(r.id);
    }
    return ids;
  }
  // The captures that would use a bucket never run.
  struct NoBucket {
    template <typename Stream>
    void copy_shards(const std::byte* /*host*/, Stream /*stream*/) const {}
    template <typename Stream>
    void launch(Stream /*stream*/) const {}
  };
  static constexpr NoBucket kBucket{};
};

// The walk over `schedule` on a DepsGraph: the marks (node refs, in order) and the counts.
struct Walked {
  std::vector<Ref> marks;
  ReplayWalkCounts counts;
};
Walked walk(DepsGraph& g, const ReplaySchedule& schedule, std::int64_t gap = 0) {
  Walked w;
  w.marks = walk_replay(
      g, schedule,
      [](const std::vector<std::uint32_t>& /*params*/) -> const DepsGraph::NoBucket& {
        return DepsGraph::kBucket;
      },
      nullptr, gap, w.counts);
  return w;
}

ReplayOp op(ReplayOp::Kind kind) {
  ReplayOp o;
  o.kind = kind;
  return o;
}
ReplayOp gather_op(bool sync) {
  ReplayOp o = op(ReplayOp::Kind::Gather);
  o.sync = sync;
  o.params = {0};
  return o;
}
ReplayOp compute_op(std::int64_t dur_ns, std::vector<std::uint32_t> waits = {}) {
  ReplayOp o = op(ReplayOp::Kind::Compute);
  o.dur_ns = dur_ns;
  o.waits = std::move(waits);
  return o;
}
ReplayOp step_op(std::int32_t step) {
  ReplayOp o = op(ReplayOp::Kind::Step);
  o.step = step;
  return o;
}

TEST_SUITE("cuda") {
  TEST_CASE("replay deps: sync gathers after a step mark form one chain") {
    // many_params: a step mark, then gather -> wait -> (no compute kernel) -> gather ...
    for (const bool reduce : {true, false}) {
      CAPTURE(reduce);
      DepsGraph b(reduce);
      b.node(kCompute);  // the step's timing mark, id 0
      for (int k = 0; k < 100; ++k) {
        b.deps.depend(kCompute, b.gather(false));
      }
      b.node(kCompute);  // the next mark
      CHECK(b.deps.nodes() == 102);
      if (reduce) {
        // mark -> g0 -> g1 -> ... -> g99 -> mark: one edge per node after the first.
        CHECK(b.deps.edges() == 101);
      } else {
        // The capture's edges: each gather also depends on the mark (compute's last node).
        CHECK(b.deps.edges() == 1 + 2 * 99 + 2);
      }
    }
  }

  TEST_CASE("replay deps: gather -> compute -> gather without prefetch is a chain") {
    DepsGraph b(true);
    b.node(kCompute);
    for (int k = 0; k < 10; ++k) {
      const Ref g = b.gather(false);
      b.deps.depend(kCompute, g);
      // The compute kernel depends on its gather only: the gather already follows the
      // previous compute kernel.
      CHECK(b.front_ids(kCompute) == std::vector<std::size_t>{g.id});
      b.node(kCompute);
    }
    CHECK(b.deps.edges() == b.deps.nodes() - 1);
  }

  TEST_CASE("replay deps: prefetched gathers keep their real edges") {
    DepsGraph b(true);
    const Ref c0 = b.node(kCompute);
    const Ref g1 = b.gather(false);  // issued after c0
    const Ref g2 = b.gather(false);  // after c0 and g1 (comm order): c0 is implied by g1
    CHECK(b.deps.front(kComm).size() == 1);
    const Ref c1 = b.node(kCompute);  // runs beside the gathers: depends on c0 only
    CHECK(ReplayDeps::follows(c1, c0));
    CHECK(!ReplayDeps::follows(c1, g1));
    b.deps.depend(kCompute, g1);
    CHECK(b.front_ids(kCompute) == std::vector<std::size_t>{c1.id, g1.id});
    b.deps.depend(kCompute, g2);  // g2 follows g1: g1's edge is implied
    CHECK(b.front_ids(kCompute) == std::vector<std::size_t>{c1.id, g2.id});
    const Ref c2 = b.node(kCompute);
    CHECK(ReplayDeps::follows(c2, g1));
    CHECK(ReplayDeps::follows(c2, c0));
    // Waiting again on something already followed adds nothing.
    b.deps.depend(kCompute, g1);
    CHECK(b.front_ids(kCompute) == std::vector<std::size_t>{c2.id});
  }

  TEST_CASE("replay deps: offload copies chain with their gathers") {
    DepsGraph b(true);
    b.node(kCompute);
    for (int k = 0; k < 5; ++k) {
      b.deps.depend(kCompute, b.gather(true));
    }
    b.node(kCompute);
    // mark -> h2d -> gather -> h2d -> gather ... -> mark
    CHECK(b.deps.nodes() == 12);
    CHECK(b.deps.edges() == 11);
    // Without reduction: each copy also depends on the previous copy, each gather on the
    // previous gather (stream order), the next mark on the last copy and gather.
    DepsGraph all(false);
    all.node(kCompute);
    for (int k = 0; k < 5; ++k) {
      all.deps.depend(kCompute, all.gather(true));
    }
    all.node(kCompute);
    CHECK(all.deps.edges() > 11);
  }

  TEST_CASE("replay deps: leaving implied edges out keeps the partial order") {
    // Random ops on three chains, built with and without reduction: every node must follow the
    // same set of nodes (transitive closure of the recorded edges) either way.
    std::uint64_t state = 12345;
    auto next = [&](std::uint64_t n) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return (state >> 33) % n;
    };
    for (int trial = 0; trial < 50; ++trial) {
      ReplayDeps reduced(true);
      ReplayDeps all(false);
      std::vector<std::vector<std::size_t>> edges_r;
      std::vector<std::vector<std::size_t>> edges_a;
      std::vector<Ref> refs_r;
      std::vector<Ref> refs_a;
      for (int op = 0; op < 60; ++op) {
        const int chain = static_cast<int>(next(3));
        // Depend on up to two earlier nodes (or on another chain's point).
        for (std::uint64_t k = next(3); k > 0 && !refs_r.empty(); --k) {
          const std::size_t i = next(refs_r.size());
          reduced.depend(chain, refs_r[i]);
          all.depend(chain, refs_a[i]);
        }
        if (next(4) == 0) {
          const int other = static_cast<int>(next(3));
          const std::vector<Ref> pr = reduced.front(other);
          const std::vector<Ref> pa = all.front(other);
          reduced.depend(chain, pr);
          all.depend(chain, pa);
        }
        std::vector<std::size_t> er;
        for (const Ref& r : reduced.front(chain)) {
          er.push_back(r.id);
        }
        std::vector<std::size_t> ea;
        for (const Ref& r : all.front(chain)) {
          ea.push_back(r.id);
        }
        edges_r.push_back(er);
        edges_a.push_back(ea);
        refs_r.push_back(reduced.add(chain, refs_r.size()));
        refs_a.push_back(all.add(chain, refs_a.size()));
      }
      CHECK(reduced.edges() <= all.edges());
      // Closures: ancestors of node i (ids are in creation order, edges point backwards).
      auto closure = [](const std::vector<std::vector<std::size_t>>& edges) {
        std::vector<std::vector<bool>> anc(edges.size(), std::vector<bool>(edges.size(), false));
        for (std::size_t i = 0; i < edges.size(); ++i) {
          for (std::size_t d : edges[i]) {
            anc[i][d] = true;
            for (std::size_t k = 0; k < i; ++k) {
              if (anc[d][k]) {
                anc[i][k] = true;
              }
            }
          }
        }
        return anc;
      };
      const auto cr = closure(edges_r);
      CHECK(cr == closure(edges_a));
      // And the vector clocks agree with the closure.
      for (std::size_t i = 0; i < refs_r.size(); ++i) {
        for (std::size_t k = 0; k < i; ++k) {
          CHECK(ReplayDeps::follows(refs_r[i], refs_r[k]) == cr[i][k]);
        }
      }
    }
  }

  TEST_CASE("replay deps: an invalid ref adds no dependency") {
    DepsGraph b(true);
    b.deps.depend(kCompute, Ref{});
    CHECK(b.deps.front(kCompute).empty());
    const Ref first = b.node(kCompute);
    CHECK(first.pos == 1);
    CHECK(b.deps.edges() == 0);
  }

  TEST_CASE("replay deps: a timing mark follows compute but compute never waits for it") {
    DepsGraph b(true);
    const Ref k1 = b.node(kCompute);
    const Ref mark = timing_mark(b, b.point(kCompute));
    CHECK(ReplayDeps::follows(mark, k1));
    const Ref k2 = b.node(kCompute);
    CHECK(b.front_ids(kCompute) == std::vector<std::size_t>{k2.id});
    CHECK_FALSE(ReplayDeps::follows(k2, mark));  // the mark is a leaf off compute's chain
  }

  TEST_CASE("replay walk: each op's nodes and waits, and a mark per step boundary") {
    ReplaySchedule schedule;
    schedule.world_size = 2;
    schedule.params = {{1024, 2}};
    // step 0: a prefetch (0 waits), a compute that waits on it, a compute too short for a
    // kernel; step 1: a getter gather (compute waits at once), a drain, a compute.
    schedule.ops = {step_op(0), gather_op(false), compute_op(5'000, {1}),    compute_op(10),
                    step_op(1), gather_op(true),  op(ReplayOp::Kind::Drain), compute_op(5'000)};
    DepsGraph g(true);
    const Walked w = walk(g, schedule, 100);
    CHECK(w.counts.steps == std::vector<std::int32_t>{0, 1});
    CHECK(w.counts.gather_ops == 2);
    CHECK(w.counts.compute_kernels == 2);
    CHECK(w.counts.compute_skipped == 1);
    // Marks: step 0's after its first op (the gather), step 1's at its start, the end's.
    REQUIRE(w.marks.size() == 3);
    // Node ids in creation order: g0 (comm) 0, mark0 1, c0 2, g1 3, mark1 4, c1 5, end mark 6.
    CHECK(w.marks[0].id == 1);
    CHECK(w.marks[1].id == 4);
    CHECK(w.marks[2].id == 6);
    CHECK(g.deps.nodes() == 7);
    const std::vector<Ref>& n = g.by_id;
    CHECK(n[0].chain == kComm);
    CHECK(n[2].chain == kCompute);
    CHECK(n[3].chain == kComm);
    CHECK(ReplayDeps::follows(n[2], n[0]));   // c0 waited on the prefetch
    CHECK(ReplayDeps::follows(n[3], n[2]));   // g1 was issued at compute's point after c0
    CHECK(ReplayDeps::follows(n[5], n[3]));   // c1 follows the getter gather (sync)
    CHECK(!ReplayDeps::follows(n[1], n[0]));  // step 0 began before any node
    CHECK(ReplayDeps::follows(n[4], n[2]));   // step 1 began at c0
    CHECK(!ReplayDeps::follows(n[5], n[4]));  // compute never waits for a mark
    CHECK(ReplayDeps::follows(n[6], n[5]));   // the end mark is at the last compute
  }

  TEST_CASE("replay walk: world size 1 gathers nothing; offload copies before each gather") {
    ReplaySchedule schedule;
    schedule.params = {{1024, 2}};
    schedule.ops = {step_op(0), gather_op(false), compute_op(5'000, {1})};
    SUBCASE("world 1") {
      schedule.world_size = 1;
      DepsGraph g(true);
      const Walked w = walk(g, schedule);
      CHECK(w.counts.gather_ops == 0);
      CHECK(!g.deps.last(kComm).valid());
      CHECK(!g.deps.last(kH2d).valid());
    }
    SUBCASE("offload") {
      schedule.world_size = 2;
      schedule.offload = true;
      DepsGraph g(true);
      const Walked w = walk(g, schedule);
      CHECK(w.counts.gather_ops == 1);
      const Ref copy = g.deps.last(kH2d);
      const Ref gathered = g.deps.last(kComm);
      REQUIRE(copy.valid());
      REQUIRE(gathered.valid());
      CHECK(ReplayDeps::follows(gathered, copy));  // the gather waits for its shards' copy
      CHECK(ReplayDeps::follows(g.deps.last(kCompute), gathered));
    }
  }

  TEST_CASE("replay schedule file: the prediction and its calibration come from the simulator") {
    const std::string schedule = R"({"format": "zfetch-replay-schedule", "version": 1,
      "scenario": "s", "rank": 0, "world_size": 2, "offload": false,
      "calibration": {"machine": "m",
        "allgather": {"alpha_ns": 1700, "busbw_bytes_per_s": 900000000000,
                      "curve": [[4096, 2000], [8192, 2100]]},
        "reduce_scatter": {"alpha_ns": 0, "busbw_bytes_per_s": 0},
        "h2d_bytes_per_s": 55000000000, "h2d_alpha_ns": 2500},
      "params": [[1024, 2]],
      "ops": [{"op": "step", "step": 0}, {"op": "gather", "kind": "gather", "sync": true,
               "params": [0], "shard_bytes": 1024, "full_bytes": 2048},
              {"op": "compute", "dur_ns": 500, "waits": [1]}, {"op": "drain"}],
      "steps": [{"step": 0, "step_ns": 4321}]})";
    const ReplaySchedule s = parse_replay_schedule(schedule);
    REQUIRE(s.sim_steps.size() == 1);
    CHECK(s.sim_steps[0].step_ns == 4'321);
    CHECK(s.calibration.allgather_curve_points == 2);
    const std::string file = R"({"format": "zfetch-calibration", "version": 1,
      "allgather": {"alpha_ns": 1700, "busbw_GBps": 900, "interpolate": true,
                    "points": [{"bytes": 4096, "time_ns": 2000}, {"bytes": 8192, "time_ns": 2100}]},
      "reduce_scatter": {"alpha_ns": 0, "busbw_GBps": 0},
      "h2d": {"bandwidth_GBps": 55, "alpha_ns": 2500}})";
    CHECK(parse_replay_calibration(file).same_costs(s.calibration));
    ReplayCalibration other = parse_replay_calibration(file);
    other.h2d_alpha_ns = 2'600;
    CHECK_FALSE(other.same_costs(s.calibration));
  }

  TEST_CASE("replay schedule file: h2d.alpha_ns is read from a calibration file, 0 when absent") {
    const std::string with = R"({"format": "zfetch-calibration", "version": 1,
      "allgather": {"alpha_ns": 1700.4, "busbw_GBps": 900},
      "h2d": {"bandwidth_GBps": 55.25, "alpha_ns": 2517.6, "points": []}})";
    const ReplayCalibration c = parse_replay_calibration(with);
    CHECK(c.allgather_alpha_ns == 1'700);
    CHECK(c.h2d_bytes_per_s == 55'250'000'000);
    CHECK(c.h2d_alpha_ns == 2'518);
    const std::string without = R"({"format": "zfetch-calibration", "version": 1,
      "allgather": {"alpha_ns": 1700, "busbw_GBps": 900}, "h2d": {"bandwidth_GBps": 55}})";
    CHECK(parse_replay_calibration(without).h2d_alpha_ns == 0);
  }

  TEST_CASE(
      "replay schedule file: h2d.beside_gather sets the copy bandwidth, as in the simulator") {
    // What `bench --replay-world` writes: the simulator charges beside_gather's rate, `bytes /
    // (time - alpha)` with alpha rounded first (sim/timeline/calibration.cc), and a schedule
    // carries that rate; `replay --calibration` refused every offloaded schedule while this side
    // read bandwidth_GBps alone.
    const std::string file = R"({"format": "zfetch-calibration", "version": 1,
      "allgather": {"alpha_ns": 1700, "busbw_GBps": 900},
      "h2d": {"bandwidth_GBps": 54.68, "alpha_ns": 2641.44,
              "beside_gather": {"bytes": 16777216, "time_ns": 311996.0},
              "in_prefetch": {"bytes": 16777216, "time_ns": 309000.0}}})";
    const ReplayCalibration c = parse_replay_calibration(file);
    CHECK(c.h2d_alpha_ns == 2'641);
    CHECK(c.h2d_bytes_per_s == 54'232'891'015);
  }
}

}  // namespace
}  // namespace zfetch::gpu
