// The backward of one process: autograd's node order, the backward hooks, activation-checkpoint
// replay (semantics 2.5-2.8, docs/backward-order.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/accumulate_grad.h"
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
      if (node.emptied_return != model::kNone) {
        emptied_return_error(node);
      }
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
      if (modules_.leaf[node.module] && node.input_rg) {
        leaf_module_backward(node.module);
      }
      break;
    case AutogradGraph::Node::Kind::LeafHook:
      leaf_module_backward(node.module);
      break;
    case AutogradGraph::Node::Kind::Checkpoint:
      unpack_region(node.region);  // CheckpointFunction.backward
      break;
    case AutogradGraph::Node::Kind::DataRead:
      break;
    }
    // AccumulateGrad has the highest priority: it runs as soon as it is ready. Within one node
    // the params' gradients come back through the op's inputs newest first (a compute with
    // p1 then p2 sums their terms in that order), so the last param used is accumulated first
    // (seen on real DeepSpeed, campaign 4242's fuzz-4242-47).
    const std::span<const AutogradGraph::Accumulation> ready = graph_.accumulated(node);
    for (auto it = ready.rbegin(); it != ready.rend(); ++it) {
      accumulate_grad(node, *it);
    }
  }
}

void Process::emptied_return_error(const AutogradGraph::Node& node) {
  // torch's validate_outputs: the gradient PreBackwardFunctionForModule.backward hands on has the
  // shape of the tensor it wrapped (empty), and the param's AccumulateGrad, made at its first use
  // in this graph, expects the full shape.
  const ParamIndex p = node.emptied_return;
  const model::ParamSpec& param = scenario_.params[p];
  const std::string& owner = scenario_.modules[node.module].qualified_name;
  raise(OutcomeKind::Error,
        fmt::format("Function PreBackwardFunctionForModuleBackward returned an invalid gradient at "
                    "index 0 - got [{}] but expected shape compatible with [{}]",
                    params_.fast_sharded[p] ? 1 : 0, fmt::join(param.shape, ", ")),
        fmt::format("{} returns {}, and its post-forward hook releases the param before the "
                    "pre-backward hook wraps the output: DeepSpeed's _post_forward_module_hook "
                    "(which partitions the module's params) is registered before "
                    "_pre_backward_module_hook. The output is the param with its data emptied, so "
                    "the loss, and the gradient that comes back to the wrapper, have shape [0]. "
                    "Return a tensor computed from the parameter instead, or make the parameter "
                    "persistent (stage3_param_persistence_threshold).",
                    owner.empty() ? std::string("The root module") : "Module '" + owner + "'",
                    param.qualified_name),
        model::kNone);
}

void Process::leaf_module_backward(ModuleIndex m) {
  // reduce_leaf_module_grads: `if param.grad is None: param.grad = torch.zeros_like(param)`
  // for every trainable param of the leaf, then it reduces them. Called before the leaf's
  // pre-backward (its input does not require grad), a partitioned param's zeros are empty.
  for (ParamIndex p : modules_.own_params[m]) {
    const ParamIndex c = params_.canonical[p];
    if (params_.frozen[c] || params_.has_grad[c]) {
      continue;
    }
    params_.has_grad[c] = 1;
    if (params_.status[c] == Status::NotAvailable) {
      params_.emptied_grad_numel[c] = static_cast<int8_t>(params_.fast_sharded[c] ? 1 : 0);
    }
  }
  grad_reduction_.on_leaf_module_backward(m, backward_task_region_);
}

void Process::accumulate_grad(const AutogradGraph::Node& node,
                              AutogradGraph::Accumulation accumulation) {
  const ParamIndex p = accumulation.param;
  if (params_.emptied_grad_numel[p] >= 0) {
    // The gradient is added in place to the one the leaf's hook made from the emptied data:
    // `variable_grad += new_grad` (torch AccumulateGrad::accumulateGrad).
    const std::string error =
        grad_into_buffer_error(scenario_.params[p].shape, params_.emptied_grad_numel[p]);
    if (!error.empty()) {
      raise(OutcomeKind::Error, error,
            fmt::format(
                "{} belongs to z3 leaf module '{}', whose input does not require grad, so torch "
                "calls the leaf's full backward hook (DeepSpeed's reduce_leaf_module_grads) "
                "from its outputs' backward, before the leaf's pre-backward fetches the param. "
                "The hook sets the missing gradient to torch.zeros_like(param) while the param "
                "is partitioned ({}), and torch's AccumulateGrad then adds the real gradient "
                "into that tensor in place. Feed the leaf an input that requires grad (for "
                "example model.enable_input_require_grads()), keep its params persistent, or "
                "do not make it a z3 leaf.",
                scenario_.params[p].qualified_name,
                scenario_.modules[scenario_.params[p].owner].qualified_name,
                params_.emptied_grad_numel[p] == 1 ? "fast sharding's 1-element buffer"
                                                   : "its data is empty"),
            model::kNone);
    }
    // An in-place add that fits keeps the short tensor (a [1] gradient into [0] stays [0]).
  }
  // The gradient has the param's full shape; storing it into a partitioned param's empty data
  // (shape [0]) can fail, or store a short copy (sim/accumulate_grad.h).
  if (!params_.has_grad[p] && params_.status[p] != Status::Available) {
    const int64_t data_numel = params_.fast_sharded[p] ? 1 : 0;
    const EmptyParamAccumulation stored =
        accumulate_into_empty(scenario_.params[p].shape, accumulation.uses,
                              scenario_.params[p].dtype != model::DType::Fp32, data_numel);
    if (stored.copied && stored.error.empty() && data_numel != params_.numel[p]) {
      params_.emptied_grad_numel[p] = static_cast<int8_t>(data_numel);
    }
    const std::string& error = stored.error;
    if (!error.empty()) {
      const std::string& name = scenario_.params[p].qualified_name;
      const bool read = node.kind == AutogradGraph::Node::Kind::DataRead;
      raise(OutcomeKind::Error, error,
            fmt::format(
                "torch accumulates {}'s gradient once the backward of every op that used it has "
                "run; the last of them to run is {} in module '{}''s forward, and by then {} is "
                "partitioned again (its data is empty): the module does not fetch it for its "
                "backward, and torch's copy of the gradient into the empty parameter fails. A "
                "data read registers the param as the reader's external parameter only when the "
                "getter discovers it, and the old getter (resident-skip) discovers only "
                "NOT_AVAILABLE params: this one was AVAILABLE at the read, and was partitioned "
                "afterwards (its owner's release, a partition-all or empty_partition_cache). PR "
                "#8875's getter registers every access (--discovery residency-independent); or "
                "register it with deepspeed.zero.register_external_parameter.",
                name, read ? "the read of its data" : "the computation with it",
                scenario_.modules[node.module].qualified_name, name),
            model::kNone);
    }
  }
  params_.has_grad[p] = 1;
  grad_reduction_.on_accumulated(p, backward_task_region_);
}

std::string Process::autograd_execution(int32_t task_region) const {
  if (task_region < 0) {
    return "engine.backward's own autograd execution";
  }
  const std::string& runner = scenario_.modules[graph_.region(task_region).module].qualified_name;
  return fmt::format("the nested backward of the reentrant checkpoint run by {}",
                     runner.empty() ? std::string("the root module") : "'" + runner + "'");
}

void Process::reduction_epilogue() {
  // __reduce_and_partition_ipg_grads first checks every bucketed gradient's size, then that no
  // param is in the bucket twice.
  for (ParamIndex p : grad_reduction_.bucket()) {
    const int64_t stored = params_.emptied_grad_numel[p];
    if (stored < 0 || stored == params_.numel[p]) {
      continue;
    }
    const std::string& name = scenario_.params[p].qualified_name;
    raise(OutcomeKind::Error,
          fmt::format("{} != {} Cannot reduce scatter gradients whose size is not same as the "
                      "params",
                      stored, params_.numel[p]),
          fmt::format("{}'s gradient was stored while the param was partitioned (its data "
                      "empty): torch's AccumulateGrad copied the one-element gradient into a "
                      "tensor of the data's shape, which broadcasts without an error, so the "
                      "param's grad has {} elements, and the reduction at the end of "
                      "engine.backward refuses it. The last op to use {} ran its backward after "
                      "the param was released (a data read whose module did not fetch it for its "
                      "backward, or a z3 leaf's backward hook that ran before the leaf's fetch). "
                      "Register the param as the reading module's external parameter "
                      "(--discovery residency-independent registers every access), or keep it "
                      "persistent.",
                      name, stored, name),
          model::kNone);
  }
  const std::optional<GradReduction::Duplicate>& twice = grad_reduction_.duplicate();
  if (!twice) {
    return;
  }
  // __reduce_and_partition_ipg_grads: `assert len(set(p.ds_id for p in params_in_bucket)) ==
  // len(params_in_bucket)`, a bare assert: DeepSpeed's message is empty (seen on real DeepSpeed,
  // scenarios/fidelity/f1*).
  const std::string head = fmt::format(
      "AssertionError in the stage-3 optimizer's __reduce_and_partition_ipg_grads, at the "
      "gradient reduction that ends engine.backward: the reduce bucket holds {} twice. ",
      scenario_.params[twice->param].qualified_name);
  if (twice->leaf) {
    raise(OutcomeKind::Error, "",
          head + fmt::format("It is a z3 leaf module's param: the leaf module's backward hook "
                             "(reduce_leaf_module_grads) adds all of its params to the bucket at "
                             "the backward of every call, here in {} and in {}. Call a z3 leaf "
                             "module once per forward.",
                             autograd_execution(twice->first_task_region),
                             autograd_execution(twice->second_task_region)),
          model::kNone);
  }
  raise(OutcomeKind::Error, "",
        head + fmt::format(
                   "Its gradient was accumulated in two autograd executions of one backward, {} "
                   "and {}, and each accumulation ran DeepSpeed's gradient hook, which adds the "
                   "param to the bucket. A reentrant checkpoint region runs a backward of its "
                   "own, so a weight used inside one and again outside it (or in two of them) is "
                   "reduced twice. Use a non-reentrant checkpoint (use_reentrant=False), or do not "
                   "use the weight on both sides of the region.",
                   autograd_execution(twice->first_task_region),
                   autograd_execution(twice->second_task_region)),
        model::kNone);
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
    graph_.begin_nested_task();
    run_scope(region.module, *region.body, true, true);
    emitter_.context.phase = Phase::Bwd;
    const int32_t outer_task = backward_task_region_;
    backward_task_region_ = region_index;
    run_backward(begin);  // the nested backward over the replayed graph: a graph task of its own
    backward_task_region_ = outer_task;
    graph_.truncate(begin);
  } else {
    // [I] semantics 2.7 (non-reentrant), confirmed on DeepSpeed: the replay's own nodes are
    // discarded; torch stops it once every saved tensor is back (early stop).
    // The recompute runs on the original inputs, so its ops save exactly what the forward's did.
    graph_.begin_discarded_replay(region_index);
    run_scope(region.module, *region.body, region.input_rg, region.input_rg);
    graph_.end_discarded_replay();
  }
  emitter_.context.phase = saved_phase;
}

}  // namespace zfetch::sim
