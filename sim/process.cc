// One simulated process: engines, module hooks, forward programs, autograd order, activation-
// checkpoint replay, the parameter getter, optimizer and checkpoint events.
#include "sim/process.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "model/leaves.h"
#include "model/persistence.h"

namespace zfetch::sim {
namespace {

using model::Op;
using trace::EventKind;
using trace::Phase;

}  // namespace

Process::Process(const model::Scenario& scenario, const Options& options, int32_t rank,
                 trace::EventSink& sink, CollectiveLog& collectives, uint64_t first_seq)
    : scenario_(scenario),
      config_(scenario.config.zero),
      options_(options),
      collectives_(collectives),
      emitter_(scenario, params_, modules_, sink, first_seq) {
  emitter_.context.rank = rank;
  const size_t np = scenario.params.size();
  const size_t nm = scenario.modules.size();
  const auto world = scenario.world_size;

  params_.ds_id.assign(np, -1);
  params_.status.assign(np, Status::NotAvailable);
  params_.persist.assign(np, 0);
  params_.is_external.assign(np, 0);
  params_.consumers.resize(np);
  for (IdSet& s : params_.consumers) {
    s.reserve(4);
  }
  params_.attributed_owner.assign(np, -1);
  params_.inflight_group.assign(np, -1);
  params_.numel.resize(np);
  params_.partition_numel.resize(np);
  params_.bytes.resize(np);
  params_.frozen.resize(np);
  params_.multi_dim.resize(np);
  params_.compute_layout.assign(np, 0);
  params_.swapped_in.assign(np, 0);
  params_.fast_sharded.assign(np, 0);
  params_.canonical.resize(np);
  for (size_t i = 0; i < np; ++i) {
    const model::ParamSpec& spec = scenario.params[i];
    const auto p = static_cast<ParamIndex>(i);
    params_.canonical[p] = model::canonical(scenario, p);
    params_.numel[p] = spec.numel;
    // Partition arithmetic with padding to the world size (1.3).
    params_.partition_numel[p] = (spec.numel + (world - spec.numel % world) % world) / world;
    params_.bytes[p] = spec.numel * model::dtype_bytes(spec.dtype);
    params_.frozen[p] = spec.frozen ? 1 : 0;
    params_.multi_dim[p] = spec.shape.size() != 1 ? 1 : 0;
  }
  params_.by_id = model::parameter_order(scenario);

  // Hooks go to every module reached through children() from the root, but not below a z3
  // leaf (2.1). Param lists use canonical params, deduplicated (tied weights are one object).
  const std::vector<uint8_t> leaves = model::z3_leaf_modules(scenario);
  modules_.ds_id.assign(nm, -1);
  modules_.hooked.assign(nm, 0);
  modules_.leaf.assign(nm, 0);
  modules_.own_params.resize(nm);
  modules_.direct_params.resize(nm);
  modules_.recursive_params.resize(nm);
  modules_.externals.resize(nm);
  modules_.recompute.resize(nm);
  modules_.grads_remaining.assign(nm, 0);
  returned_.resize(nm);
  for (size_t i = 0; i < nm; ++i) {
    const auto m = static_cast<ModuleIndex>(i);
    const model::ModuleSpec& spec = scenario.modules[m];
    const bool parent_hooked = spec.parent == model::kNone ||
                               (modules_.hooked[spec.parent] && !modules_.leaf[spec.parent]);
    modules_.hooked[m] = parent_hooked ? 1 : 0;
    modules_.leaf[m] = leaves[m];
    for (ParamIndex p : spec.params) {
      const ParamIndex c = params_.canonical[p];
      std::vector<ParamIndex>& direct = modules_.direct_params[m];
      if (std::find(direct.begin(), direct.end(), c) == direct.end()) {
        direct.push_back(c);
      }
    }
  }
  // Recursive lists: modules are in pre-order, so walk backwards and append children's.
  for (size_t i = nm; i-- > 0;) {
    const auto m = static_cast<ModuleIndex>(i);
    std::vector<ParamIndex>& rec = modules_.recursive_params[m];
    rec = modules_.direct_params[m];
    for (ModuleIndex child : scenario.modules[m].children) {
      for (ParamIndex p : modules_.recursive_params[child]) {
        if (std::find(rec.begin(), rec.end(), p) == rec.end()) {
          rec.push_back(p);
        }
      }
    }
  }
  for (size_t i = 0; i < nm; ++i) {
    const auto m = static_cast<ModuleIndex>(i);
    modules_.own_params[m] =
        modules_.leaf[m] ? modules_.recursive_params[m] : modules_.direct_params[m];
    modules_.externals[m].reserve(4);
    modules_.recompute[m].reserve(4);
  }
  nodes_.reserve(4 * nm + 16);
  regions_.reserve(16);
}

RankResult Process::run() {
  RankResult result;
  try {
    run_schedule();
  } catch (Raised& raised) {
    result.raised = std::move(raised);
  }
  result.collectives_before_failure = collectives_.entries().size();
  result.invalidations = invalidations_before_ + (coordinator_ ? coordinator_->invalidations() : 0);
  for (const auto& retired : retired_) {
    result.invalidations += retired->invalidations();
  }
  result.warnings = warnings_;
  if (coordinator_) {
    const auto& w = coordinator_->warnings();
    result.warnings.insert(result.warnings.end(), w.begin(), w.end());
  }
  result.stats = emitter_.stats;
  result.next_seq = emitter_.next_seq();
  return result;
}

void Process::raise(OutcomeKind kind, std::string message, std::string explanation,
                    ModuleIndex module, int32_t trace_step) {
  const int32_t step = trace_step >= 0 ? trace_step : coordinator_ ? coordinator_->step_id() : -1;
  Failure failure =
      failure_at(emitter_.context, step, module, std::move(message), std::move(explanation));
  emitter_.emit(EventKind::Error);
  throw Raised{kind, std::move(failure)};
}

// ---- the schedule ----

void Process::run_schedule() {
  build_engine(true);
  for (const model::ScheduleItem& item : scenario_.schedule) {
    switch (item.kind) {
    case model::ScheduleItem::Kind::Train:
      for (int64_t s = 0; s < item.steps; ++s) {
        const auto& skipped = item.overflow_steps;
        overflow_ = std::find(skipped.begin(), skipped.end(), s) != skipped.end();
        for (int64_t k = 0; k < scenario_.config.gradient_accumulation_steps; ++k) {
          train_micro_step();
        }
      }
      overflow_ = false;
      break;
    case model::ScheduleItem::Kind::Eval:
      for (int64_t s = 0; s < item.steps; ++s) {
        eval_pass();
      }
      break;
    case model::ScheduleItem::Kind::SaveCheckpoint:
      save_checkpoint(item.tag);
      break;
    case model::ScheduleItem::Kind::LoadCheckpoint:
      load_checkpoint(item.tag);
      break;
    case model::ScheduleItem::Kind::Restart:
      emitter_.context.phase = Phase::None;
      emitter_.emit(EventKind::Restart);
      if (!item.reuse_model) {  // a retired coordinator is counted at the end: it lives on
        invalidations_before_ += coordinator_->invalidations();
        for (const std::string& w : coordinator_->warnings()) {
          warnings_.push_back(w);
        }
      }
      ++emitter_.context.engine;
      build_engine(!item.reuse_model);
      break;
    case model::ScheduleItem::Kind::EmptyPartitionCache:
      emitter_.context.phase = Phase::None;
      emitter_.emit(EventKind::EmptyPartitionCache);
      coordinator_->release_and_reset_all();
      break;
    }
  }
}

void Process::build_engine(bool fresh_model) {
  emitter_.context.phase = Phase::None;
  emitter_.context.micro_step = 0;
  engine_micro_steps_ = 0;
  micro_in_step_ = 0;
  if (fresh_model) {
    // A freshly constructed model: new Parameter objects, converted and partitioned (1.1),
    // numbered by the process-global counter, which is never reset (1.7).
    for (ParamIndex p : params_.by_id) {
      params_.ds_id[p] = next_param_id_++;
      params_.status[p] = Status::NotAvailable;
      params_.persist[p] = 0;
      params_.is_external[p] = 0;
      params_.consumers[p].clear();
      params_.attributed_owner[p] = -1;
      params_.inflight_group[p] = -1;
      params_.compute_layout[p] = 0;
      params_.swapped_in[p] = 0;
      params_.fast_sharded[p] = 0;
    }
    for (size_t i = 0; i < scenario_.params.size(); ++i) {
      const auto p = static_cast<ParamIndex>(i);
      params_.ds_id[p] = params_.ds_id[params_.canonical[p]];
    }
    for (auto& e : modules_.externals) {
      e.clear();
    }
    // Earlier engines' roots stay on FWD_MODULE_STACK, but they are other objects now.
    std::replace_if(
        fwd_stack_.begin(), fwd_stack_.end(), [](ModuleIndex) { return true; }, kForeign);
  } else {
    // The new engine's ZeRO-3 optimizer gives every trainable param a gradient hook, gathering it
    // and partitioning it right after (`create_reduce_and_remove_grad_hooks`, snapshot
    // edaa722): a re-used model's trainable params are NOT_AVAILABLE again, persistent or not,
    // outside the coordinator (no event); frozen params keep their status. Seen on real
    // DeepSpeed (tools/recorder corpus, save_load-load_immediate_save).
    for (ParamIndex p : params_.by_id) {
      if (!params_.frozen[p]) {
        params_.status[p] = Status::NotAvailable;
        params_.fast_sharded[p] = 0;  // all_gather, then partition(): shape [0]
      }
    }
  }
  // Module ids: the mutable-default-list counter of _register_deepspeed_module (2.2): the root
  // takes the current value, every child visit increments first.
  for (size_t i = 0; i < scenario_.modules.size(); ++i) {
    const auto m = static_cast<ModuleIndex>(i);
    if (!modules_.hooked[m]) {
      continue;
    }
    modules_.ds_id[m] = m == 0 ? module_counter_ : ++module_counter_;
    modules_.recompute[m].clear();  // reset on (re-)registration
  }
  // Persistence is only ever set to True (1.5).
  const std::vector<bool> persistent = model::select_persistent(scenario_, config_);
  for (size_t i = 0; i < persistent.size(); ++i) {
    if (persistent[i]) {
      params_.persist[i] = 1;
    }
  }
  if (coordinator_ && !fresh_model) {
    retired_.push_back(std::move(coordinator_));  // still bound to this model's backward hooks
  }
  coordinator_ = std::make_unique<Coordinator>(scenario_, params_, modules_, emitter_, collectives_,
                                               history_, options_.discovery);
  if (fresh_model) {
    // The backward-hook classes are created once per module object and capture the engine
    // that created them: a model re-used by a later engine keeps routing its pre/post-backward
    // hooks to this coordinator (2.3, 10.19 [I]).
    backward_coordinator_ = coordinator_.get();
  }
  fwd_stack_.push_back(0);
  emitter_.emit(EventKind::EngineInit, 0);
}

// ---- training, eval, optimizer, checkpoints (2.9-2.11) ----

void Process::train_micro_step() {
  emitter_.context.phase = Phase::Fwd;
  eval_ = false;
  grad_enabled_ = true;
  in_graph_task_ = false;
  nodes_.clear();
  regions_.clear();
  const bool output_rg = call_module(0, scenario_.input_requires_grad);

  emitter_.context.phase = Phase::Bwd;
  if (!output_rg) {
    raise(OutcomeKind::Error,
          "element 0 of tensors does not require grad and does not have a grad_fn",
          "The loss does not depend on any tensor that requires grad: nothing trainable is used "
          "with grad enabled (a reentrant checkpoint whose inputs do not require grad produces "
          "an output without grad; set input_requires_grad if the real input requires grad).");
  }
  in_graph_task_ = true;
  run_backward(0);
  coordinator_->release_backward_leftovers();
  in_graph_task_ = false;
  grad_enabled_ = false;

  // engine.step(): the optimizer runs only at an accumulation boundary (2.11).
  const int64_t gas = scenario_.config.gradient_accumulation_steps;
  const bool boundary = (engine_micro_steps_ + 1) % gas == 0;
  ++engine_micro_steps_;
  if (boundary) {
    optimizer_step();
  }
  emitter_.context.micro_step = static_cast<int32_t>(engine_micro_steps_);
}

void Process::eval_pass() {
  emitter_.context.phase = Phase::Eval;
  eval_ = true;
  grad_enabled_ = false;
  nodes_.clear();
  regions_.clear();
  call_module(0, false);
  eval_ = false;
}

void Process::optimizer_step() {
  emitter_.context.phase = Phase::Optimizer;
  emitter_.emit(EventKind::OptimizerStep);
  ++emitter_.stats.optimizer_steps;
  coordinator_->release_and_reset_all();
  if (overflow_) {
    // fp16 overflow: the step is skipped before _post_step, so persistent params stay
    // partitioned (1.5, 10.21).
    ++emitter_.context.step;
    return;
  }
  // _post_step gathers the persistent params again.
  for (ParamIndex p : params_.by_id) {
    if (params_.persist[p] && params_.status[p] == Status::NotAvailable) {
      coordinator_->gather_sync(p, EventKind::PersistentGather);
    }
  }
  ++emitter_.context.step;
}

void Process::save_checkpoint(const std::string& tag) {
  emitter_.context.phase = Phase::Checkpoint;
  emitter_.emit(EventKind::CheckpointSave);
  coordinator_->release_and_reset_all();  // checkpoint_event_prologue
  for (ParamIndex p : params_.by_id) {    // checkpoint_event_epilogue
    if (params_.persist[p] && params_.status[p] == Status::NotAvailable) {
      coordinator_->gather_sync(p, EventKind::PersistentGather);
    }
  }
  // The module state_dict holds each param's data as it is: a released param's is empty, but a
  // leaf param released by fast sharding still holds its 1-element buffer.
  std::vector<ParamIndex> one_element;
  for (ParamIndex p : params_.by_id) {
    if (params_.fast_sharded[p]) {
      one_element.push_back(p);
    }
  }
  fast_sharded_saves_.emplace_back(tag, std::move(one_element));
}

std::string Process::data_shape(ParamIndex p) const {
  if (params_.status[p] == Status::Available) {
    return fmt::format("torch.Size([{}])", fmt::join(scenario_.params[p].shape, ", "));
  }
  return params_.fast_sharded[p] ? "torch.Size([1])" : "torch.Size([0])";
}

void Process::load_checkpoint(const std::string& tag) {
  emitter_.context.phase = Phase::Checkpoint;
  emitter_.emit(EventKind::CheckpointLoad);
  // load_module_state_dict: torch's load_state_dict compares each saved tensor's shape with the
  // param's data now; fast sharding's [1] against a partitioned param's [0] is a size mismatch
  // (seen on real DeepSpeed, scenarios/validation/v36_granularity_lora_resume).
  for (auto it = fast_sharded_saves_.rbegin(); it != fast_sharded_saves_.rend(); ++it) {
    if (it->first != tag) {
      continue;
    }
    std::vector<std::string> errors;
    for (size_t i = 0; i < scenario_.params.size(); ++i) {  // state_dict order, aliases too
      const ParamIndex p = params_.canonical[i];
      const std::string now = data_shape(p);
      if (std::find(it->second.begin(), it->second.end(), p) != it->second.end() &&
          now != "torch.Size([1])") {
        errors.push_back(
            fmt::format("size mismatch for {}: copying a param with shape "
                        "torch.Size([1]) from checkpoint, the shape in current "
                        "model is {}.",
                        scenario_.params[i].qualified_name, now));
      }
    }
    if (!errors.empty()) {
      const std::string& cls = scenario_.modules[0].class_name;
      raise(OutcomeKind::Error,
            fmt::format("Error(s) in loading state_dict for {}:\n\t{}",
                        cls.empty() ? "Module" : cls, fmt::join(errors, "\n\t")),
            "The checkpoint was saved while z3 leaf params released by fast sharding "
            "(stage3_module_granularity_threshold > 0) held its 1-element buffer, and the module "
            "state_dict saved that buffer: the params of this engine are partitioned (shape [0]). "
            "Save with stage3_module_granularity_threshold 0, or gather the leaf params before "
            "saving (4.8).");
    }
    break;
  }
  // Prologue partitions all; the optimizer's load_state_dict partitions persistent params
  // again (a no-op now); the epilogue gathers them: resident after a load (1.5).
  coordinator_->release_and_reset_all();
  for (ParamIndex p : params_.by_id) {
    if (params_.persist[p] && params_.status[p] == Status::NotAvailable) {
      coordinator_->gather_sync(p, EventKind::PersistentGather);
    }
  }
}

// ---- forward: hooks and programs (2.3, 2.4) ----

bool Process::condition_holds(const model::Condition& when) const {
  auto in = [](const std::vector<int64_t>& values, int64_t v) {
    return values.empty() || std::find(values.begin(), values.end(), v) != values.end();
  };
  if (when.phase == model::Condition::Phase::Train && eval_) {
    return false;
  }
  if (when.phase == model::Condition::Phase::Eval && !eval_) {
    return false;
  }
  return in(when.steps, emitter_.context.step) && in(when.micro_steps, micro_in_step_) &&
         in(when.ranks, emitter_.context.rank) && in(when.engines, emitter_.context.engine);
}

ModuleIndex Process::stack_top() const {
  return fwd_stack_.empty() ? kForeign : fwd_stack_.back();
}

bool Process::call_module(ModuleIndex m, bool input_rg) {
  if (!modules_.hooked[m]) {
    return call_hookless(m, input_rg);
  }
  const bool is_root = m == 0;
  if (is_root) {
    // Engine prologue, then _start_of_forward_hook (2.3, 10.17).
    in_forward_ = true;
    micro_in_step_ = engine_micro_steps_ % scenario_.config.gradient_accumulation_steps;
    coordinator_->reset_step();
    ++emitter_.stats.passes;
  }
  // pre-forward (2.4)
  emitter_.emit(EventKind::ModulePre, m, model::kNone, coordinator_->step_id());
  fwd_stack_.push_back(m);
  coordinator_->prologue_and_record(m);
  coordinator_->fetch(m, true, in_graph_task_);
  zenflow_pre(m);
  // post-backward installer: counter reset, one PostBackward node per input needing grad.
  // setup_context counts the input even when the node is discarded (a non-reentrant replay),
  // so the original graph's PostBackward node still brings the counter to 0 (seen on DeepSpeed).
  modules_.grads_remaining[m] = input_rg ? 1 : 0;
  if (grad_enabled_ && input_rg && record_nodes_) {
    nodes_.push_back({Node::Kind::PostBackward, m, -1});
  }
  returned_[m].clear();
  bool rg = own_compute(m, input_rg);
  if (!stopping_) {
    rg = scenario_.modules[m].has_forward ? run_body(m, scenario_.modules[m].forward, rg)
                                          : run_default_forward(m, rg);
  }
  if (is_root) {
    in_forward_ = false;  // engine epilogue runs before the root's post-forward (10.17)
  }
  if (stopping_) {
    return rg;  // unwinding an early-stopped replay: no post-forward hooks (2.7)
  }
  // post-forward (2.4)
  fwd_stack_.pop_back();
  handle_returns(m);
  zenflow_post(m);
  emitter_.emit(EventKind::ModulePost, m, model::kNone, coordinator_->step_id());
  coordinator_->release(m, true);
  // pre-backward installer: one PreBackward node per differentiable output, and one per
  // trainable param the forward returns (DeepSpeed wraps every tensor of the output that
  // requires grad, a returned Parameter too; seen on real DeepSpeed, ext_param_return).
  if (grad_enabled_ && record_nodes_) {
    if (rg) {
      for (int64_t k = 0; k < scenario_.modules[m].outputs; ++k) {
        nodes_.push_back({Node::Kind::PreBackward, m, -1});
      }
    }
    for (ParamIndex p : returned_[m]) {
      if (!params_.frozen[p]) {
        nodes_.push_back({Node::Kind::PreBackward, m, -1});
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
    return run_body(m, scenario_.modules[m].forward, rg);
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
    if (record_nodes_) {
      nodes_.push_back({Node::Kind::Compute, m, current_region_});
      if (current_region_ >= 0) {
        ++regions_[static_cast<size_t>(current_region_)].compute_nodes;
      }
    } else if (replay_compute_left_ > 0 && --replay_compute_left_ == 0) {
      stopping_ = true;  // every saved tensor is regenerated: torch stops the replay here
    }
    return true;
  }
  return false;
}

bool Process::run_default_forward(ModuleIndex m, bool rg) {
  for (ModuleIndex child : scenario_.modules[m].children) {
    rg = call_module(child, rg) || rg;
    if (stopping_) {
      break;
    }
  }
  return rg;
}

bool Process::run_body(ModuleIndex m, const std::vector<Op>& ops, bool rg) {
  for (const Op& op : ops) {
    if (stopping_) {
      return rg;
    }
    if (!condition_holds(op.when)) {
      continue;
    }
    switch (op.kind) {
    case Op::Kind::Call:
      rg = call_module(op.callee, rg) || rg;
      break;
    case Op::Kind::Access:
      rg = access(m, op, rg);
      break;
    case Op::Kind::Return:
      returned_[m].push_back(params_.canonical[op.param]);
      rg = rg || (grad_enabled_ && !params_.frozen[op.param]);
      break;
    case Op::Kind::Repeat:
      for (int64_t k = 0; k < op.count && !stopping_; ++k) {
        rg = run_body(m, op.body, rg);
      }
      break;
    case Op::Kind::Checkpoint:
      if (!grad_enabled_) {
        rg = run_body(m, op.body, rg);
      } else if (op.reentrant) {
        // [I] semantics 2.7 (reentrant): the region runs under no_grad; one CheckpointFunction
        // node stands for it, and only if an input requires grad.
        grad_enabled_ = false;
        run_body(m, op.body, rg);
        grad_enabled_ = true;
        // CheckpointFunction saves its inputs once its no_grad forward returns; inside a
        // non-reentrant region those saved tensors are the region's too, so the node's backward
        // first recomputes that region, whose replay stops once they are regenerated (seen on
        // real DeepSpeed, scenarios/validation/v09_nested_checkpoints).
        if (rg && record_nodes_) {
          regions_.push_back({&op.body, m, true, 0, false, true, current_region_});
          nodes_.push_back({Node::Kind::Checkpoint, m, static_cast<int32_t>(regions_.size() - 1)});
          if (current_region_ >= 0) {
            ++regions_[static_cast<size_t>(current_region_)].compute_nodes;
          }
        } else if (rg && !record_nodes_ && replay_compute_left_ > 0 &&
                   --replay_compute_left_ == 0) {
          stopping_ = true;
        }
      } else if (record_nodes_) {
        regions_.push_back({&op.body, m, false, 0, false, rg, -1});
        const int32_t saved = current_region_;
        current_region_ = static_cast<int32_t>(regions_.size() - 1);
        rg = run_body(m, op.body, rg);
        current_region_ = saved;
      } else {
        rg = run_body(m, op.body, rg);
      }
      break;
    }
  }
  return rg;
}

// ---- the parameter getter (5.2, 5.6, 5.7) ----

bool Process::access(ModuleIndex context, const Op& op, bool rg) {
  const ParamIndex p = params_.canonical[op.param];
  const ModuleIndex owner = scenario_.params[op.param].owner;
  const Status status = params_.status[p];
  const ModuleIndex top = stack_top();
  emitter_.emit(EventKind::Access, top == kForeign ? model::kNone : top, p, -1, -1, status);
  // Discovery happens only in an eager forward through the engine (2.12, 10.18).
  const bool eager = in_forward_ && top != kForeign;
  bool registered = false;
  if (status == Status::NotAvailable) {
    if (eager) {
      register_external(top, p, status);
      registered = true;
      coordinator_->gather_sync(p, EventKind::GetterGather);
    }
  } else if (options_.discovery == Discovery::ResidencyIndependent && eager && owner != top) {
    // [PR] semantics 5.7: registered whatever the residency; gathered only when NA (above).
    register_external(top, p, status);
    registered = true;
  }
  if (eager && coordinator_->mode() == TraceMode::Record) {
    history_.add(RecordedAccess{top, p, status, registered, emitter_.context});
  }
  if (op.access == model::AccessKind::Data) {
    if (params_.status[p] != Status::Available) {
      raise(
          OutcomeKind::NotAvailable,
          fmt::format("module '{}' computed with {} while it was {} (shape [0])",
                      scenario_.modules[context].qualified_name, scenario_.params[p].qualified_name,
                      params_.status[p] == Status::Inflight ? "INFLIGHT" : "NOT_AVAILABLE"),
          "A data access outside an engine forward (for example in a checkpoint replay, where "
          "_in_forward is off) is never gathered by the getter; the parameter must be fetched "
          "by the module, e.g. registered as its external parameter.",
          context);
    }
    return rg || (grad_enabled_ && !params_.frozen[p]);
  }
  return rg;
}

void Process::register_external(ModuleIndex m, ParamIndex p, Status status_at_access) {
  std::vector<ParamIndex>& ext = modules_.externals[m];
  if (std::find(ext.begin(), ext.end(), p) != ext.end()) {
    return;  // keyed by id(param): idempotent
  }
  ext.push_back(p);
  emitter_.emit(EventKind::RegisterExternal, m, p, -1, -1, status_at_access);
  history_.add(Registration{m, p, emitter_.context, status_at_access,
                            coordinator_->mode() == TraceMode::Complete});
}

void Process::handle_returns(ModuleIndex m) {
  // Dangling returned params (5.3): hand them to the new stack top unless a module on the
  // stack already has them as externals.
  for (ParamIndex p : returned_[m]) {
    bool known = false;
    for (ModuleIndex s : fwd_stack_) {
      if (s != kForeign) {
        const auto& ext = modules_.externals[s];
        known = known || std::find(ext.begin(), ext.end(), p) != ext.end();
      }
    }
    const ModuleIndex top = stack_top();
    if (known || top == kForeign) {
      continue;
    }
    params_.is_external[p] = 1;
    register_external(top, p, params_.status[p]);
    auto& mine = modules_.externals[m];
    mine.erase(std::remove(mine.begin(), mine.end(), p), mine.end());
    if (params_.status[p] == Status::NotAvailable) {
      coordinator_->gather_sync(p, EventKind::GetterGather);
    }
  }
}

// ---- backward: autograd order, checkpoint replay (2.5-2.8) ----

void Process::run_backward(size_t begin) {
  // [I] semantics 2.6: autograd runs the ready node with the highest sequence number first; on one
  // device every node's consumers are newer than it, so that is reverse creation order
  // (docs/backward-order.md).
  for (size_t i = nodes_.size(); i-- > begin;) {
    const Node node = nodes_[i];
    switch (node.kind) {
    case Node::Kind::PreBackward:
      pre_backward(node.module);
      break;
    case Node::Kind::PostBackward:
      if (--modules_.grads_remaining[node.module] == 0) {
        post_backward(node.module);
      }
      break;
    case Node::Kind::Compute:
      if (node.region >= 0 && !regions_[static_cast<size_t>(node.region)].replayed) {
        replay(node.region);  // the first unpack of a saved tensor of the region
      }
      break;
    case Node::Kind::Checkpoint: {
      const int32_t enclosing = regions_[static_cast<size_t>(node.region)].enclosing;
      if (enclosing >= 0 && !regions_[static_cast<size_t>(enclosing)].replayed) {
        replay(enclosing);  // unpacking the CheckpointFunction's saved inputs
      }
      replay(node.region);
      break;
    }
    }
  }
}

void Process::pre_backward(ModuleIndex m) {
  emitter_.context.phase = Phase::Bwd;
  emitter_.emit(EventKind::BackwardPre, m, model::kNone, backward_coordinator_->step_id());
  backward_coordinator_->prologue_and_record(m);
  backward_coordinator_->fetch(m, false, in_graph_task_);
  zenflow_pre(m);
  if (!modules_.own_params[m].empty()) {
    check_compute_layout(m);
    emitter_.emit(EventKind::Compute, m);
  }
}

void Process::post_backward(ModuleIndex m) {
  emitter_.context.phase = Phase::Bwd;
  emitter_.emit(EventKind::BackwardPost, m, model::kNone, backward_coordinator_->step_id());
  zenflow_post(m);
  backward_coordinator_->release(m, false);
}

void Process::replay(int32_t region_index) {
  Region& region = regions_[static_cast<size_t>(region_index)];
  region.replayed = true;
  // The region's forward runs again with grad enabled inside the backward graph task, with
  // _in_forward off: recompute fetches, no discovery (2.7, 2.12).
  const Phase saved_phase = emitter_.context.phase;
  emitter_.context.phase = Phase::Recompute;
  grad_enabled_ = true;
  if (region.reentrant) {
    const size_t begin = nodes_.size();
    run_body(region.module, *region.body, true);
    emitter_.context.phase = Phase::Bwd;
    run_backward(begin);  // the nested backward over the replayed graph
    nodes_.resize(begin);
  } else {
    // [I] semantics 2.7 (non-reentrant), confirmed on DeepSpeed: the replay's own nodes are
    // discarded; torch stops it once every saved tensor is back (early stop).
    // The recompute runs on the original inputs, so its ops save exactly what the forward's did.
    record_nodes_ = false;
    replay_compute_left_ = region.compute_nodes;
    run_body(region.module, *region.body, region.input_rg);
    record_nodes_ = true;
    stopping_ = false;
    replay_compute_left_ = 0;
  }
  emitter_.context.phase = saved_phase;
}

// ---- ZenFlow transposed storage (section 6) ----

void Process::zenflow_pre(ModuleIndex m) {
  zenflow_transpose(m, true);
}

void Process::zenflow_post(ModuleIndex m) {
  zenflow_transpose(m, false);
}

void Process::zenflow_transpose(ModuleIndex m, bool to_compute) {
  if (!scenario_.zenflow) {
    return;
  }
  const int64_t id = modules_.ds_id[m];
  for (ParamIndex p : coordinator_->param_list(m)) {
    // `data.t()` of a partitioned param's 0-element placeholder changes nothing; 1-D params
    // are never transposed.
    if (!params_.multi_dim[p] || params_.status[p] != Status::Available) {
      continue;
    }
    if (options_.discovery == Discovery::ResidentSkip) {
      params_.compute_layout[p] ^= 1;  // old hooks: every pre- and post-hook flips
    } else {
      // [PR] semantics 6, fixed hooks: only the sole consumer flips (to compute layout before,
      // back to storage after); [I] the recompute owner added by attribution is not a consumer
      // in the transpose sense.
      const IdSet& consumers = params_.consumers[p];
      const bool sole = consumers.contains(id) &&
                        std::all_of(consumers.ids().begin(), consumers.ids().end(), [&](int64_t c) {
                          return c == id || c == params_.attributed_owner[p];
                        });
      if (!sole || params_.compute_layout[p] == (to_compute ? 1 : 0)) {
        continue;
      }
      params_.compute_layout[p] = to_compute ? 1 : 0;
    }
    emitter_.emit(EventKind::Transpose, m, p, -1, -1, Status::None);
  }
}

void Process::check_compute_layout(ModuleIndex m) {
  if (!scenario_.zenflow) {
    return;
  }
  for (ParamIndex p : modules_.own_params[m]) {
    if (params_.multi_dim[p] && !params_.compute_layout[p]) {
      raise(OutcomeKind::Error,
            fmt::format("ZenFlow layout defect: module '{}' computes with {} in storage "
                        "(transposed) layout",
                        scenario_.modules[m].qualified_name, scenario_.params[p].qualified_name),
            "Two consumers of the parameter were active at once and each pre-forward hook "
            "transposed it, so the inner module sees the storage layout. PR #8875's hooks "
            "transpose only for the sole consumer: run with --discovery residency-independent.",
            m, coordinator_->step_id() - 1);  // the module's own step: its fetch came first
    }
  }
}

}  // namespace zfetch::sim
