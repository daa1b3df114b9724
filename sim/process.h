// One simulated training process (one rank): the schedule and its engines (process.cc), the
// module hooks and forward programs (process_forward.cc), the parameter getter
// (process_getter.cc) and the backward with checkpoint replay (process_backward.cc); semantics
// sections 1, 2, 5, 6.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "model/scenario.h"
#include "sim/autograd_graph.h"
#include "sim/collectives.h"
#include "sim/coordinator.h"
#include "sim/emitter.h"
#include "sim/grad_reduction.h"
#include "sim/history.h"
#include "sim/saved_state_dicts.h"
#include "sim/simulator.h"
#include "sim/state.h"
#include "sim/zenflow_layout.h"

namespace zfetch::sim {

/// The result of one rank's run.
struct RankResult {
  std::optional<Raised> raised;  ///< set when DeepSpeed would have raised on this rank
  int64_t invalidations = 0;
  std::vector<std::string> warnings;
  RunStats stats;
  std::vector<Hazard> hazards;
  std::vector<Invalidation> invalidation_details;  ///< the first few, for their explanation
  uint64_t next_seq = 0;                           ///< the seq after this rank's last event
};

/// What the engines of one process share (semantics 1.7, 2.2): the param id counter of
/// zero.Init, the module id counter of _register_deepspeed_module, and the all-gather ids.
struct ProcessGlobals {
  int64_t next_param_id = 0;
  int64_t module_counter = 0;
  int64_t gather_groups = 0;
};

class Process {
 public:
  /// `engine`: this engine's number in the process (its `engines:` position; 0 with one engine,
  /// whose restarts count on from it). `globals`: shared with the other engines of the process,
  /// or null for a process of one engine.
  Process(const model::Scenario& scenario, const Options& options, int32_t rank,
          trace::EventSink& sink, CollectiveLog& collectives, uint64_t first_seq,
          int32_t engine = 0, ProcessGlobals* globals = nullptr);

  /// Runs the whole schedule; never throws.
  RankResult run();

  // ---- driven item by item, by the process of several engines (sim/several_engines.cc) ----
  /// Builds the engine (deepspeed.initialize).
  void start() { build_engine(true); }
  /// Runs one schedule item other than `gathered` (whose body may name other engines).
  void run_item(const model::ScheduleItem& item);
  /// deepspeed.zero.GatheredParameters: __enter__ and __exit__ (semantics 11).
  void enter_gathered(const model::GatheredBlock& block);
  void exit_gathered(const model::GatheredBlock& block);
  /// Another engine's root went onto FWD_MODULE_STACK (it was built after this one).
  void push_foreign_root() { fwd_stack_.push_back(kForeign); }
  /// The result so far, with `raised` if the run ended with an error.
  RankResult result(std::optional<Raised> raised);
  [[nodiscard]] uint64_t next_seq() const { return emitter_.next_seq(); }
  void set_next_seq(uint64_t seq) { emitter_.set_next_seq(seq); }
  /// The optimizer steps of the process so far: every engine's count (the trace's `step`).
  [[nodiscard]] int32_t step() const { return emitter_.context.step; }
  void set_step(int32_t step) { emitter_.context.step = step; }

 private:
  void run_schedule();
  /// GatheredParameters.__enter__ / __exit__, in a forward or between passes. `module`: the
  /// module whose forward runs the block (kNone between passes), where an error is raised.
  void open_block(const model::GatheredBlock& block, ModuleIndex module = model::kNone);
  void close_block(const model::GatheredBlock& block, ModuleIndex module = model::kNone);
  /// The block's params, canonical, without duplicates, in ds_id order (as __init__ sorts them).
  void block_params(const model::GatheredBlock& block, std::vector<ParamIndex>& out) const;
  void build_engine(bool fresh_model);
  /// The optimizer's one-dtype assertion on trainable params at engine construction.
  void check_one_trainable_dtype();
  /// One micro-step: its root forwards (`forwards`; empty: one with grad), one backward, and
  /// engine.step().
  void train_micro_step(const std::vector<model::ForwardMode>& forwards);
  void eval_pass();
  /// HF `generate()`: the encoder called directly, then `item.steps` root forwards under
  /// no_grad, all outside the engine's forward.
  void generate(const model::ScheduleItem& item);
  /// unwrap_model_for_generation's entry: GatheredParameters(model.parameters()), then the
  /// module hooks removed (the root's _start_of_forward_hook stays).
  void unwrap_for_generation();
  /// Its exit: the hooks registered again as `rehook` does it, then every param partitioned.
  void rewrap_after_generation(model::Rehook rehook);
  /// _register_deepspeed_module's ds_ids from the process-global counter (2.2).
  void number_modules();
  void optimizer_step();
  void save_checkpoint(const std::string& tag);
  void load_checkpoint(const std::string& tag);
  void gather_persistent();

  /// One forward program or checkpoint body being run: what its input is, and where its calls'
  /// outputs that a later `input_from` reads begin in call_outputs_.
  struct Scope {
    bool input_rg;
    size_t outputs_begin;
  };
  bool call_module(ModuleIndex m, bool input_rg);
  bool call_hookless(ModuleIndex m, bool input_rg);
  /// `module.forward(x)`: its own params read through the getter, its program run with its
  /// children called as its forward calls them, and none of its own hooks.
  bool call_forward_only(ModuleIndex m, bool input_rg);
  /// The ops of a `gathered` operation inside a forward: enter, the body, exit.
  bool run_gathered(ModuleIndex m, const model::Op& op, bool rg, const Scope& scope);
  /// Runs `ops` as a scope of their own (a forward program or a checkpoint body) whose input
  /// requires grad iff `input_rg`, from the running value `rg`.
  bool run_scope(ModuleIndex m, const std::vector<model::Op>& ops, bool input_rg, bool rg);
  bool run_body(ModuleIndex m, const std::vector<model::Op>& ops, bool rg, const Scope& scope);
  bool run_call(const model::Op& op, bool rg, const Scope& scope);
  bool run_default_forward(ModuleIndex m, bool rg);
  bool own_compute(ModuleIndex m, bool rg);
  bool access(ModuleIndex context, const model::Op& op, bool rg);
  void run_backward(size_t begin);
  void pre_backward(ModuleIndex m);
  void post_backward(ModuleIndex m);
  void unpack_region(int32_t region);
  void accumulate_grad(const AutogradGraph::Node& node, AutogradGraph::Accumulation accumulation);
  /// The backward hook of z3 leaf `m` (reduce_leaf_module_grads).
  /// The backward of a pre-backward node that wrapped a returned param with its data emptied.
  [[noreturn]] void emptied_return_error(const AutogradGraph::Node& node);
  /// At the optimizer step: a param that still has a grad (never reduced) fails zero_grad.
  void unreduced_grad_check();
  void leaf_module_backward(ModuleIndex m);
  void reduction_epilogue();
  [[nodiscard]] std::string autograd_execution(int32_t task_region) const;
  void replay(int32_t region);
  void register_external(ModuleIndex m, ParamIndex p, Status status_at_access);
  void note_hazard(ModuleIndex m, ParamIndex p, Status status);
  void handle_returns(ModuleIndex m);
  void zenflow_transpose(ModuleIndex m, bool to_compute);
  void check_compute_layout(ModuleIndex m);
  bool condition_holds(const model::Condition& when) const;
  [[nodiscard]] ModuleIndex stack_top() const;
  /// `trace_step` < 0: the coordinator's current step.
  [[noreturn]] void raise(OutcomeKind kind, std::string message, std::string explanation,
                          ModuleIndex module = model::kNone, int32_t trace_step = -1);

  const model::Scenario& scenario_;
  const model::ZeroConfig& config_;
  Options options_;
  CollectiveLog& collectives_;
  ParamState params_;
  ModuleState modules_;
  Emitter emitter_;
  History history_;
  std::unique_ptr<Coordinator> coordinator_;           ///< the current engine's
  Coordinator* backward_coordinator_ = nullptr;        ///< the one the model's backward hooks call
  std::vector<std::unique_ptr<Coordinator>> retired_;  ///< earlier engines of a re-used model

  // Process-global state (10.1, 10.2): counters and FWD_MODULE_STACK.
  ProcessGlobals own_globals_;
  ProcessGlobals& globals_;             ///< own_globals_, or those of the process's engines
  std::vector<ModuleIndex> fwd_stack_;  ///< kForeign for roots of destroyed engines' models
  static constexpr ModuleIndex kForeign = model::kNone - 1;

  // Engine state.
  int64_t engine_micro_steps_ = 0;
  int64_t micro_in_step_ = 0;
  bool in_forward_ = false;  ///< _in_forward (2.12)
  bool grad_enabled_ = false;
  bool in_graph_task_ = false;
  bool eval_ = false;
  bool generating_ = false;    ///< inside a `generate` item: `when: {phase: generate}`
  int64_t forward_index_ = 0;  ///< the root forward's number in its micro-step or generate loop
  /// The root is called through the engine (engine(x)); generate() calls the module itself,
  /// outside engine.forward, so its reset_step belongs to no pass (phase none). The engine's
  /// prologue and epilogue still run: they are hooks on the root (_in_forward, 2.12).
  bool through_engine_ = true;
  /// Inside unwrap_model_for_generation: no module hooks but the root's start-of-forward one.
  bool hooks_removed_ = false;
  bool overflow_ = false;  ///< the current optimizer step overflows (fp16): skipped
  AutogradGraph graph_;
  ZenflowLayout zenflow_;
  GradReduction grad_reduction_;
  int32_t backward_task_region_ = -1;  ///< the reentrant region whose nested backward runs, or -1
  SavedStateDicts saved_state_dicts_;
  std::vector<std::vector<ParamIndex>> returned_;  ///< per module: params returned this call
  /// Per open scope, innermost last: whether the latest output of each callee that a later
  /// `input_from` reads requires grad. Reserved up front.
  std::vector<std::pair<ModuleIndex, bool>> call_outputs_;
  int64_t invalidations_before_ = 0;
  std::vector<std::string> warnings_;
  std::vector<Hazard> hazards_;  ///< bounded by Outcome::kMaxHazards; reserved up front
  /// Per param: the GatheredParameters blocks open on it (_ds_z3_gathered_param_context_depth).
  std::vector<uint8_t> gathered_depth_;
  std::vector<ParamIndex> block_scratch_;
  /// Which calls bypass hooks: > 0 inside a `hooks: own` call (no hook below it fires).
  int32_t hookless_depth_ = 0;
  bool own_hooks_only_ = false;  ///< the next call_module is a `hooks: own` call
};

/// Runs schedule items in order, each on `engine(item.engine)`; a `gathered` block opens and
/// closes on its engine around its body (which may name other engines).
void run_items(const std::vector<model::ScheduleItem>& items,
               const std::function<Process&(uint32_t)>& engine);

}  // namespace zfetch::sim
