// The autograd graph one training forward builds, as far as it decides when backward hooks fire
// and when checkpoint regions are recomputed (docs/backward-order.md; semantics 2.5-2.7).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/scenario.h"
#include "sim/state.h"

namespace zfetch::sim {

class AutogradGraph {
 public:
  /// A param whose AccumulateGrad runs after a node, and how many uses of the param in this
  /// graph task feed it (their gradients are summed first).
  struct Accumulation {
    ParamIndex param;
    uint32_t uses;
  };
  /// A node of the graph (docs/backward-order.md, section 1).
  struct Node {
    enum class Kind : uint8_t {
      PostBackward,
      Compute,
      PreBackward,
      Checkpoint,
      DataRead,
      LeafHook
    };
    Kind kind;
    ModuleIndex module;  ///< DataRead: the module whose forward read the param's data
    int32_t region;      ///< Checkpoint: the region; Compute: its non-reentrant region, or -1
    /// The params whose gradient is accumulated once this node's backward has run (their
    /// AccumulateGrad becomes ready): accumulated_[accumulate_begin, + accumulate_count).
    uint32_t accumulate_begin = 0;
    uint32_t accumulate_count = 0;
    /// Compute: the module's input requires grad (a z3 leaf's backward hook then runs after it)
    bool input_rg = true;
    /// PreBackward of a returned param that was partitioned before the node wrapped it (its
    /// data empty), or kNone
    ParamIndex emptied_return = model::kNone;
  };
  /// A checkpointed region of one forward (2.7).
  struct Region {
    const std::vector<model::Op>* body;
    ModuleIndex module;  ///< the module whose forward runs the region
    bool reentrant;
    int32_t compute_nodes;  ///< non-reentrant: saved-tensor nodes created by the original forward
    bool replayed;
    bool input_rg;  ///< whether the region's input requires grad (the replay's is the same)
    /// The non-reentrant region open when this one was created, or -1: this region's inputs are
    /// saved tensors of that one (CheckpointFunction's, or _NoopSaveInputs' for a nested
    /// non-reentrant region), so unpacking them recomputes that region first.
    int32_t enclosing = -1;
  };

  /// Capacity for a model of `modules` modules and `params` params, so that steady-state
  /// forwards never allocate.
  void reserve(size_t modules, size_t params);
  /// Forgets the previous forward's graph; a new autograd execution (graph task) begins.
  void clear();
  /// The forward replay of a reentrant region: its graph is run by a nested backward, a graph
  /// task of its own.
  void begin_nested_task() { ++task_; }

  /// False while a non-reentrant replay runs: torch discards the nodes it creates.
  [[nodiscard]] bool recording() const { return recording_; }
  /// True once a non-reentrant replay has regenerated every saved tensor: the rest of the region
  /// is skipped, and every module still executing returns without its post-forward hooks.
  [[nodiscard]] bool stopping() const { return stopping_; }

  /// The post-backward installer's node of `m` (its input requires grad).
  void add_post_backward(ModuleIndex m);
  /// One pre-backward node of `m` (one differentiable output, or one returned trainable param;
  /// `emptied_return`: that param, when it was partitioned before the wrap).
  void add_pre_backward(ModuleIndex m, ParamIndex emptied_return = model::kNone);
  /// Whether trainable param `p` was used in the current graph task (its AccumulateGrad node
  /// exists, with the shape the param had at that first use).
  [[nodiscard]] bool used(ParamIndex p) const { return use_task_[static_cast<size_t>(p)] == task_; }
  /// An op that saves tensors (a module's own computation); during a discarded replay it counts
  /// one saved tensor regenerated instead.
  void add_compute(ModuleIndex m, bool input_rg);
  /// The full backward hook of z3 leaf `m` called on an input that does not require grad: torch
  /// calls it from the outputs' BackwardHookFunction node, created after the pre-backward nodes,
  /// so it runs before m's pre-backward (torch/utils/hooks.py BackwardHook).
  void add_leaf_hook(ModuleIndex m);
  /// A reentrant region's CheckpointFunction node, after its no_grad forward; it saves the
  /// region's inputs, so inside a non-reentrant region it is a saved tensor of that region too.
  void add_reentrant_region(const std::vector<model::Op>* body, ModuleIndex m);
  /// A read of a param's data by `reader`'s forward with grad enabled (no saved tensor).
  void add_data_read(ModuleIndex reader);
  /// The newest node uses trainable param `p`. torch runs p's AccumulateGrad once per graph
  /// task, when every use's backward has run: after the oldest use, since backward runs in
  /// reverse creation order. So only p's first use in the current task is marked.
  void add_use(ParamIndex p);

  /// Opens a non-reentrant region run by `m`; its saved input is a saved tensor of the region it
  /// is nested in. Returns that region, for close_region. During a discarded replay it opens a
  /// region of a frame torch discards: nothing inside it counts for the replay.
  int32_t open_region(const std::vector<model::Op>* body, ModuleIndex m, bool input_rg);
  void close_region(int32_t enclosing);

  /// Starts the discarded replay of non-reentrant `region`: stops after its saved tensors.
  void begin_discarded_replay(int32_t region);
  void end_discarded_replay();

  [[nodiscard]] size_t size() const { return nodes_.size(); }
  [[nodiscard]] const Node& node(size_t i) const { return nodes_[i]; }
  /// The params whose gradient is accumulated right after `node`'s backward.
  [[nodiscard]] std::span<const Accumulation> accumulated(const Node& node) const {
    return {accumulated_.data() + node.accumulate_begin, node.accumulate_count};
  }
  /// Drops the nodes from `begin` on (a reentrant replay's nested graph, once it has run).
  void truncate(size_t begin);
  [[nodiscard]] Region& region(int32_t r) { return regions_[static_cast<size_t>(r)]; }
  [[nodiscard]] const Region& region(int32_t r) const { return regions_[static_cast<size_t>(r)]; }

 private:
  void count_saved_tensor();
  void count_regenerated();

  std::vector<Node> nodes_;
  std::vector<Region> regions_;
  std::vector<Accumulation> accumulated_;  ///< per node, in node order (Node::accumulate_begin)
  std::vector<uint32_t> use_task_;         ///< per param: the graph task of its first use, or 0
  std::vector<uint32_t> use_entry_;        ///< per param: its entry in accumulated_ for that task
  uint32_t task_ = 1;
  bool recording_ = true;
  bool stopping_ = false;
  int32_t replay_compute_left_ = 0;  ///< saved tensors the discarded replay still regenerates
  int32_t current_region_ = -1;      ///< the innermost open non-reentrant region, or -1
  int32_t replay_depth_ = 0;         ///< non-reentrant regions opened inside the discarded replay
};

}  // namespace zfetch::sim
