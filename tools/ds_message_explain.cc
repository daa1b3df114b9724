// Explanations of DeepSpeed ZeRO-3 fetch messages (see ds_message_explain.h).
#include "tools/ds_message_explain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/enum_names.h"

namespace zfetch::tools {

namespace {

constexpr size_t kWidth = 100;

// Appends `text` wrapped at kWidth columns: the first line after `first`, the others after
// `indent` (a bullet's text lines up under its first word).
void paragraph(std::string& out, std::string_view first, std::string_view indent,
               std::string_view text) {
  std::string line(first);
  bool line_empty = true;
  size_t at = 0;
  while (at < text.size()) {
    const size_t space = text.find(' ', at);
    const std::string_view word =
        text.substr(at, space == std::string_view::npos ? std::string_view::npos : space - at);
    at = space == std::string_view::npos ? text.size() : space + 1;
    if (word.empty()) {
      continue;
    }
    if (!line_empty && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = std::string(indent);
      line_empty = true;
    }
    if (!line_empty) {
      line += ' ';
    }
    line += word;
    line_empty = false;
  }
  out += line + "\n";
}

void bullet(std::string& out, std::string_view text) {
  paragraph(out, "  - ", "    ", text);
}
void note(std::string& out, std::string_view text) {
  paragraph(out, "  ", "  ", text);
}

const char* const kTraceStep =
    "The trace step is a fetch index within one pass (one forward and backward, recomputes "
    "included), counted from 0 at every pass: not the training step. ZeRO-3 records the order of "
    "module fetches in the first pass and checks and prefetches every later pass against it.";

std::string describe(const ParamSummary& param) {
  const std::string name = param.name.empty() ? fmt::format("parameter id {}", param.id)
                                              : fmt::format("{} (id {})", param.name, param.id);
  const std::string consumers =
      param.consumers.empty()
          ? "no module holds it"
          : fmt::format("held by module{} {}", param.consumers.size() == 1 ? "" : "s",
                        fmt::join(param.consumers, ", "));
  return fmt::format(
      "{}: {}, {}, {}, {} elements{}; {}", name,
      param.status.empty() ? "status not printed" : param.status,
      param.persist ? "persistent" : "not persistent", param.requires_grad ? "trainable" : "frozen",
      param.ds_numel,
      param.ds_shape.empty() ? "" : fmt::format(" [{}]", fmt::join(param.ds_shape, ", ")),
      consumers);
}

void list_params(std::string& out, const std::vector<ParamSummary>& params) {
  for (const ParamSummary& param : params) {
    paragraph(out, "    ", "      ", describe(param));
  }
}

std::string param_name(const ParamSummary& param) {
  return param.name.empty() ? fmt::format("parameter id {}", param.id) : param.name;
}

// The owning module's name: everything before the last dot.
std::string owner_of(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? "" : name.substr(0, dot);
}

std::string last_part(const std::string& name) {
  return name.substr(name.rfind('.') + 1);
}

void explain_tracing_error(std::string& out, const DsMessage& message) {
  note(out, fmt::format("Module id {} ({}) failed the fetch-queue check at trace step {}: it "
                        "needed parameters that the recorded fetch queue did not hold next.",
                        message.module_id, message.training ? "training" : "eval", message.step));
  note(out, kTraceStep);
  out += "\nThe parameters:\n  needed by the module (not yet used at this step of the pass):\n";
  list_params(out, message.expected);
  out += message.got.empty() ? "  next in the recorded queue: nothing (the queue ran dry)\n"
                             : "  next in the recorded queue:\n";
  list_params(out, message.got);

  out += "\nCause classes that fit:\n";
  // A persistent parameter is the clearest case of the family; an AVAILABLE one fits too.
  const ParamSummary* resident = nullptr;
  for (const ParamSummary& param : message.expected) {
    if (param.persist || (resident == nullptr && param.status == "AVAILABLE")) {
      resident = &param;
      if (param.persist) {
        break;
      }
    }
  }
  if (resident != nullptr) {
    const std::string owner = owner_of(resident->name);
    bullet(out,
           fmt::format(
               "An external access of a resident parameter: DeepSpeed issue #8874's mechanism "
               "(fixed by PR #8875). {} is {}. DeepSpeed up to 0.19.9 registers a parameter "
               "read from outside its owner's forward (a parent reading `self.{}.weight` or "
               "its `.dtype`, a tied or shared weight) as an external of the running module "
               "only when the read finds it NOT_AVAILABLE. While the trace was recorded it was "
               "resident, so no pass registered it; a later pass (after a checkpoint load, a "
               "restart, or once it was partitioned) found it NOT_AVAILABLE, gathered it and "
               "registered it as an external of module {}, which now fetches it where the trace "
               "has the next module's parameter.",
               param_name(*resident),
               resident->persist ? "persistent, so it stays AVAILABLE between steps"
                                 : "AVAILABLE at the fetch",
               owner.empty() ? std::string("child") : last_part(owner), message.module_id));
  } else if (!message.expected.empty()) {
    bullet(out, fmt::format("A late external: {} is partitioned and was first read from outside "
                            "its owner after the trace was recorded (a read on some steps or "
                            "ranks only, or in a branch the first pass did not take); the read "
                            "registered it as an external of module {}.",
                            param_name(message.expected.front()), message.module_id));
  }
  bullet(out, fmt::format("A forward that differs between passes: module {} (or one before it) "
                          "reads or calls something in this pass that it did not in the recorded "
                          "one (a condition on the step, the rank, the data or self.training; a "
                          "module called a different number of times).",
                          message.module_id));

  out += "\nChecks that tell them apart:\n";
  if (resident != nullptr) {
    bullet(out,
           "Run with a DeepSpeed that contains PR #8875, or record with "
           "zfetch_record.record(residency_independent=True): the #8874 family passes, a forward "
           "that differs between passes still fails.");
    if (resident->persist) {
      bullet(out, fmt::format("Set stage3_param_persistence_threshold below {} (its size) so that "
                              "{} is partitioned: the #8874 family then passes, because the read "
                              "finds it NOT_AVAILABLE while the trace is recorded.",
                              resident->ds_numel, param_name(*resident)));
    }
  }
  if (!message.expected.empty() && !message.expected.front().name.empty()) {
    bullet(out, fmt::format("Search the forwards of module {} and its parents for reads of {} "
                            "(`.weight`, `.dtype`, `.shape`, `.data`) outside {}'s own forward.",
                            message.module_id, message.expected.front().name,
                            owner_of(message.expected.front().name)));
  }
  bullet(out,
         "Does the failing pass follow a checkpoint load, a restart, an eval pass or a change of "
         "data? A forward that differs fails on the first such pass whatever the version.");
}

void explain_short_trace(std::string& out, const DsMessage& message) {
  note(out, fmt::format("A warning, not an error: at trace step {} module id {} was fetched, but "
                        "the recorded trace has only {} module fetches: this pass fetches more "
                        "modules than the pass that recorded the trace.",
                        message.step, message.module_id, message.cache_length));
  note(out, kTraceStep);
  note(out,
       "DeepSpeed drops the trace and records it again in this pass (no prefetching until it is "
       "complete). Once after a change (the first eval pass, a resume) is normal; every step "
       "means the forward differs from pass to pass and prefetching never works.");
  out += "\nCause classes that fit:\n";
  bullet(out,
         "A module called more often than in the recorded pass (a loop whose length depends on "
         "the data or the step, an extra branch, a generate loop).");
  bullet(out,
         "The recorded pass was shorter: it ended early (an exception, an early stop) or was an "
         "eval pass of a shorter path.");
  out += "\nChecks that tell them apart:\n";
  bullet(out, "Does it repeat every step, or once after an eval pass or a resume?");
  bullet(out,
         "With zero_optimization.log_trace_cache_warnings rank 0 prints every invalidation: "
         "compare the steps from pass to pass.");
}

void explain_module_mismatch(std::string& out, const DsMessage& message) {
  note(out, fmt::format("A warning, not an error: at trace step {} the pass fetched module id {} "
                        "where the recorded trace has module id {}: the order of module calls "
                        "changed.",
                        message.step, message.module_id, message.expected_module));
  note(out, kTraceStep);
  note(out,
       "DeepSpeed drops the trace and records it again in this pass (no prefetching until it is "
       "complete).");
  out += "\nCause classes that fit:\n";
  bullet(out,
         "A forward that chooses modules by step, rank, data or self.training (an eval pass that "
         "skips a branch, a mixture-of-experts router, a rank-dependent module).");
  bullet(out,
         "A checkpointed region recomputed in another order (reentrant against non-reentrant "
         "checkpointing), or a module reused in another place.");
  out += "\nChecks that tell them apart:\n";
  bullet(out, fmt::format("Which modules have ids {} and {}? Ids number the modules in "
                          "named_modules() order when the engine is built; zfetch_record's trace "
                          "names them.",
                          message.expected_module, message.module_id));
  bullet(out,
         "Does the warning repeat every step (a forward that always changes) or only once (the "
         "first pass of a new mode)?");
}

void explain_inflight(std::string& out, const DsMessage& message) {
  note(out,
       "At the end of a pass, gathers that ZeRO-3 had started (prefetches) were never waited on: "
       "the trace predicted modules that this pass did not run.");
  out += "\nThe parameters:\n";
  list_params(out, message.expected);
  out += "\nCause classes that fit:\n";
  bullet(out,
         "A pass that stops early or skips modules the recorded pass ran (a conditional branch, "
         "an exit from a loop, an exception caught by the training code).");
  bullet(out,
         "Modules run outside the forward and backward that ZeRO-3 traces (generate, a manual "
         "call of a submodule).");
  out += "\nChecks that tell them apart:\n";
  bullet(out, "Does the last pass before the error skip the modules that own these parameters?");
  bullet(out,
         "DeepSpeed 0.19 and later clean the in-flight registry at each step instead of raising: "
         "an upgrade hides the message, not the wasted prefetch.");
}

void explain_not_available(std::string& out, const DsMessage& message) {
  note(out,
       "DeepSpeed asserted a parameter's status: a parameter was used, waited on or gathered in a "
       "status it cannot be in at that point.");
  out += "\nThe parameters:\n";
  list_params(out, message.expected);
  out += "\nCause classes that fit:\n";
  bullet(out,
         "A parameter read outside any fetch while partitioned: a read from outside its owner "
         "that the getter did not gather (outside an eager forward: a backward hook, a "
         "recompute), or after its module released it.");
  bullet(out,
         "A gather started twice: the same parameter prefetched and fetched under two modules (a "
         "tied or shared weight).");
  out += "\nChecks that tell them apart:\n";
  bullet(out, "Is the parameter shared by several modules (tied weights)?");
  bullet(out, "Is it read in a backward hook or a checkpointed region?");
}

void explain_partitioned_used(std::string& out, const DsMessage& message) {
  note(out, fmt::format("A tensor of shape {} was built from a parameter with 0 elements on this "
                        "rank: a partitioned (NOT_AVAILABLE) ZeRO-3 parameter was used as a full "
                        "tensor.",
                        message.shape));
  out += "\nCause classes that fit:\n";
  bullet(out,
         "A data read of a parameter from outside its owner that was not gathered: the getter "
         "gathers only in an eager forward, so a read in a reentrant recompute or a backward hook "
         "sees the partition. With DeepSpeed up to 0.19.9 this is also issue #8874's mechanism "
         "for a persistent parameter that was resident when the trace was recorded and is "
         "partitioned after a checkpoint load.");
  bullet(out, "A parameter used after its module released it (kept in a closure or a cache).");
  out += "\nChecks that tell them apart:\n";
  bullet(out,
         "Does the traceback run through torch.utils.checkpoint or a backward? Then it is a read "
         "in a recompute.");
  bullet(out,
         "Does it start after a checkpoint load or a restart? Then try PR #8875 "
         "(zfetch_record.record(residency_independent=True)).");
}

// An explanation as data: what happened, the params named, the cause classes that fit and the
// checks that tell them apart, written by write_reasoning in the layout of the others.
struct Reasoning {
  std::vector<std::string> notes;
  std::string params_title;  ///< empty: no params listed
  std::vector<ParamSummary> params;
  std::vector<std::string> causes;
  std::vector<std::string> checks;
};

void write_reasoning(std::string& out, const Reasoning& reasoning) {
  for (const std::string& text : reasoning.notes) {
    note(out, text);
  }
  if (!reasoning.params_title.empty() && !reasoning.params.empty()) {
    out += fmt::format("\n{}:\n", reasoning.params_title);
    list_params(out, reasoning.params);
  }
  out += "\nCause classes that fit:\n";
  for (const std::string& text : reasoning.causes) {
    bullet(out, text);
  }
  out += "\nChecks that tell them apart:\n";
  for (const std::string& text : reasoning.checks) {
    bullet(out, text);
  }
}

Reasoning registry_entry_left(const DsMessage& message) {
  const std::string name =
      message.expected.empty() ? "the parameter" : param_name(message.expected.front());
  return {
      {fmt::format("ZeRO-3's coordinator gathered {} while its in-flight registry still held an "
                   "entry for it (InflightParamRegistry.__setitem__): an earlier gather "
                   "registered it and nothing removed the entry.",
                   name),
       "Each gather of the coordinator (a module's fetch or a prefetch) registers every param it "
       "starts, with the gather's handle; a module's fetch removes the entries of the params it "
       "needs as it waits for them. A coalesced gather (several params, up to "
       "stage3_prefetch_bucket_size) has one handle for all of them, so waiting for one param "
       "makes the others AVAILABLE too, while their entries stay until their own modules fetch "
       "them."},
      "The parameter (its summary is taken after the new gather started)",
      message.expected,
      {fmt::format("A GatheredParameters block listing {} ended before the module that owns it "
                   "ran: the prefetch had started it in one coalesced gather with a param that "
                   "an earlier module waited for, the block's exit partitioned it (a partition "
                   "leaves the registry alone), and the owner's fetch then gathered it again.",
                   name),
       "Anything else that partitions a prefetched param before its module runs (a manual "
       "param.partition(), or another engine partitioning shared params)."},
      {"Does a GatheredParameters block inside the forward list this param, around modules that "
       "run before its owner?",
       "Set stage3_prefetch_bucket_size to 0 (no prefetch), or small enough that the param gets "
       "a gather of its own: the error then goes away if it is this family.",
       "Fix: leave the params the coordinator prefetches out of the block, or close the block "
       "only after their modules have run."}};
}

Reasoning partition_inflight(const DsMessage& /*message*/) {
  return {
      {"ZeRO-3 was asked to partition a parameter that is being gathered (INFLIGHT): "
       "_partition_param asserts that it is not. DeepSpeed's message starts with the param's "
       "repr (its values, not its name)."},
      "",
      {},
      {"A GatheredParameters block ends while a param it lists is in flight: the block was "
       "opened inside the forward, the coordinator's prefetch started gathering that param for a "
       "module after the block, and nothing waited for the gather before the block's exit "
       "partitioned its list.",
       "A manual param.partition() (or a partition of every param) while a prefetch is still "
       "running."},
      {"Does the traceback run through GatheredParameters.__exit__? Then it is a block.",
       "Set stage3_prefetch_bucket_size to 0 (no prefetch): a block then finds its params "
       "gathered by itself or released, never in flight.",
       "Fix: close the block before the modules whose params the prefetch gathers run, or leave "
       "those params out of it."}};
}

Reasoning steps_not_found(const DsMessage& message) {
  return {
      {message.in_trace_build
           ? "ZeRO-3 could not build its parameter trace at the start of a forward "
             "(record_parameters): a module looked up the steps recorded for its id, and none "
             "were recorded under that id."
           : "`pop from an empty deque` is any Python deque's IndexError. It is ZeRO-3's when "
             "the traceback runs through the coordinator's record_parameters (the trace being "
             "built at the start of a forward); this explanation is for that case.",
       "The trace records, for each module id, the steps at which the module was fetched. "
       "Module ids are given when the ZeRO-3 hooks are registered, and registering them again "
       "renumbers every module (the id counter is never reset): the steps recorded under the old "
       "ids are then looked up under the new ones."},
      "",
      {},
      {"trl's unwrap_model_for_generation (GRPO, PPO, online DPO) with DeepSpeed before PR "
       "#8043: the hooks are removed for generation and registered again while the trace is "
       "being recorded (trl PR #4693 and DeepSpeed PR #8043 are the two fixes).",
       "Other code that removes and registers the ZeRO-3 hooks again between the forwards of a "
       "recorded trace."},
      {"Does the run generate with unwrap_model_for_generation between training steps?",
       "Fix: DeepSpeed with PR #8043 (the trace is invalidated when the hooks are registered "
       "again, and recorded again under the new ids) or trl with PR #4693."}};
}

Reasoning gathered_overlap(const DsMessage& message) {
  const bool one = message.ds_ids.size() == 1;
  return {{fmt::format("A GatheredParameters block was opened on {} (ds_id{} {}) that an "
                       "enclosing GatheredParameters block already holds: __enter__ counts the "
                       "blocks open on each param and refuses a second.",
                       one ? "a parameter" : "parameters", one ? "" : "s",
                       fmt::join(message.ds_ids, ", "))},
          "",
          {},
          {"Nested blocks whose lists share a param: an outer block over a module's parameters() "
           "and an inner one over some of them (often in library code, such as a forward or an "
           "init_weights that gathers, called inside the user's block)."},
          {"Which blocks are open at the inner one? A ds_id is the param's index in the order "
           "ZeRO-3 converted the params (named_parameters() order, counted on across models).",
           "Fix: list each param in one block only, or drop the inner block."}};
}

Reasoning free_active(const DsMessage& message) {
  return {{"ZeRO-3 was asked to free (partition) a parameter that a module still running uses: "
           "free_param refuses a param whose active_sub_modules set is not empty."},
          "The parameter",
          message.expected,
          {"A GatheredParameters block that ends inside the forward of a module that uses one of "
           "its params: a block in a module's own forward over its own params, or a block in a "
           "parent's forward that closes while the child runs. The exit partitions every param of "
           "the block.",
           "As DeepSpeed's text says: params modified inside a GatheredParameters block with "
           "modifier_rank=None."},
          {"Which module holds it (active_sub_modules)? Is the block inside that module's forward?",
           "Fix: close the block outside the forward of the module that uses the param, or leave "
           "its params out of the block (the module's own fetch gathers them anyway)."}};
}

Reasoning loss_without_grad(const DsMessage& /*message*/) {
  return {
      {"engine.backward refused the loss: DeepSpeed asserts that it is a one-element tensor with "
       "a grad_fn before it calls loss.backward()."},
      "",
      {},
      {"Nothing trainable was used with grad enabled, so the loss does not depend on any tensor "
       "that requires grad: a reentrant checkpoint (use_reentrant=True) whose inputs do not "
       "require grad returns an output without grad, for example a frozen embedding's output "
       "into checkpointed LoRA layers.",
       "The forward ran under torch.no_grad(), or every param it used is frozen.",
       "The loss is not one element (a per-sample loss that was not reduced)."},
      {"Does the model use reentrant checkpointing with frozen inputs? "
       "model.enable_input_require_grads() or use_reentrant=False makes the output require "
       "grad.",
       "Print loss.shape and loss.grad_fn before engine.backward."}};
}

Reasoning emptied_return(const DsMessage& message) {
  return {
      {fmt::format("The gradient that comes back through ZeRO-3's pre-backward wrapper of a "
                   "module's output has the shape of a partitioned param ([0], or [1] with fast "
                   "sharding) where the param's shape {} was expected: the module returned one "
                   "of its parameters, and the post-forward hook partitioned it before the "
                   "pre-backward hook wrapped the output.",
                   message.shape.empty() ? "(not printed)" : message.shape)},
      "",
      {},
      {"A module whose forward returns a parameter itself (a learned query, a positional "
       "embedding table, a scale), not a tensor computed from it: DeepSpeed's "
       "_post_forward_module_hook, registered before _pre_backward_module_hook, releases the "
       "param first."},
      {"Which modules return an nn.Parameter from forward?",
       "Fix: return a tensor computed from the param (param * 1, param.clone()), or make it "
       "persistent (stage3_param_persistence_threshold above its size)."}};
}

Reasoning grad_into_empty(const DsMessage& message) {
  return {
      {fmt::format("torch could not store a parameter's gradient into the parameter's data: the "
                   "data is a ZeRO-3 partition (shape [0], or fast sharding's [1]) while the "
                   "gradient has the full shape{}. The param was partitioned when the last op "
                   "that used it ran its backward.",
                   message.shape.empty() ? "" : fmt::format(" ({})", message.shape))},
      "",
      {},
      {"A read of a param's data from outside its owner's forward (a parent reading "
       "`self.child.weight`, a tied weight) that was not registered as the reader's external "
       "parameter: DeepSpeed up to 0.19.9 registers such a read only when it finds the param "
       "NOT_AVAILABLE; this one was AVAILABLE at the read and was partitioned afterwards (its "
       "owner's release, a partition of all params, empty_partition_cache), so no module "
       "fetches it for the backward.",
       "A z3 leaf module whose input does not require grad: torch calls the leaf's full "
       "backward hook before the leaf's pre-backward fetch, and the hook makes a gradient from "
       "the partitioned data."},
      {"Does the traceback's op read a param of another module? PR #8875's getter "
       "(zfetch_record.record(residency_independent=True)) registers every access, or "
       "deepspeed.zero.register_external_parameter(reader, param) does it by hand.",
       "Is the failing param a z3 leaf's? Feed the leaf an input that requires grad "
       "(model.enable_input_require_grads()), or keep its params persistent."}};
}

Reasoning grad_size(const DsMessage& /*message*/) {
  return {{"The gradient reduction at the end of engine.backward found a gradient with fewer "
           "elements than its param: the gradient was stored while the param was partitioned, and "
           "torch's copy of a one-element gradient into the partition's shape broadcast without an "
           "error."},
          "",
          {},
          {"A param whose last use ran its backward after the param was released: a data read from "
           "outside its owner that no module fetches for its backward, or a z3 leaf's backward "
           "hook that ran before the leaf's fetch; the param has one element (or a gradient that "
           "broadcasts), so the store did not fail at once."},
          {"Is the param read from outside its owner? Register it as the reader's external "
           "parameter (PR #8875's getter does it for every access).",
           "Is it a z3 leaf's param? Feed the leaf an input that requires grad."}};
}

Reasoning leaf_grad_unreduced(const DsMessage& /*message*/) {
  return {{"The optimizer step's zero_grad found a gradient that ZeRO-3 never reduced. On the CPU "
           "accelerator its record_stream call raises this; on a GPU the gradient is dropped "
           "silently and the param is not trained by it."},
          "",
          {},
          {"A z3 leaf module's param (set_z3_leaf_modules, leaf_module): DeepSpeed registers no "
           "gradient hook on a leaf's params and reduces them in the leaf module's backward hook "
           "(reduce_leaf_module_grads). A submodule of the leaf called without the leaf, or a hook "
           "that ran before the gradient arrived, leaves the gradient unreduced."},
          {"Is a submodule of a z3 leaf called directly, outside the leaf's forward?",
           "Fix: call the z3 leaf module itself, or do not make it a leaf."}};
}

Reasoning state_dict_empty(const DsMessage& message) {
  return {
      {message.partitioned_in_model
           ? "Loading a checkpoint found parameters of shape torch.Size([0]) in the model: they "
             "are ZeRO-3 partitions, and the checkpoint holds other shapes for them."
           : "A state_dict size mismatch. It is ZeRO-3's when the shape in the current model is "
             "torch.Size([0]) (a partition); this explanation is for that case.",
       "With stage3_module_granularity_threshold > 0 (fast sharding), a z3 leaf's released "
       "params hold a 1-element buffer, and a checkpoint saved then keeps that buffer as the "
       "param's value: its shape torch.Size([1]) cannot be copied into the partition."},
      "",
      {},
      {"A checkpoint saved with fast sharding (stage3_module_granularity_threshold > 0) and "
       "loaded into the module state_dict.",
       "A module state_dict saved or loaded outside GatheredParameters while the params are "
       "partitioned."},
      {"Was the checkpoint saved with stage3_module_granularity_threshold > 0?",
       "Fix: save with stage3_module_granularity_threshold 0, or gather the params "
       "(GatheredParameters) around the state_dict's save."}};
}

Reasoning bucket_duplicate(const DsMessage& /*message*/) {
  return {{"The stage-3 optimizer's gradient reduction at the end of engine.backward "
           "(__reduce_and_partition_ipg_grads) found one param twice in its reduce bucket; the "
           "assertion has no message."},
          "",
          {},
          {"A weight used both inside a reentrant checkpoint region and outside it (or in two "
           "regions): a reentrant region runs a backward of its own, each backward accumulates the "
           "gradient and runs DeepSpeed's gradient hook, which adds the param to the bucket.",
           "A z3 leaf module called twice in one forward: the leaf's backward hook adds all of its "
           "params at the backward of every call."},
          {"Is the weight used inside torch.utils.checkpoint(..., use_reentrant=True) and again "
           "outside? Fix: use_reentrant=False.",
           "Is a z3 leaf module called more than once per forward? Fix: call it once."}};
}

Reasoning mixed_dtypes(const DsMessage& /*message*/) {
  return {
      {"The ZeRO-3 optimizer, when it was built, found trainable params of more than one dtype: "
       "without param offload it moves every trainable partition into one flat buffer "
       "(defragment), which asserts one dtype; the assertion has no message."},
      "",
      {},
      {"A model whose trainable params are not all of one dtype (a float32 adapter or norm in a "
       "bfloat16 model)."},
      {"Print {p.dtype for p in model.parameters() if p.requires_grad}.",
       "Fix: give every trainable param the same dtype (model.to(torch.bfloat16)), freeze the "
       "odd ones, or offload params to the CPU (offload_param), whose per-group buffers have no "
       "such check."}};
}

Reasoning active_backward_empty(const DsMessage& /*message*/) {
  return {
      {"ZeRO-3's post-backward hook of a module ran while no module's backward was open in the "
       "coordinator (it asserts the active-backward map is not empty). The pre-backward hook "
       "opens a module's backward when a gradient reaches one of its wrapped outputs; the "
       "post-backward hook closes it when the gradients of its inputs are computed."},
      "",
      {},
      {"The gradient reached a module's inputs along a path that avoids its wrapped outputs: an "
       "output used through .data or a tensor made outside the forward hooks, or a module whose "
       "hooks were bypassed (module.forward(x), hooks removed) in one call and not in another."},
      {"Is a module called through .forward() or with its hooks removed?",
       "Are outputs used through .data, or detached and re-attached, between modules?"}};
}

// The explanations written from a Reasoning, by kind, from RegistryEntryLeft on.
constexpr Reasoning (*kReasoners[])(const DsMessage&) = {
    registry_entry_left, partition_inflight,   steps_not_found,  gathered_overlap,
    free_active,         loss_without_grad,    emptied_return,   grad_into_empty,
    grad_size,           leaf_grad_unreduced,  state_dict_empty, bucket_duplicate,
    mixed_dtypes,        active_backward_empty};
static_assert(std::size(kReasoners) == static_cast<size_t>(DsMessage::Kind::ActiveBackwardEmpty) -
                                           static_cast<size_t>(DsMessage::Kind::RegistryEntryLeft) +
                                           1);

constexpr base::EnumNames<DsMessage::Kind::ActiveBackwardEmpty> kKindTitles(
    "fetch-queue mismatch (RuntimeError)",
    "trace invalidated: the pass is longer than the trace (warning)",
    "trace invalidated: another module at this step (warning)",
    "in-flight parameters at the end of a pass (RuntimeError)", "parameter status assertion",
    "a partitioned parameter used as a tensor",
    "a param gathered again while the in-flight registry holds it (RuntimeError)",
    "a param partitioned while in flight (AssertionError)",
    "the trace's steps not found under the module ids (IndexError)",
    "nested GatheredParameters blocks over one param (RuntimeError)",
    "a param freed while a module uses it (RuntimeError)",
    "a loss without grad refused by engine.backward (AssertionError)",
    "a returned parameter's gradient of the wrong shape (RuntimeError)",
    "a gradient stored into a partitioned parameter (RuntimeError)",
    "a gradient smaller than its parameter at the reduction (RuntimeError)",
    "a gradient never reduced (RuntimeError)", "a checkpoint loaded into partitions (RuntimeError)",
    "a param twice in the reduce bucket (AssertionError)",
    "trainable params of several dtypes (AssertionError)",
    "a post-backward hook with no active backward module (AssertionError)");

}  // namespace

std::string scenario_skeleton(const std::vector<ParamSummary>& params) {
  // The module tree from the names: each dotted prefix is a module.
  std::map<std::string, std::vector<const ParamSummary*>> own;
  std::set<std::string> modules;
  int64_t largest_persistent = -1;
  for (const ParamSummary& param : params) {
    if (param.name.empty()) {
      continue;
    }
    const std::string owner = owner_of(param.name);
    own[owner].push_back(&param);
    for (size_t dot = 0; (dot = owner.find('.', dot)) != std::string::npos; ++dot) {
      modules.insert(owner.substr(0, dot));
    }
    modules.insert(owner);
    if (param.persist) {
      largest_persistent = std::max(largest_persistent, param.ds_numel);
    }
  }
  modules.erase("");
  // Registration order: DeepSpeed numbers parameters in named_parameters() order, so a module
  // comes where its first parameter's id does.
  std::map<std::string, int64_t> first_id;
  for (const ParamSummary& param : params) {
    for (const std::string& module : modules) {
      if (param.name.starts_with(module + ".")) {
        auto [it, added] = first_id.emplace(module, param.id);
        it->second = added ? param.id : std::min(it->second, param.id);
      }
    }
  }
  const auto by_first_id = [&](std::vector<std::string>& names) {
    std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
      return first_id[a] < first_id[b];
    });
  };
  for (auto& [module, list] : own) {
    std::stable_sort(list.begin(), list.end(),
                     [](const ParamSummary* a, const ParamSummary* b) { return a->id < b->id; });
  }
  std::string out =
      "name: from-explain\n"
      "world_size: 2                     # the run's number of ranks\n"
      "deepspeed:\n"
      "  zero_optimization:\n"
      "    stage: 3\n";
  if (largest_persistent >= 0) {
    out += fmt::format(
        "    stage3_param_persistence_threshold: {}   # the persistent ones stay persistent\n",
        largest_persistent);
  }
  std::set<std::string> seen;
  std::function<void(const std::string&, int)> emit = [&](const std::string& module, int depth) {
    const std::string indent(static_cast<size_t>(depth) * 2, ' ');
    const std::string name = module.substr(module.rfind('.') + 1);
    out += fmt::format("{}- name: {}\n", indent, name);
    const auto found = own.find(module);
    if (found != own.end()) {
      out += fmt::format("{}  params:\n", indent);
      for (const ParamSummary* param : found->second) {
        if (!seen.insert(param->name).second) {
          continue;
        }
        out += fmt::format(
            "{}    {}: {{shape: [{}]{}}}\n", indent, param->name.substr(param->name.rfind('.') + 1),
            fmt::join(param->ds_shape, ", "), param->requires_grad ? "" : ", frozen: true");
      }
    }
    std::vector<std::string> children;
    for (const std::string& other : modules) {
      if (owner_of(other) == module && other != module) {
        children.push_back(other);
      }
    }
    by_first_id(children);
    if (!children.empty()) {
      out += fmt::format("{}  children:\n", indent);
      for (const std::string& child : children) {
        emit(child, depth + 2);
      }
    }
  };
  out += "model:\n  name: model\n";
  std::vector<std::string> top;
  for (const std::string& module : modules) {
    if (module.find('.') == std::string::npos) {
      top.push_back(module);
    }
  }
  by_first_id(top);
  if (!top.empty()) {
    out += "  children:\n";
    for (const std::string& module : top) {
      emit(module, 2);
    }
  }
  out +=
      "  # forward: what each module calls and reads, in order (docs/scenario-format.md):\n"
      "  # `call: child`, `access: child.weight` (kind: metadata for .dtype/.shape), checkpoints.\n"
      "schedule:                         # the run as it went: steps, save, restart, load\n"
      "  - train: {steps: 1}\n";
  return out;
}

std::string explain_ds_messages(const std::vector<DsMessage>& messages) {
  std::string out;
  std::vector<ParamSummary> named;
  for (size_t i = 0; i < messages.size(); ++i) {
    const DsMessage& message = messages[i];
    out += fmt::format("{}[{}] line {}: {}\n  {}\n", i == 0 ? "" : "\n", i + 1, message.line,
                       kKindTitles[message.kind], message.text);
    switch (message.kind) {
    case DsMessage::Kind::TracingError:
      explain_tracing_error(out, message);
      break;
    case DsMessage::Kind::TraceTooShort:
      explain_short_trace(out, message);
      break;
    case DsMessage::Kind::ModuleMismatch:
      explain_module_mismatch(out, message);
      break;
    case DsMessage::Kind::InflightParams:
      explain_inflight(out, message);
      break;
    case DsMessage::Kind::NotAvailable:
      explain_not_available(out, message);
      break;
    case DsMessage::Kind::PartitionedUsed:
      explain_partitioned_used(out, message);
      break;
    default:  // RegistryEntryLeft and after
      write_reasoning(out,
                      kReasoners[static_cast<size_t>(message.kind) -
                                 static_cast<size_t>(DsMessage::Kind::RegistryEntryLeft)](message));
      break;
    }
    named.insert(named.end(), message.expected.begin(), message.expected.end());
    named.insert(named.end(), message.got.begin(), message.got.end());
  }
  out += "\nNext step:\n";
  bullet(out,
         "Record the run: `pip install tools/recorder`, then run the training unchanged with "
         "ZFETCH_RECORD=DIR set. It writes one trace and one scenario per rank, and `zfetch run "
         "DIR/scenario.rank0.yaml` reproduces the run with the cause of its failure.");
  const bool any_named = std::any_of(named.begin(), named.end(),
                                     [](const ParamSummary& p) { return !p.name.empty(); });
  if (any_named) {
    bullet(out,
           "Or write the scenario by hand from this skeleton of the parameters the messages name, "
           "and `zfetch run` it under both --discovery policies:");
    out += "\n";
    out += scenario_skeleton(named);
  }
  return out;
}

}  // namespace zfetch::tools
