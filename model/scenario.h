// The in-memory scenario: module tree, parameters, forward programs, schedule, config,
// expectations.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/enum_names.h"
#include "model/diagnostic.h"
#include "model/module_graph.h"
#include "model/outcome.h"
#include "model/zero_config.h"
#include "trace/event.h"

namespace zfetch::model {

enum class DType : uint8_t { Fp32, Bf16, Fp16 };
/// The scenario-file names of the dtypes, in DType's order.
inline constexpr base::EnumNames<DType::Fp16> kDTypeNames("fp32", "bf16", "fp16");
/// Bytes per element of each dtype, in DType's order.
inline constexpr std::array<int64_t, kDTypeNames.kCount> kDTypeBytes = {4, 2, 2};

/// The scenario-file name of `dtype`: fp32, bf16, fp16.
constexpr std::string_view dtype_name(DType dtype) {
  return kDTypeNames[dtype];
}

/// Bytes per element of `dtype`.
constexpr int64_t dtype_bytes(DType dtype) {
  return kDTypeBytes[static_cast<size_t>(dtype)];
}

/// Index of a module in Scenario::modules (file order == registration order, root is 0).
using ModuleIndex = uint32_t;
/// Index of a parameter in Scenario::params (file order; tied params have their own entry).
using ParamIndex = uint32_t;
inline constexpr uint32_t kNone = UINT32_MAX;

/// One `torch.nn.Parameter` as declared in the scenario.
struct ParamSpec {
  std::string name;  ///< local attribute name, e.g. "weight"
  std::string
      qualified_name;  ///< named_parameters() name relative to the root, e.g. "adapter.base.weight"
  ModuleIndex owner = kNone;
  std::vector<int64_t> shape;  ///< as declared; {numel} when given by numel
  int64_t numel = 0;
  DType dtype = DType::Fp32;
  bool frozen = false;         ///< requires_grad == False
  ParamIndex tied_to = kNone;  ///< the same Parameter object as this one (weight tying)
  SourceLoc loc;
};

/// A seeded draw per root forward that decides whether a call runs (docs/scenario-format.md,
/// "Seeded draws"): candidate `index` of `of` takes value `index` of the counter-based stream
/// keyed by (`seed`, step, micro-step, forward).
struct Draw {
  enum class Kind : uint8_t {
    None,
    Route,      ///< `route`: runs iff among the `top_k` candidates with the smallest values
    LayerDrop,  ///< `layerdrop`: skipped in training iff its value, as a uniform in [0, 1), < p
  };
  Kind kind = Kind::None;
  uint64_t seed = 0;
  int64_t index = 0;  ///< this call's candidate number, from 0
  int64_t of = 1;     ///< Route: the number of candidates
  int64_t top_k = 1;  ///< Route
  double p = 0;       ///< LayerDrop: the drop probability
};

/// `when:` guard of a program operation. Each list, when non-empty, must contain the current
/// value; all present lists must match. Steps count optimizer steps from 0 across the whole
/// schedule; micro-steps count from 0 within the current optimizer step.
struct Condition {
  std::vector<int64_t> steps;
  std::vector<int64_t> micro_steps;
  std::vector<int64_t> ranks;
  std::vector<int64_t> engines;  ///< engine generation: 0 before the first restart, 1 after, ...
  /// The root forward's number within its micro-step (`train: {forwards: [...]}`) or its
  /// generate loop (the token); 0 in an eval pass.
  std::vector<int64_t> forwards;
  /// Train: a training micro-step's forwards (grad or not); Eval: an eval pass or an `eval`
  /// forward of a micro-step; Generate: the forwards of a `generate` item.
  enum class Phase : uint8_t { Any, Train, Eval, Generate } phase = Phase::Any;
  Draw draw;  ///< `route` / `layerdrop`: a seeded draw must pick the call too
  [[nodiscard]] bool always() const {
    return steps.empty() && micro_steps.empty() && ranks.empty() && engines.empty() &&
           forwards.empty() && phase == Phase::Any && draw.kind == Draw::Kind::None;
  }
};

enum class AccessKind : uint8_t { Data, Metadata };

/// What a `call` feeds its callee (`input:` / `input_from:`; docs/scenario-format.md). Only
/// whether that tensor requires grad matters: it decides the callee's post-backward node.
enum class CallInput : uint8_t {
  Running,       ///< (default) the forward's running value: `x = child(x)`
  NoGrad,        ///< `input: no_grad`: a fresh tensor that does not require grad (position ids)
  ForwardInput,  ///< `input: forward_input`: the input of this forward (or checkpoint region)
  OutputOf,      ///< `input_from: PATH`: the output of the latest earlier call of PATH
};

/// Whose forward hooks a `call` runs (`hooks:`; docs/scenario-format.md).
enum class CallHooks : uint8_t {
  All,   ///< (default) `module(x)`: its hooks, and its children's when its forward calls them
  None,  ///< `hooks: none`: `module.forward(x)`, which bypasses the module's own hooks
  Own,   ///< `hooks: own`: the module's hooks, but a forward that reads its children's params
         ///< without calling them (a fused kernel): no hook below it fires
};

/// A `deepspeed.zero.GatheredParameters(params, modifier_rank)` block, in a forward program or
/// in the schedule: the params are gathered on entry and partitioned on exit (semantics 11).
struct GatheredBlock {
  std::vector<ParamIndex> params;  ///< as listed (a module path lists its parameters()), canonical
  std::vector<std::string> paths;  ///< the paths as written, for the scenario writer
  int64_t modifier_rank = -1;      ///< -1: None (no broadcast on exit)
};

/// One operation of a module's forward program.
struct Op {
  enum class Kind : uint8_t {
    Call,        ///< `call: child` — module(x) through its hooks
    Access,      ///< `access: path` — a getter read of a parameter (`kind: data|metadata`)
    Checkpoint,  ///< `checkpoint: {reentrant: bool}` with `body`
    Repeat,      ///< `repeat: N` with `body`
    Return,      ///< `returns: param` — a parameter returned from this forward (dangling, 5.3)
    Gathered,    ///< `gathered: [paths]` with `body` — a deepspeed.zero.GatheredParameters block
  };
  Kind kind = Kind::Call;
  SourceLoc loc;
  Condition when;
  ModuleIndex callee = kNone;            ///< Call
  CallInput input = CallInput::Running;  ///< Call
  ModuleIndex input_from = kNone;        ///< Call with CallInput::OutputOf: whose output
  SourceLoc input_from_loc;              ///< and where the file names it
  uint32_t input_from_length = 0;
  bool output_read = false;  ///< Call: a later `input_from` reads this call's output
  /// Call: `output: leaf`: the model detaches the output and makes it a leaf that requires grad
  /// (`x = self.embed(ids).detach().requires_grad_()`): whatever reads it requires grad.
  bool output_leaf = false;
  ParamIndex param = kNone;              ///< Access, Return
  AccessKind access = AccessKind::Data;  ///< Access
  bool reentrant = true;                 ///< Checkpoint
  int64_t count = 1;                     ///< Repeat
  std::vector<Op> body;                  ///< Checkpoint, Repeat, Gathered
  CallHooks hooks = CallHooks::All;      ///< Call
  GatheredBlock gathered;                ///< Gathered
};

/// One `nn.Module` of the tree.
struct ModuleSpec {
  std::string name;  ///< attribute name in the parent; the root's is the scenario's model name
  std::string qualified_name;  ///< named_modules() name relative to the root ("" for the root)
  std::string class_name;      ///< optional, for leaf_module matching and display
  ModuleIndex parent = kNone;
  std::vector<ModuleIndex> children;  ///< registration order
  std::vector<ParamIndex> params;     ///< own params, registration order
  bool has_forward = false;           ///< false: default forward (own params, then children)
  std::vector<Op> forward;
  bool leaf = false;  ///< z3 leaf module (set_z3_leaf_modules / leaf_module)
  /// Params registered up front with deepspeed.zero.register_external_parameter(module, p),
  /// as the model's __init__ does it (semantics 5.4): no file key sets it; the re-simulation of
  /// a remedy does.
  std::vector<ParamIndex> external_params;
  int64_t outputs = 1;      ///< differentiable output tensors (pre-backward fires per output)
  int64_t compute_us = -1;  ///< modelled compute time per call, -1: derive (timeline)
  SourceLoc loc;
};

/// How one root forward of a training micro-step runs (`train: {forwards: [...]}`).
enum class ForwardMode : uint8_t {
  Grad,    ///< `grad`: with grad enabled; the one backward differentiates its output
  NoGrad,  ///< `no_grad`: under torch.no_grad(), the model in training mode (a DPO reference)
  Eval,    ///< `eval`: model.eval() and no grad, inside the accumulation window
};

/// Which DeepSpeed re-registers the ZeRO-3 hooks at the end of `unwrap_model_for_generation`
/// (`generate: {unwrap: ...}`): the module ids are renumbered either way (2.2).
enum class Rehook : uint8_t {
  None,        ///< the generate does not run inside unwrap_model_for_generation
  Before8043,  ///< `before-8043`: the coordinator keeps its trace, recorded under the old ids
  After8043,   ///< `after-8043` (PR #8043, the snapshot): re-registering the root invalidates it
};
/// The scenario-file names of the Rehook values that a file can give, in Rehook's order.
inline constexpr base::EnumNames<Rehook::After8043> kRehookNames("none", "before-8043",
                                                                 "after-8043");

/// One entry of the schedule.
struct ScheduleItem {
  enum class Kind : uint8_t {
    Train,
    Eval,
    SaveCheckpoint,
    Restart,
    LoadCheckpoint,
    EmptyPartitionCache,
    Generate,  ///< `generate:` an encoder call, then `steps` root forwards under no_grad
    Gathered,  ///< `gathered:` a GatheredParameters block around the items of `body`
  };
  Kind kind = Kind::Train;
  int64_t steps = 1;  ///< Train: optimizer steps; Eval: forward passes; Generate: tokens
  /// Train: the root forwards of each micro-step, in order, before its one backward; empty
  /// means one `grad` forward.
  std::vector<ForwardMode> forwards;
  ModuleIndex encoder = kNone;  ///< Generate: the module called directly first, or kNone
  bool training = false;        ///< Generate: the model stays in training mode
  /// Generate: the module generate() runs once per token, or kNone for the root. A PEFT
  /// model's generate() runs its base model, so the root's _start_of_forward_hook never fires.
  ModuleIndex generate_model = kNone;
  /// Generate: inside unwrap_model_for_generation (all params gathered, hooks removed, then
  /// re-registered), and which DeepSpeed re-registers them.
  Rehook unwrap = Rehook::None;
  std::string tag;           ///< SaveCheckpoint / LoadCheckpoint
  bool reuse_model = false;  ///< Restart: build the new engine on the same model object (A3)
  std::vector<int64_t> overflow_steps;  ///< Train: optimizer steps skipped for fp16 overflow
  /// The engine the item runs on (`engine: NAME`; its index in Scenario::engine_names), 0 with
  /// one engine.
  uint32_t engine = 0;
  GatheredBlock gathered;          ///< Gathered
  std::vector<ScheduleItem> body;  ///< Gathered: the items run inside the block
  SourceLoc loc;
};

/// How many root forwards `item` runs when an optimizer step has `accumulation` micro-steps.
inline int64_t root_forwards(const ScheduleItem& item, int64_t accumulation) {
  const auto saturating_mul = [](int64_t a, int64_t b) {
    return a > 0 && b > INT64_MAX / a ? INT64_MAX : a * b;
  };
  switch (item.kind) {
  case ScheduleItem::Kind::Train:
    return saturating_mul(saturating_mul(std::max<int64_t>(item.steps, 0), accumulation),
                          std::max<int64_t>(1, static_cast<int64_t>(item.forwards.size())));
  case ScheduleItem::Kind::Eval:
  case ScheduleItem::Kind::Generate:
    return std::max<int64_t>(item.steps, 0);
  case ScheduleItem::Kind::Gathered: {
    int64_t total = 0;
    for (const ScheduleItem& inner : item.body) {
      const int64_t more = root_forwards(inner, accumulation);
      total = more > INT64_MAX - total ? INT64_MAX : total + more;
    }
    return total;
  }
  default:
    return 0;
  }
}

/// Expected outcome of one run under one discovery policy (`expect:` block).
struct Expectation {
  OutcomeKind outcome = OutcomeKind::Pass;
  std::optional<trace::Phase> phase;  ///< fwd, bwd, recompute, eval, optimizer, checkpoint
  std::optional<std::string> module;  ///< qualified module name ("" is the root)
  std::optional<int64_t> step;        ///< trace step of the failure
  std::optional<int64_t> micro_step;  ///< micro-step (0-based within the engine's training)
  std::optional<int64_t> engine;      ///< engine generation
  std::optional<int64_t> invalidations;
  SourceLoc loc;
};

struct PolicyExpectation {
  Discovery policy = Discovery::ResidentSkip;
  Expectation expect;
};

/// `timing:` block: inputs of the cost model (timeline); absent values are derived.
struct TimingSpec {
  int64_t tokens_per_micro_batch = 0;  ///< 0: train_micro_batch_size_per_gpu * 1
  std::string calibration;             ///< calibration file path (relative to the scenario), or ""
};

/// A whole scenario file.
struct Scenario {
  std::string path;  ///< as given on the command line
  std::string name;
  std::string source;  ///< where the scenario and its expected outcome come from
  int64_t world_size = 1;
  bool input_requires_grad = false;  ///< does the root's input tensor require grad (7.1 A2)
  bool zenflow = false;              ///< ZenFlow transposed storage layout (section 6)
  std::vector<ModuleSpec> modules;   ///< [0] is the root
  std::vector<ParamSpec> params;
  std::vector<ScheduleItem> schedule;
  DeepSpeedConfig config;
  TimingSpec timing;
  std::vector<PolicyExpectation> expectations;
  ModuleGraph graph;  ///< the module tree as a Boost.Graph, vertex i == modules[i]
  /// Several engines in one process (`engines:`), in declaration order: each a whole scenario
  /// (its own model; the config, world and schedule are the top level's). Empty with one engine.
  /// The top level's own model is the first engine's, so that tools that show one model show it.
  std::vector<std::string> engine_names;
  std::vector<Scenario> engines;
};

/// The scenario of engine `engine`: `scenario` itself with one engine.
inline const Scenario& engine_scenario(const Scenario& scenario, int64_t engine) {
  return scenario.engines.empty() || engine < 0 ||
                 static_cast<size_t>(engine) >= scenario.engines.size()
             ? scenario
             : scenario.engines[static_cast<size_t>(engine)];
}

}  // namespace zfetch::model
