// The forward of one process: module hooks (pre- and post-forward, the backward installers)
// and the forward programs of the scenario, and ZenFlow's layout at each hook (semantics 2.3,
// 2.4, 2.7, 6).
#include <fmt/format.h>

#include <algorithm>

#include "model/draw.h"
#include "sim/process.h"

namespace zfetch::sim {

using model::Op;
using trace::EventKind;

bool Process::condition_holds(const model::Condition& when) const {
  auto in = [](const std::vector<int64_t>& values, int64_t v) {
    return values.empty() || std::find(values.begin(), values.end(), v) != values.end();
  };
  using Phase = model::Condition::Phase;
  if (when.phase == Phase::Train && (eval_ || generating_)) {
    return false;
  }
  if (when.phase == Phase::Eval && (!eval_ || generating_)) {
    return false;
  }
  if (when.phase == Phase::Generate && !generating_) {
    return false;
  }
  return in(when.steps, emitter_.context.step) && in(when.micro_steps, micro_in_step_) &&
         in(when.ranks, emitter_.context.rank) && in(when.engines, emitter_.context.engine) &&
         in(when.forwards, forward_index_) &&
         model::draw_picks(when.draw, {emitter_.context.step, micro_in_step_, forward_index_},
                           !eval_);
}

ModuleIndex Process::stack_top() const {
  return fwd_stack_.empty() ? kForeign : fwd_stack_.back();
}

bool Process::call_module(ModuleIndex m, bool input_rg) {
  if (!modules_.hooked[m] || hookless_depth_ > 0) {
    return call_hookless(m, input_rg);
  }
  const bool own_hooks_only = own_hooks_only_;
  own_hooks_only_ = false;
  const bool is_root = m == 0;
  if (is_root) {
    // Engine prologue, then _start_of_forward_hook (2.3, 10.17), which unwrapping for
    // generation does not remove. The prologue is a forward pre-hook on the root, not part of
    // engine.forward: a direct call of the root (generate, once per token) sets _in_forward too.
    in_forward_ = true;
    micro_in_step_ = engine_micro_steps_ % scenario_.config.gradient_accumulation_steps;
    // Called through the engine, reset_step runs inside the engine's forward (a pass of its
    // phase); a direct call of the model (generate) runs it in _start_of_forward_hook before any
    // module's hooks: outside every pass, as a recording of real DeepSpeed labels it.
    const trace::Phase phase = emitter_.context.phase;
    if (!through_engine_) {
      emitter_.context.phase = trace::Phase::None;
    }
    coordinator_->reset_step();
    emitter_.context.phase = phase;
    ++emitter_.stats.passes;
  }
  if (!modules_.hooked[m] || hooks_removed_) {
    const bool rg = call_hookless(m, input_rg);
    in_forward_ = in_forward_ && !is_root;
    return rg;
  }
  // pre-forward (2.4)
  emitter_.emit(EventKind::ModulePre, m, model::kNone, coordinator_->step_id());
  fwd_stack_.push_back(m);
  coordinator_->prologue_and_record(m);
  coordinator_->fetch(m, true, in_graph_task_);
  zenflow_transpose(m, true);
  // post-backward installer: counter reset, one PostBackward node per input needing grad.
  // setup_context counts the input even when the node is discarded (a non-reentrant replay),
  // so the original graph's PostBackward node still brings the counter to 0 (seen on DeepSpeed).
  modules_.grads_remaining[m] = input_rg ? 1 : 0;
  if (grad_enabled_ && input_rg) {
    graph_.add_post_backward(m);
  }
  returned_[m].clear();
  bool rg = own_compute(m, input_rg);
  if (!graph_.stopping()) {
    // `hooks: own`: the forward reads the children's params without calling them, so no hook
    // below this module fires.
    hookless_depth_ += own_hooks_only ? 1 : 0;
    // The program's `input: forward_input` is the module's input, before its own computation.
    rg = scenario_.modules[m].has_forward ? run_scope(m, scenario_.modules[m].forward, input_rg, rg)
                                          : run_default_forward(m, rg);
    hookless_depth_ -= own_hooks_only ? 1 : 0;
  }
  if (is_root) {
    in_forward_ = false;  // engine epilogue runs before the root's post-forward (10.17)
  }
  if (graph_.stopping()) {
    return rg;  // unwinding an early-stopped replay: no post-forward hooks (2.7)
  }
  // post-forward (2.4)
  fwd_stack_.pop_back();
  handle_returns(m);
  zenflow_transpose(m, false);
  emitter_.emit(EventKind::ModulePost, m, model::kNone, coordinator_->step_id());
  coordinator_->release(m, true);
  // pre-backward installer: one PreBackward node per differentiable output, and one per
  // trainable param the forward returns (DeepSpeed wraps every tensor of the output that
  // requires grad, a returned Parameter too; seen on real DeepSpeed, ext_param_return).
  if (grad_enabled_) {
    if (rg) {
      for (int64_t k = 0; k < scenario_.modules[m].outputs; ++k) {
        graph_.add_pre_backward(m);
      }
      if (modules_.leaf[m] && !input_rg) {
        graph_.add_leaf_hook(m);
      }
    }
    for (ParamIndex p : returned_[m]) {
      if (!params_.frozen[p]) {
        // The post-forward hook runs before the pre-backward installer: a returned param that
        // m's release partitioned is wrapped with its data empty, and the loss is computed
        // from that empty tensor (seen on real DeepSpeed, campaign 4242's fuzz-4242-148).
        const bool emptied = params_.status[p] == Status::NotAvailable && graph_.used(p);
        graph_.add_pre_backward(m, emptied ? p : model::kNone);
        // The wrapped param flows on to whoever consumes it: its gradient comes back through
        // this node, so the node is a use of the param (docs/backward-order.md 7a).
        graph_.add_use(p);
      }
    }
  }
  return rg;
}

bool Process::call_hookless(ModuleIndex m, bool input_rg) {
  // [I] semantics 9.2 and 5.7 (a): a module with no hooks (below a z3 leaf) reads its own params
  // through its own parameter dict, so the getter sees them with `m` as the owner; under the
  // fix, "own module" is read narrowly (owner == stack top), so they register on the leaf.
  bool rg = input_rg;
  for (ParamIndex p : scenario_.modules[m].params) {
    model::Op read;
    read.kind = Op::Kind::Access;
    read.param = p;
    read.access = model::AccessKind::Data;
    rg = access(m, read, rg);
  }
  if (scenario_.modules[m].has_forward) {
    return run_scope(m, scenario_.modules[m].forward, input_rg, rg);
  }
  for (ModuleIndex child : scenario_.modules[m].children) {
    rg = call_hookless(child, rg);
  }
  return rg;
}

bool Process::own_compute(ModuleIndex m, bool rg) {
  if (modules_.own_params[m].empty()) {
    return rg;
  }
  check_compute_layout(m);
  emitter_.emit(EventKind::Compute, m);
  bool uses_trainable = false;
  for (ParamIndex p : modules_.own_params[m]) {
    uses_trainable = uses_trainable || !params_.frozen[p];
  }
  // An op records a graph node, and saves tensors, only when an input requires grad: a frozen
  // module fed without grad leaves nothing for a checkpoint region to regenerate (PyTorch; seen
  // on real DeepSpeed, ac_lifecycle-no_grad_checkpoint_input_direct_backward).
  if (grad_enabled_ && (rg || uses_trainable)) {
    graph_.add_compute(m, rg);
    for (ParamIndex p : modules_.own_params[m]) {
      if (!params_.frozen[p]) {
        graph_.add_use(p);
      }
    }
    return true;
  }
  return false;
}

bool Process::run_default_forward(ModuleIndex m, bool rg) {
  for (ModuleIndex child : scenario_.modules[m].children) {
    rg = call_module(child, rg) || rg;
    if (graph_.stopping()) {
      break;
    }
  }
  return rg;
}

bool Process::run_scope(ModuleIndex m, const std::vector<Op>& ops, bool input_rg, bool rg) {
  const size_t begin = call_outputs_.size();
  rg = run_body(m, ops, rg, Scope{input_rg, begin});
  call_outputs_.resize(begin);
  return rg;
}

bool Process::run_call(const Op& op, bool rg, const Scope& scope) {
  // What the callee is fed decides whether its input requires grad, and so whether it gets a
  // post-backward node (docs/backward-order.md 6).
  bool input_rg = rg;
  switch (op.input) {
  case model::CallInput::Running:
    break;
  case model::CallInput::NoGrad:
    input_rg = false;
    break;
  case model::CallInput::ForwardInput:
    input_rg = scope.input_rg;
    break;
  case model::CallInput::OutputOf: {
    // The latest call of that module in this scope; one skipped by its `when` leaves the input
    // of the scope (docs/scenario-format.md).
    input_rg = scope.input_rg;
    for (size_t i = call_outputs_.size(); i-- > scope.outputs_begin;) {
      if (call_outputs_[i].first == op.input_from) {
        input_rg = call_outputs_[i].second;
        break;
      }
    }
    break;
  }
  }
  bool output_rg = false;
  if (op.hooks == model::CallHooks::None && hookless_depth_ == 0) {
    output_rg = call_forward_only(op.callee, input_rg);
  } else {
    own_hooks_only_ = op.hooks == model::CallHooks::Own;
    output_rg = call_module(op.callee, input_rg);
    own_hooks_only_ = false;
  }
  // `output: leaf`: the model detaches the output and makes it require grad; the callee's own
  // backward nodes are what its forward built (none for a frozen module fed no grad).
  output_rg = output_rg || op.output_leaf;
  if (op.output_read) {
    auto entry = std::find_if(
        call_outputs_.begin() + static_cast<std::ptrdiff_t>(scope.outputs_begin),
        call_outputs_.end(), [&](const auto& output) { return output.first == op.callee; });
    if (entry == call_outputs_.end()) {
      call_outputs_.emplace_back(op.callee, output_rg);
    } else {
      entry->second = output_rg;
    }
  }
  // The running value combines the call's output with what came before: `x = child(x)`, or
  // `x = x + child(other)` for another input.
  return output_rg || rg;
}

bool Process::run_body(ModuleIndex m, const std::vector<Op>& ops, bool rg, const Scope& scope) {
  for (const Op& op : ops) {
    if (graph_.stopping()) {
      return rg;
    }
    if (!condition_holds(op.when)) {
      continue;
    }
    switch (op.kind) {
    case Op::Kind::Call:
      rg = run_call(op, rg, scope);
      break;
    case Op::Kind::Access:
      rg = access(m, op, rg);
      break;
    case Op::Kind::Return:
      returned_[m].push_back(params_.canonical[op.param]);
      rg = rg || (grad_enabled_ && !params_.frozen[op.param]);
      break;
    case Op::Kind::Gathered:
      rg = run_gathered(m, op, rg, scope);
      break;
    case Op::Kind::Repeat:
      for (int64_t k = 0; k < op.count && !graph_.stopping(); ++k) {
        rg = run_body(m, op.body, rg, scope);
      }
      break;
    case Op::Kind::Checkpoint:
      if (!grad_enabled_) {
        rg = run_scope(m, op.body, rg, rg);
      } else if (op.reentrant) {
        // [I] semantics 2.7 (reentrant): the region runs under no_grad; one CheckpointFunction
        // node stands for it, and only if an input requires grad.
        grad_enabled_ = false;
        run_scope(m, op.body, rg, rg);
        grad_enabled_ = true;
        // CheckpointFunction saves its inputs once its no_grad forward returns; inside a
        // non-reentrant region those saved tensors are the region's too, so the node's backward
        // first recomputes that region, whose replay stops once they are regenerated (seen on
        // real DeepSpeed, scenarios/validation/v09_nested_checkpoints).
        if (rg) {
          graph_.add_reentrant_region(&op.body, m);
        }
      } else {
        const int32_t enclosing = graph_.open_region(&op.body, m, rg);
        rg = run_scope(m, op.body, rg, rg);
        graph_.close_region(enclosing);
      }
      break;
    }
  }
  return rg;
}

void Process::zenflow_transpose(ModuleIndex m, bool to_compute) {
  if (scenario_.zenflow) {
    zenflow_.transpose(m, coordinator_->param_list(m), to_compute);
  }
}

void Process::check_compute_layout(ModuleIndex m) {
  const std::optional<ParamIndex> p = zenflow_.param_in_storage_layout(m);
  if (p) {
    raise(OutcomeKind::Error,
          fmt::format("ZenFlow layout defect: module '{}' computes with {} in storage "
                      "(transposed) layout",
                      scenario_.modules[m].qualified_name, scenario_.params[*p].qualified_name),
          "Two consumers of the parameter were active at once and each pre-forward hook "
          "transposed it, so the inner module sees the storage layout. PR #8875's hooks "
          "transpose only for the sole consumer: run with --discovery residency-independent.",
          m, coordinator_->step_id() - 1);  // the module's own step: its fetch came first
  }
}

}  // namespace zfetch::sim
