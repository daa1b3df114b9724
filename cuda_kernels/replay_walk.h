// The replay's graph built op by op: which chain each op of a schedule adds its node to and what
// that node waits for. Host-only, so that tests/cuda/replay_test.cc runs this very code without a
// GPU; replay.cu runs it on its CUDA graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "cuda_kernels/replay_deps.h"
#include "cuda_kernels/replay_schedule_file.h"

namespace zfetch::gpu {

/// The chains of a replay graph. kMark holds the step timing marks: each depends on compute's
/// point but nothing depends on it, so a mark adds no latency to compute's chain (on the chain,
/// each cost 1.5-1.9 us on an H200).
enum ReplayChain : int { kCompute = 0, kComm = 1, kH2d = 2, kMark = 3 };

// The walk is written against a graph type `Graph` providing (replay.cu's CUDA graph, or a
// test's stand-in that records the dependencies alone):
//   point(chain)            what the next node of `chain` depends on (ReplayDeps::front)
//   depend(chain, refs)     the next node of `chain` also waits for a Ref or a vector of Refs
//   add(chain, capture)     the next node of `chain`: capture(stream) issues it; returns its Ref
//                           (invalid when the capture added no node)
//   last(chain)             the newest node of `chain` (ReplayDeps::last)
//   spin(ns)                a compute stand-in of `ns` on compute's chain
//   add_mark()              a timing mark on kMark after point(kMark); returns it
// and a bucket type `Bucket` with copy_shards(host, stream) and launch(stream).

/// A gather issued at compute's current point, as the timeline costs it: with `copy` the h2d
/// copy of this rank's shards first, then with `gather` the bucket's gather on comm. Returns the
/// node its waiters depend on (invalid if it added none).
template <typename Graph, typename Bucket>
ReplayDeps::Ref issue_gather(Graph& g, const Bucket& b, const std::byte* host, bool copy,
                             bool gather) {
  const std::vector<ReplayDeps::Ref> issue = g.point(kCompute);
  ReplayDeps::Ref ready;
  if (copy) {
    g.depend(kH2d, issue);
    ready = g.add(kH2d, [&](auto stream) { b.copy_shards(host, stream); });
  }
  if (gather) {
    if (ready.valid()) {
      g.depend(kComm, ready);
    } else {
      g.depend(kComm, issue);
    }
    const ReplayDeps::Ref r = g.add(kComm, [&](auto stream) { b.launch(stream); });
    if (r.valid()) {
      ready = r;
    }
  }
  return ready;
}

/// Compute waits for everything issued on the side streams so far.
template <typename Graph>
void drain(Graph& g) {
  g.depend(kCompute, g.last(kComm));
  g.depend(kCompute, g.last(kH2d));
}

/// A timing mark reached when compute is at `at`, on the marks' chain: compute does not wait
/// for it. Returns the graph's mark.
template <typename Graph>
auto timing_mark(Graph& g, const std::vector<ReplayDeps::Ref>& at) {
  g.depend(kMark, at);
  return g.add_mark();
}

/// What a walk over a schedule issued.
struct ReplayWalkCounts {
  std::vector<std::int32_t> steps;  ///< step numbers, in order
  std::int64_t gather_ops = 0;
  std::int64_t compute_kernels = 0;
  std::int64_t compute_skipped = 0;  ///< compute shorter than the launch gap: no kernel
};

/// Adds every op of `schedule` to `g`: gathers (of `bucket_of(op.params)`, copied from `host`
/// first when the schedule offloads; no gather at world size 1), waits, compute stand-ins
/// (`gap` less than the op's time; none when that leaves nothing), drains, and a timing mark
/// per step boundary, added after the step's first op. Returns the marks in order: step k runs
/// from mark k to mark k + 1, and the last mark is the schedule's end.
template <typename Graph, typename BucketOf>
auto walk_replay(Graph& g, const ReplaySchedule& schedule, BucketOf&& bucket_of,
                 const std::byte* host, std::int64_t gap, ReplayWalkCounts& counts) {
  using Ref = ReplayDeps::Ref;
  const bool gathers = schedule.world_size > 1;
  std::vector<Ref> ready(schedule.ops.size());
  std::vector<decltype(g.add_mark())> marks;
  std::optional<std::vector<Ref>> step_start;  // compute's point where the last step began
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    const ReplayOp& op = schedule.ops[i];
    // The mark of the step that began at the last op is added after this op's node: either way
    // the mark delays the step by 0.2-0.4 us on an H200, which bench measures as step.fixed_ns
    // the way the replay adds it.
    const bool pending_mark = step_start.has_value() && op.kind != ReplayOp::Kind::Step;
    switch (op.kind) {
    case ReplayOp::Kind::Step:
      if (step_start.has_value()) {
        marks.push_back(timing_mark(g, *step_start));
      }
      step_start = g.point(kCompute);
      counts.steps.push_back(op.step);
      break;
    case ReplayOp::Kind::Gather:
      ready[i] = issue_gather(g, bucket_of(op.params), host, schedule.offload, gathers);
      counts.gather_ops += gathers ? 1 : 0;
      if (op.sync) {
        g.depend(kCompute, ready[i]);
      }
      break;
    case ReplayOp::Kind::Wait:
      g.depend(kCompute, ready[op.waits[0]]);
      break;
    case ReplayOp::Kind::Compute:
      for (std::uint32_t w : op.waits) {
        g.depend(kCompute, ready[w]);
      }
      if (op.dur_ns > gap) {
        g.spin(static_cast<std::uint64_t>(op.dur_ns - gap));
        ++counts.compute_kernels;
      } else {
        ++counts.compute_skipped;
      }
      break;
    case ReplayOp::Kind::Rs:
      break;  // not replayed (a replay calibration costs it 0, so the prediction has none)
    case ReplayOp::Kind::Drain:
      drain(g);
      break;
    }
    if (pending_mark) {
      marks.push_back(timing_mark(g, *step_start));
      step_start.reset();
    }
  }
  if (step_start.has_value()) {
    marks.push_back(timing_mark(g, *step_start));
  }
  marks.push_back(timing_mark(g, g.point(kCompute)));
  return marks;
}

}  // namespace zfetch::gpu
