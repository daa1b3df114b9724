// The autograd graph of one training forward: its nodes, checkpoint regions and the early stop
// of a non-reentrant replay.
#include "sim/autograd_graph.h"

namespace zfetch::sim {

void AutogradGraph::reserve(size_t modules, size_t params) {
  nodes_.reserve(4 * modules + 16);
  regions_.reserve(16);
  accumulated_.reserve(2 * params + 16);
  use_task_.assign(params, 0);
  use_entry_.assign(params, 0);
}

void AutogradGraph::clear() {
  nodes_.clear();
  regions_.clear();
  accumulated_.clear();
  ++task_;
}

void AutogradGraph::truncate(size_t begin) {
  for (size_t i = begin; i < nodes_.size(); ++i) {
    if (nodes_[i].accumulate_count > 0) {
      accumulated_.resize(nodes_[i].accumulate_begin);
      break;
    }
  }
  nodes_.resize(begin);
}

void AutogradGraph::add_post_backward(ModuleIndex m) {
  if (recording_) {
    nodes_.push_back({Node::Kind::PostBackward, m, -1});
  }
}

void AutogradGraph::add_pre_backward(ModuleIndex m, ParamIndex emptied_return) {
  if (recording_) {
    Node node{Node::Kind::PreBackward, m, -1};
    node.emptied_return = emptied_return;
    nodes_.push_back(node);
  }
}

void AutogradGraph::count_saved_tensor() {
  if (current_region_ >= 0) {
    ++regions_[static_cast<size_t>(current_region_)].compute_nodes;
  }
}

void AutogradGraph::count_regenerated() {
  // Only the replayed frame's own saved tensors count: inside a region opened by the replay,
  // ops save to that region's new frame (torch.utils.checkpoint, _checkpoint_hook).
  if (replay_depth_ > 0) {
    return;
  }
  if (replay_compute_left_ > 0 && --replay_compute_left_ == 0) {
    stopping_ = true;  // every saved tensor is regenerated: torch stops the replay here
  }
}

void AutogradGraph::add_compute(ModuleIndex m, bool input_rg) {
  if (!recording_) {
    count_regenerated();
    return;
  }
  Node node{Node::Kind::Compute, m, current_region_};
  node.input_rg = input_rg;
  nodes_.push_back(node);
  count_saved_tensor();
}

void AutogradGraph::add_leaf_hook(ModuleIndex m) {
  if (recording_) {
    nodes_.push_back({Node::Kind::LeafHook, m, -1});
  }
}

void AutogradGraph::add_reentrant_region(const std::vector<model::Op>* body, ModuleIndex m) {
  if (!recording_) {
    count_regenerated();
    return;
  }
  regions_.push_back({body, m, true, 0, false, true, current_region_});
  nodes_.push_back({Node::Kind::Checkpoint, m, static_cast<int32_t>(regions_.size() - 1)});
  count_saved_tensor();
}

void AutogradGraph::add_data_read(ModuleIndex reader) {
  if (recording_) {
    nodes_.push_back({Node::Kind::DataRead, reader, -1});
  }
}

void AutogradGraph::add_use(ParamIndex p) {
  if (!recording_ || nodes_.empty()) {
    return;
  }
  const auto i = static_cast<size_t>(p);
  if (use_task_[i] == task_) {
    ++accumulated_[use_entry_[i]].uses;
    return;
  }
  use_task_[i] = task_;
  use_entry_[i] = static_cast<uint32_t>(accumulated_.size());
  Node& node = nodes_.back();
  if (node.accumulate_count == 0) {
    node.accumulate_begin = static_cast<uint32_t>(accumulated_.size());
  }
  accumulated_.push_back({p, 1});
  ++node.accumulate_count;
}

int32_t AutogradGraph::open_region(const std::vector<model::Op>* body, ModuleIndex m,
                                   bool input_rg) {
  const int32_t enclosing = current_region_;
  // torch's non-reentrant checkpoint first saves its inputs (_NoopSaveInputs), under the saved-
  // tensor hooks of the region it runs in: one saved tensor of the enclosing region.
  if (!recording_) {
    count_regenerated();
    ++replay_depth_;
    return enclosing;
  }
  count_saved_tensor();
  regions_.push_back({body, m, false, 0, false, input_rg, enclosing});
  current_region_ = static_cast<int32_t>(regions_.size() - 1);
  return enclosing;
}

void AutogradGraph::close_region(int32_t enclosing) {
  if (!recording_) {
    --replay_depth_;
    return;
  }
  current_region_ = enclosing;
}

void AutogradGraph::begin_discarded_replay(int32_t region) {
  recording_ = false;
  replay_compute_left_ = regions_[static_cast<size_t>(region)].compute_nodes;
}

void AutogradGraph::end_discarded_replay() {
  recording_ = true;
  stopping_ = false;
  replay_compute_left_ = 0;
}

}  // namespace zfetch::sim
