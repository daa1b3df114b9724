// The dependencies of a replay graph: nodes on four chains (the compute, comm and h2d streams, and
// the timing marks),
// each new node depending on a set of earlier nodes, with edges that another edge already implies
// left out (transitive reduction). Host-only (no CUDA), unit-tested; replay.cu maps its node ids
// to CUDA graph nodes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zfetch::gpu {

/// Tracks where each chain's next node must start. Every node on a chain follows that chain's
/// previous node (stream order), so reachability is exact with a vector clock per node: clock[c]
/// is the position of the latest node of chain c that the node follows (itself included).
///
/// With `reduce` (the default), a dependency that another dependency of the same node already
/// follows is dropped: a gather issued right after a compute kernel that waited on the previous
/// gather depends on that kernel only, not also on the previous gather. The partial order of the
/// graph is the same; only implied edges are gone. A CUDA graph executes each edge, so an implied
/// edge between nodes of different branches costs a wait on the device although it is already
/// met. Without `reduce`, only older nodes of the same chain are dropped (what a stream capture
/// with one event per wait records: every stream's own order plus every waited event).
class ReplayDeps {
 public:
  static constexpr int kChains = 4;
  using Clock = std::array<std::uint64_t, kChains>;
  struct Ref {
    int chain = -1;         ///< -1: no node
    std::uint64_t pos = 0;  ///< 1-based position on its chain
    std::size_t id = 0;     ///< the caller's node id (index of add() calls)
    Clock clock{};          ///< latest position followed on each chain
    [[nodiscard]] bool valid() const { return chain >= 0; }
  };

  explicit ReplayDeps(bool reduce = true) : reduce_(reduce) {}

  /// What the next node on `chain` depends on (an antichain when reducing).
  [[nodiscard]] const std::vector<Ref>& front(int chain) const { return front_.at(ix(chain)); }
  /// The newest node of `chain` (invalid before its first).
  [[nodiscard]] const Ref& last(int chain) const { return last_.at(ix(chain)); }
  /// The next node on `chain` also depends on `ref` (a no-op for an invalid ref).
  void depend(int chain, const Ref& ref);
  void depend(int chain, const std::vector<Ref>& refs);
  /// Records the next node on `chain` (depending on front(chain)) under the caller's id `id`;
  /// its front becomes that node alone.
  Ref add(int chain, std::size_t id);
  /// True when `a` follows `b` (or is `b`).
  [[nodiscard]] static bool follows(const Ref& a, const Ref& b) {
    return a.valid() && b.valid() && a.clock[static_cast<std::size_t>(b.chain)] >= b.pos;
  }
  [[nodiscard]] std::uint64_t nodes() const { return nodes_; }
  [[nodiscard]] std::uint64_t edges() const { return edges_; }

 private:
  static std::size_t ix(int chain) { return static_cast<std::size_t>(chain); }
  bool reduce_;
  std::array<std::vector<Ref>, kChains> front_{};
  std::array<Ref, kChains> last_{};
  std::uint64_t nodes_ = 0;
  std::uint64_t edges_ = 0;
};

}  // namespace zfetch::gpu
