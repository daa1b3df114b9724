// One simulated process: its schedule, the engines built on the model, training micro-steps,
// eval passes, optimizer steps and checkpoints (semantics 1.5, 1.7, 2.9-2.11).
#include "sim/process.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "model/persistence.h"
#include "sim/initial_state.h"

namespace zfetch::sim {

using trace::EventKind;
using trace::Phase;

Process::Process(const model::Scenario& scenario, const Options& options, int32_t rank,
                 trace::EventSink& sink, CollectiveLog& collectives, uint64_t first_seq,
                 int32_t engine, ProcessGlobals* globals)
    : scenario_(scenario),
      config_(scenario.config.zero),
      options_(options),
      collectives_(collectives),
      params_(initial_param_state(scenario)),
      modules_(initial_module_state(scenario, params_)),
      emitter_(scenario, params_, modules_, sink, first_seq),
      globals_(globals != nullptr ? *globals : own_globals_),
      zenflow_(scenario, params_, modules_, emitter_, options.discovery),
      grad_reduction_(scenario, params_, modules_) {
  emitter_.context.rank = rank;
  emitter_.context.engine = engine;
  gathered_depth_.resize(scenario.params.size());
  block_scratch_.reserve(scenario.params.size());
  returned_.resize(scenario.modules.size());
  graph_.reserve(scenario.modules.size(), scenario.params.size());
  call_outputs_.reserve(2 * scenario.modules.size());
  hazards_.reserve(Outcome::kMaxHazards);
  history_.last_partitioned.resize(scenario.params.size());
}

RankResult Process::run() {
  std::optional<Raised> raised;
  try {
    run_schedule();
  } catch (Raised& error) {
    raised = std::move(error);
  }
  return result(std::move(raised));
}

RankResult Process::result(std::optional<Raised> raised) {
  RankResult result;
  result.raised = std::move(raised);
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
  result.hazards = hazards_;
  result.invalidation_details = history_.invalidations;
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
  run_items(scenario_.schedule, [this](uint32_t) -> Process& { return *this; });
}

void Process::run_item(const model::ScheduleItem& item) {
  switch (item.kind) {
  case model::ScheduleItem::Kind::Train:
    for (int64_t s = 0; s < item.steps; ++s) {
      const auto& skipped = item.overflow_steps;
      overflow_ = std::find(skipped.begin(), skipped.end(), s) != skipped.end();
      for (int64_t k = 0; k < scenario_.config.gradient_accumulation_steps; ++k) {
        train_micro_step(item.forwards);
      }
    }
    overflow_ = false;
    break;
  case model::ScheduleItem::Kind::Eval:
    for (int64_t s = 0; s < item.steps; ++s) {
      eval_pass();
    }
    break;
  case model::ScheduleItem::Kind::Generate:
    generate(item);
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
    coordinator_->release_and_reset_all(PartitionCause::EmptyPartitionCache);
    break;
  case model::ScheduleItem::Kind::Gathered:
    // run_items opens the block: its body may run on other engines.
    break;
  }
}

void run_items(const std::vector<model::ScheduleItem>& items,
               const std::function<Process&(uint32_t)>& engine) {
  for (const model::ScheduleItem& item : items) {
    Process& process = engine(item.engine);
    if (item.kind != model::ScheduleItem::Kind::Gathered) {
      process.run_item(item);
      continue;
    }
    process.enter_gathered(item.gathered);
    run_items(item.body, engine);
    engine(item.engine).exit_gathered(item.gathered);
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
      params_.ds_id[p] = globals_.next_param_id++;
      params_.status[p] = Status::NotAvailable;
      history_.last_partitioned[p] = {PartitionCause::NewModel, emitter_.context};
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
    // The new model object's __init__ registers its up-front externals again (5.4).
    for (size_t m = 0; m < modules_.externals.size(); ++m) {
      modules_.externals[m].clear();
      for (ParamIndex p : scenario_.modules[m].external_params) {
        const ParamIndex c = params_.canonical[p];
        std::vector<ParamIndex>& ext = modules_.externals[m];
        if (std::find(ext.begin(), ext.end(), c) == ext.end()) {
          ext.push_back(c);
        }
      }
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
        history_.last_partitioned[p] = {PartitionCause::NewEngine, emitter_.context};
        params_.fast_sharded[p] = 0;  // all_gather, then partition(): shape [0]
      }
    }
  }
  number_modules();
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
  coordinator_ =
      std::make_unique<Coordinator>(scenario_, params_, modules_, emitter_, collectives_, history_,
                                    options_.discovery, globals_.gather_groups);
  if (fresh_model) {
    // The backward-hook classes are created once per module object and capture the engine
    // that created them: a model re-used by a later engine keeps routing its pre/post-backward
    // hooks to this coordinator (2.3, 10.19 [I]).
    backward_coordinator_ = coordinator_.get();
  }
  check_one_trainable_dtype();
  fwd_stack_.push_back(0);
  emitter_.emit(EventKind::EngineInit, 0);
}

void Process::number_modules() {
  // Module ids: the mutable-default-list counter of _register_deepspeed_module (2.2): the root
  // takes the current value, every child visit increments first.
  for (size_t i = 0; i < scenario_.modules.size(); ++i) {
    const auto m = static_cast<ModuleIndex>(i);
    if (!modules_.hooked[m]) {
      continue;
    }
    modules_.ds_id[m] = m == 0 ? globals_.module_counter : ++globals_.module_counter;
    modules_.recompute[m].clear();  // reset on (re-)registration
  }
}

void Process::check_one_trainable_dtype() {
  // Without param offload, Stage3ZeroOptimizer moves every trainable partition into one flat
  // buffer (`defragment`, runtime/zero/utils.py at edaa722), which asserts that they share one
  // dtype; the offload path builds per-group CPU buffers and has no such check. Seen on real
  // DeepSpeed (fuzz campaign 1219: 47 of 47 scenarios with mixed trainable dtypes fail here).
  if (config_.offload_param_set && config_.offload_param.device != model::OffloadDevice::None) {
    return;
  }
  ParamIndex first = model::kNone;
  for (ParamIndex p : params_.by_id) {
    if (params_.frozen[p]) {
      continue;
    }
    if (first == model::kNone) {
      first = p;
    } else if (scenario_.params[p].dtype != scenario_.params[first].dtype) {
      raise(OutcomeKind::Error, "",
            fmt::format(
                "DeepSpeed's ZeRO-3 optimizer asserts that all trainable parameters have one "
                "dtype when it flattens their partitions into one buffer (defragment): {} is "
                "{} but {} is {}. Give every trainable parameter the same dtype (for example "
                "model.to(torch.bfloat16)), freeze the odd ones, or offload parameters to the "
                "CPU (offload_param), which flattens them per group without this check.",
                scenario_.params[first].qualified_name,
                model::dtype_name(scenario_.params[first].dtype),
                scenario_.params[p].qualified_name, model::dtype_name(scenario_.params[p].dtype)));
    }
  }
}

// ---- training, eval, optimizer, checkpoints (2.9-2.11) ----

void Process::train_micro_step(const std::vector<model::ForwardMode>& forwards) {
  in_graph_task_ = false;
  graph_.clear();
  bool output_rg = false;
  // Several root forwards before one backward (a DPO step: the policy, then the reference
  // under no_grad): each is a root call, so each resets the trace step (2.10); the no-grad
  // ones add nothing to the autograd graph, and the loss is what the grad ones computed.
  const size_t count = forwards.empty() ? 1 : forwards.size();
  for (size_t k = 0; k < count; ++k) {
    const model::ForwardMode mode = forwards.empty() ? model::ForwardMode::Grad : forwards[k];
    const bool grad = mode == model::ForwardMode::Grad;
    eval_ = mode == model::ForwardMode::Eval;
    emitter_.context.phase = eval_ ? Phase::Eval : Phase::Fwd;
    grad_enabled_ = grad;
    forward_index_ = static_cast<int64_t>(k);
    const bool rg = call_module(0, grad && scenario_.input_requires_grad);
    output_rg = output_rg || (grad && rg);
  }
  eval_ = false;
  grad_enabled_ = true;
  forward_index_ = 0;

  emitter_.context.phase = Phase::Bwd;
  if (!output_rg) {
    // engine.backward asserts maybe_loss_for_backward(loss) (a one-element tensor with a
    // grad_fn) before it calls loss.backward(), so torch's own `element 0 of tensors does not
    // require grad` is never reached (snapshot edaa722, runtime/engine.py backward; seen on real
    // DeepSpeed, scenarios/fidelity/f5_loss_without_grad).
    raise(OutcomeKind::Error,
          "loss must be a scalar tensor. If you need to pass output gradients, backward() of "
          "output tensors",
          "DeepSpeed's engine.backward checks that the loss has a grad_fn, and this loss has "
          "none: it does not depend on any tensor that requires grad, because nothing trainable "
          "is used with grad enabled (a reentrant checkpoint whose inputs do not require grad "
          "produces an output without grad; set input_requires_grad if the real input requires "
          "grad, or use a non-reentrant checkpoint).");
  }
  in_graph_task_ = true;
  grad_reduction_.begin_backward();
  run_backward(0);
  // engine.backward's _backward_epilogue reduces the bucket (allreduce_gradients) before the
  // optimizer's backward_epilogue releases the leftovers.
  reduction_epilogue();
  // The reduction's partition_grads sets every reduced param's grad to None. Every accumulated
  // gradient is in the bucket, except a z3 leaf param's when its leaf module's backward hook did
  // not run after it (the subtree called without the leaf): that grad stays until the step.
  for (size_t p = 0; p < params_.has_grad.size(); ++p) {
    const auto param = static_cast<ParamIndex>(p);
    params_.has_grad[p] =
        static_cast<uint8_t>(params_.has_grad[p] && params_.canonical[param] == param &&
                             !grad_reduction_.in_bucket(param));
  }
  std::fill(params_.emptied_grad_numel.begin(), params_.emptied_grad_numel.end(), -1);
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
  graph_.clear();
  call_module(0, false);
  eval_ = false;
}

void Process::generate(const model::ScheduleItem& item) {
  // transformers' generate() runs under torch.no_grad() and calls the model's modules
  // directly: an encoder-decoder's encoder once (its own hooks fire; the root's
  // _start_of_forward_hook does not, so the trace step is not reset), then the root once per
  // token, each a pass of its own. The engine's forward prologue is a pre-hook on the root, so
  // each root call has `_in_forward` on (2.12); the encoder's call does not.
  emitter_.context.phase = item.training ? Phase::Fwd : Phase::Eval;
  eval_ = !item.training;
  generating_ = true;
  through_engine_ = false;
  grad_enabled_ = false;
  graph_.clear();
  forward_index_ = 0;
  if (item.unwrap != model::Rehook::None) {
    unwrap_for_generation();
  }
  if (item.encoder != model::kNone) {
    call_module(item.encoder, false);
  }
  // A PEFT model's generate() runs its base model's, which calls the base model once per
  // token: the root's hooks never fire, so no pass starts.
  const ModuleIndex model = item.generate_model == model::kNone ? 0 : item.generate_model;
  for (int64_t k = 0; k < item.steps; ++k) {
    forward_index_ = k;
    call_module(model, false);
  }
  forward_index_ = 0;
  if (item.unwrap != model::Rehook::None) {
    rewrap_after_generation(item.unwrap);
  }
  through_engine_ = true;
  generating_ = false;
  eval_ = false;
}

void Process::unwrap_for_generation() {
  // deepspeed.runtime.zero.unwrap_model_for_generation (stage3.py at the snapshot, trl's
  // copy alike): `with GatheredParameters(model.parameters())` gathers every partitioned
  // param at once, then the forward_hooks and backward_hooks lists are removed. The root's
  // fwd_pre_hook (_start_of_forward_hook) is not in either list: it stays (trl PR #4693).
  // GatheredParameters gathers outside the coordinator, as the recorder sees it: no event.
  for (ParamIndex p : params_.by_id) {
    if (params_.status[p] == Status::NotAvailable) {
      params_.status[p] = Status::Available;
      params_.fast_sharded[p] = 0;
    }
  }
  hooks_removed_ = true;
}

void Process::rewrap_after_generation(model::Rehook rehook) {
  // _register_deepspeed_module(module) again: every module gets a new ds_id from the counter,
  // which is never reset; with PR #8043 the call on the root first invalidates a trace that is
  // not invalid already. Then GatheredParameters' exit partitions every param it holds,
  // persistent ones too.
  hooks_removed_ = false;
  emitter_.context.phase = Phase::None;  // between passes: the generation is over
  if (rehook == model::Rehook::After8043) {
    coordinator_->invalidate_on_rehook();
  }
  number_modules();
  coordinator_->partition_outside(PartitionCause::UnwrapExit);
}

void Process::optimizer_step() {
  emitter_.context.phase = Phase::Optimizer;
  emitter_.emit(EventKind::OptimizerStep);
  ++emitter_.stats.optimizer_steps;
  coordinator_->release_and_reset_all(overflow_ ? PartitionCause::OverflowSkip
                                                : PartitionCause::OptimizerStep);
  unreduced_grad_check();
  if (overflow_) {
    // fp16 overflow: the step is skipped before _post_step, so persistent params stay
    // partitioned (1.5, 10.21): that, not their earlier partition, is why they are NA next.
    for (ParamIndex p : params_.by_id) {
      if (params_.persist[p] && params_.status[p] == Status::NotAvailable) {
        history_.last_partitioned[p] = {PartitionCause::OverflowSkip, emitter_.context};
      }
    }
    ++emitter_.context.step;
    return;
  }
  gather_persistent();  // _post_step
  ++emitter_.context.step;
}

void Process::unreduced_grad_check() {
  // The step's _prepare_fp32_grad_for_sub_group calls zero_grad(set_to_none=True), which runs
  // `p.grad.record_stream(get_accelerator().current_stream())` for every param that still has a
  // grad; on the CPU accelerator that raises (seen on real DeepSpeed, campaign 4242's
  // fuzz-4242-217), on a GPU it succeeds and the gradient is dropped without a word
  // (scenarios/deepspeed_tests/user_backward_leaf_module passes in DeepSpeed's GPU tests).
  if (options_.accelerator != Accelerator::Cpu) {
    return;
  }
  for (ParamIndex p : params_.by_id) {
    if (!params_.has_grad[p]) {
      continue;
    }
    const model::ParamSpec& param = scenario_.params[p];
    ModuleIndex leaf = param.owner;  // the z3 leaf whose subtree holds the param
    while (leaf != model::kNone && !(modules_.leaf[leaf] && modules_.hooked[leaf])) {
      leaf = scenario_.modules[leaf].parent;
    }
    const std::string leaf_name =
        leaf == model::kNone ? std::string("?") : scenario_.modules[leaf].qualified_name;
    raise(OutcomeKind::Error, "unknown parameter type",
          fmt::format("{} belongs to z3 leaf module '{}', and its gradient was accumulated but "
                      "never reduced: DeepSpeed registers no gradient hook on a z3 leaf's params "
                      "(create_reduce_and_remove_grad_hooks) and reduces them in the leaf module's "
                      "backward hook (reduce_leaf_module_grads), which did not run after this "
                      "gradient (a module below the leaf was called without the leaf, or the hook "
                      "ran before the gradient arrived). The optimizer step's zero_grad then finds "
                      "the grad: on the CPU accelerator its record_stream call raises this error; "
                      "on a GPU the gradient is silently discarded and the param is not trained "
                      "by it. Call the z3 leaf module itself, not its submodules.",
                      param.qualified_name, leaf_name),
          model::kNone);
  }
}

void Process::save_checkpoint(const std::string& tag) {
  emitter_.context.phase = Phase::Checkpoint;
  emitter_.emit(EventKind::CheckpointSave);
  coordinator_->release_and_reset_all(PartitionCause::CheckpointSave);  // the prologue
  gather_persistent();                                                  // checkpoint_event_epilogue
  saved_state_dicts_.save(tag, params_);
}

void Process::load_checkpoint(const std::string& tag) {
  emitter_.context.phase = Phase::Checkpoint;
  emitter_.emit(EventKind::CheckpointLoad);
  const std::vector<std::string> errors =
      saved_state_dicts_.load_mismatches(tag, scenario_, params_);
  if (!errors.empty()) {
    const std::string& cls = scenario_.modules[0].class_name;
    raise(OutcomeKind::Error,
          fmt::format("Error(s) in loading state_dict for {}:\n\t{}", cls.empty() ? "Module" : cls,
                      fmt::join(errors, "\n\t")),
          "The checkpoint was saved while z3 leaf params released by fast sharding "
          "(stage3_module_granularity_threshold > 0) held its 1-element buffer, and the module "
          "state_dict saved that buffer: the params of this engine are partitioned (shape [0]). "
          "Save with stage3_module_granularity_threshold 0, or gather the leaf params before "
          "saving (4.8).");
  }
  // Prologue partitions all; the optimizer's load_state_dict partitions persistent params
  // again (a no-op now); the epilogue gathers them: resident after a load (1.5).
  coordinator_->release_and_reset_all(PartitionCause::CheckpointLoad);
  gather_persistent();
}

void Process::gather_persistent() {
  for (ParamIndex p : params_.by_id) {
    if (params_.persist[p] && params_.status[p] == Status::NotAvailable) {
      coordinator_->gather_sync(p, EventKind::PersistentGather);
    }
  }
}

}  // namespace zfetch::sim
