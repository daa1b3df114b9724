// The backward of one process: autograd's node order, the backward hooks, activation-checkpoint
// replay (semantics 2.5-2.8, docs/backward-order.md).
#include "sim/process.h"

namespace zfetch::sim {

using trace::EventKind;
using trace::Phase;

void Process::run_backward(size_t begin) {
  // [I] semantics 2.6: autograd runs the ready node with the highest sequence number first; on one
  // device every node's consumers are newer than it, so that is reverse creation order
  // (docs/backward-order.md).
  for (size_t i = graph_.size(); i-- > begin;) {
    const AutogradGraph::Node node = graph_.node(i);
    switch (node.kind) {
    case AutogradGraph::Node::Kind::PreBackward:
      pre_backward(node.module);
      break;
    case AutogradGraph::Node::Kind::PostBackward:
      if (--modules_.grads_remaining[node.module] == 0) {
        post_backward(node.module);
      }
      break;
    case AutogradGraph::Node::Kind::Compute:
      if (node.region >= 0 && !graph_.region(node.region).replayed) {
        unpack_region(node.region);  // the first unpack of a saved tensor of the region
      }
      break;
    case AutogradGraph::Node::Kind::Checkpoint:
      unpack_region(node.region);  // CheckpointFunction.backward
      break;
    }
  }
}

void Process::pre_backward(ModuleIndex m) {
  emitter_.context.phase = Phase::Bwd;
  emitter_.emit(EventKind::BackwardPre, m, model::kNone, backward_coordinator_->step_id());
  backward_coordinator_->prologue_and_record(m);
  backward_coordinator_->fetch(m, false, in_graph_task_);
  zenflow_transpose(m, true);
  if (!modules_.own_params[m].empty()) {
    check_compute_layout(m);
    emitter_.emit(EventKind::Compute, m);
  }
}

void Process::post_backward(ModuleIndex m) {
  emitter_.context.phase = Phase::Bwd;
  emitter_.emit(EventKind::BackwardPost, m, model::kNone, backward_coordinator_->step_id());
  zenflow_transpose(m, false);
  backward_coordinator_->release(m, false);
}

void Process::unpack_region(int32_t region) {
  // A region's inputs are saved tensors of the region it was created in: unpacking them (the
  // recompute's first step) recomputes that one first, if it was not yet, and so on outwards, so
  // the outermost region not yet recomputed runs first (docs/backward-order.md, section 4).
  const int32_t enclosing = graph_.region(region).enclosing;
  if (enclosing >= 0 && !graph_.region(enclosing).replayed) {
    unpack_region(enclosing);
  }
  replay(region);
}

void Process::replay(int32_t region_index) {
  AutogradGraph::Region& region = graph_.region(region_index);
  region.replayed = true;
  // The region's forward runs again with grad enabled inside the backward graph task, with
  // _in_forward off: recompute fetches, no discovery (2.7, 2.12).
  const Phase saved_phase = emitter_.context.phase;
  emitter_.context.phase = Phase::Recompute;
  grad_enabled_ = true;
  if (region.reentrant) {
    const size_t begin = graph_.size();
    run_body(region.module, *region.body, true);
    emitter_.context.phase = Phase::Bwd;
    run_backward(begin);  // the nested backward over the replayed graph
    graph_.truncate(begin);
  } else {
    // [I] semantics 2.7 (non-reentrant), confirmed on DeepSpeed: the replay's own nodes are
    // discarded; torch stops it once every saved tensor is back (early stop).
    // The recompute runs on the original inputs, so its ops save exactly what the forward's did.
    graph_.begin_discarded_replay(region_index);
    run_body(region.module, *region.body, region.input_rg);
    graph_.end_discarded_replay();
  }
  emitter_.context.phase = saved_phase;
}

}  // namespace zfetch::sim
