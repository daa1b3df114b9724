// Explanations of fetch-queue mismatches (the shape of DeepSpeed issue #8874).
#include "sim/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "base/enum_names.h"
#include "model/scenario_writer.h"
#include "sim/coordinator.h"
#include "sim/ds_format.h"
#include "trace/names.h"

namespace zfetch::sim {
namespace {

// What an explanation calls the pass a phase belongs to; the phases outside a pass read as
// the schedule.
constexpr base::EnumNames<trace::Phase::Checkpoint> kPhaseWords("schedule", "forward", "backward",
                                                                "activation-checkpoint recompute",
                                                                "eval forward", "schedule",
                                                                "schedule");

std::string module_name(const model::Scenario& scenario, ModuleIndex m) {
  return std::string(trace::display_module_name(scenario.modules[m].qualified_name));
}

// Whether `p` is one of the params `m` fetches as its own (a z3 leaf: its whole subtree), not
// an external one.
bool own_param(const model::Scenario& scenario, ModuleIndex m, ParamIndex p, bool leaf) {
  for (ModuleIndex owner = scenario.params[p].owner; owner != model::kNone;
       owner = leaf ? scenario.modules[owner].parent : model::kNone) {
    if (owner == m) {
      return true;
    }
  }
  return false;
}

std::string param_list(const model::Scenario& scenario, std::span<const ParamIndex> ps) {
  std::string out;
  for (size_t i = 0; i < ps.size(); ++i) {
    out += i == 0 ? "" : i + 1 == ps.size() ? " and " : ", ";
    out += scenario.params[ps[i]].qualified_name;
  }
  return ps.empty() ? "nothing" : out;
}

bool contains(std::span<const ParamIndex> ps, ParamIndex p) {
  return std::find(ps.begin(), ps.end(), p) != ps.end();
}

struct GuardedCall {
  ModuleIndex caller = model::kNone;
  const model::Condition* when = nullptr;
};

void find_guarded_call(const std::vector<model::Op>& ops, ModuleIndex caller, ModuleIndex callee,
                       GuardedCall& found) {
  for (const model::Op& op : ops) {
    if (found.when != nullptr) {
      return;
    }
    if (op.kind == model::Op::Kind::Call && op.callee == callee && !op.when.always()) {
      found = {caller, &op.when};
      return;
    }
    find_guarded_call(op.body, caller, callee, found);
  }
}

// The first call of `callee` under a `when:` in any forward, in module order.
GuardedCall guarded_call(const model::Scenario& scenario, ModuleIndex callee) {
  GuardedCall found;
  for (size_t m = 0; m < scenario.modules.size() && found.when == nullptr; ++m) {
    find_guarded_call(scenario.modules[m].forward, static_cast<ModuleIndex>(m), callee, found);
  }
  return found;
}

}  // namespace

std::string explain_invalidation(const model::Scenario& scenario, const Invalidation& at) {
  std::string out = fmt::format(
      "- In the {} at engine {}, micro-step {} (rank {}), trace step {}: ", kPhaseWords[at.phase],
      at.engine, at.micro_step, at.rank, at.trace_step);
  if (at.cause == InvalidationCause::HooksRegisteredAgain) {  // no module found or expected
    out += fmt::format(
        "the ZeRO-3 hooks were registered on the model again (the end of "
        "unwrap_model_for_generation), and DeepSpeed (PR #8043) invalidates the trace, recorded "
        "in the {} with {} module{}, when that happens. The next pass records it again, and a "
        "trace thrown away by every generation is never used to prefetch.\n",
        kPhaseWords[at.recorded_phase], at.trace_length, at.trace_length == 1 ? "" : "s");
    return out;
  }
  const std::string found = module_name(scenario, at.found);
  if (at.cause == InvalidationCause::TraceTooShort) {
    out += fmt::format(
        "'{}' ran, but the trace, recorded in the {}, has only {} module{}, so it expected none.\n",
        found, kPhaseWords[at.recorded_phase], at.trace_length, at.trace_length == 1 ? "" : "s");
  } else {  // ModuleMismatch
    out += fmt::format("the trace, recorded in the {}, expected '{}' there, but '{}' ran.\n",
                       kPhaseWords[at.recorded_phase], module_name(scenario, at.expected), found);
  }
  const bool eval_now = at.phase == trace::Phase::Eval;
  const bool eval_recorded = at.recorded_phase == trace::Phase::Eval;
  if (eval_now != eval_recorded) {
    out += fmt::format(
        "  Cause: an eval pass. The trace was recorded in {} pass and this is {} one; DeepSpeed "
        "keeps one trace for both, and they run different modules in a different order.\n",
        eval_recorded ? "an eval" : "a training", eval_now ? "an eval" : "a training");
    return out;
  }
  for (ModuleIndex m : {at.expected, at.found}) {
    if (m == model::kNone) {
      continue;
    }
    const GuardedCall call = guarded_call(scenario, m);
    if (call.when != nullptr) {
      out += fmt::format(
          "  Cause: a branch. '{}' calls '{}' under `when: {}`, so it runs in some passes and "
          "not in others.\n",
          module_name(scenario, call.caller), module_name(scenario, m),
          model::condition_text(*call.when));
      if (!call.when->micro_steps.empty()) {
        // The place above counts micro-steps engine-wide; the condition, within the window.
        const int64_t window = scenario.config.gradient_accumulation_steps;
        out += fmt::format(
            "  (`window_micro_step` is the index within the accumulation window: micro-step {} "
            "is index {} of {}.)\n",
            at.micro_step, at.micro_step % window, window);
      }
      return out;
    }
  }
  out +=
      "  Cause: a changed module order: the modules ran in another order than when the trace "
      "was recorded.\n";
  return out;
}

std::string partition_reason(const Partitioned& partitioned) {
  const Context& at = partitioned.when;
  switch (partitioned.cause) {
  case PartitionCause::None:
  case PartitionCause::NewModel:
    return fmt::format("engine {} was built on a new model object, whose params start partitioned",
                       at.engine);
  case PartitionCause::NewEngine:
    return fmt::format(
        "engine {} was built on the same model object, and its gradient hooks partitioned every "
        "trainable param",
        at.engine);
  case PartitionCause::RecordingRelease:
    return fmt::format(
        "the recording pass partitioned it when its consumers released it (in the {} at engine "
        "{}, micro-step {}): a release in a recording pass partitions persistent params too, so "
        "the first replay after recording finds it partitioned",
        kPhaseWords[at.phase], at.engine, at.micro_step);
  case PartitionCause::Release:
    return fmt::format("its consumers released it in the {} at engine {}, micro-step {}",
                       kPhaseWords[at.phase], at.engine, at.micro_step);
  case PartitionCause::OptimizerStep:
    return fmt::format("optimizer step {} partitioned every param", at.step);
  case PartitionCause::OverflowSkip:
    return fmt::format(
        "fp16 loss scaling skipped optimizer step {} for an overflow: the step partitioned every "
        "param and, skipped before _post_step, gathered no persistent one again",
        at.step);
  case PartitionCause::CheckpointSave:
    return fmt::format("save_checkpoint partitioned every param (engine {}, its prologue)",
                       at.engine);
  case PartitionCause::CheckpointLoad:
    return fmt::format("load_checkpoint partitioned every param (engine {}, its prologue)",
                       at.engine);
  case PartitionCause::EmptyPartitionCache:
    return fmt::format(
        "empty_partition_cache() partitioned every param, persistent ones included (engine {})",
        at.engine);
  case PartitionCause::UnwrapExit:
    return fmt::format(
        "the end of unwrap_model_for_generation (its GatheredParameters) partitioned every "
        "param, persistent ones included (engine {}, step {})",
        at.engine, at.step);
  case PartitionCause::GatheredExit:
    return fmt::format(
        "a GatheredParameters block partitioned it on exit (engine {}), persistent or not",
        at.engine);
  }
  return "";
}

std::string explain_mismatch(const model::Scenario& scenario, const ParamState& params,
                             const ModuleState& modules, const History& history,
                             Discovery discovery, const Context& now, const MismatchFacts& facts) {
  std::string out;
  const std::string where = module_name(scenario, facts.module);
  out += fmt::format(
      "In the {} of '{}' (module id {}) at trace step {}, engine {}, micro-step {}, "
      "the fetch queue did not hold what the module fetches.\n",
      kPhaseWords[now.phase], where, modules.ds_id[facts.module], facts.step_id, now.engine,
      now.micro_step);
  out += fmt::format("- '{}' fetches {}; the queue gave {}.\n", where,
                     param_list(scenario, facts.need), param_list(scenario, facts.got));
  const bool leaf = modules.leaf[facts.module] != 0;
  for (ParamIndex p : facts.need) {
    if (contains(facts.got, p)) {
      continue;  // the queue gave it: nothing to explain
    }
    const std::string& name = scenario.params[p].qualified_name;
    const Registration* reg = nullptr;
    for (const Registration& r : history.registrations) {
      if (r.param == p && r.module == facts.module) {
        reg = &r;
      }
    }
    if (own_param(scenario, facts.module, p, leaf)) {
      out += fmt::format(
          "- {} is a parameter of '{}' itself; the recorded trace has no entry for "
          "it here.\n",
          name, where);
    } else if (reg != nullptr && reg->trace_complete) {
      out += fmt::format(
          "- {} was registered as an external parameter of '{}' by an access in its {} at "
          "engine {}, micro-step {}, when the trace was already complete. It was {} then",
          name, where, kPhaseWords[reg->when.phase], reg->when.engine, reg->when.micro_step,
          kDsStatusNames[reg->status_at_access]);
      if (reg->status_at_access == Status::NotAvailable) {
        out += params.persist[p]
                   ? fmt::format(", although persistent: {}", partition_reason(reg->partitioned))
                   : std::string();
        out += ". The getter therefore gathered it and registered the dependency.\n";
      } else {
        out += ".\n";
      }
      const RecordedAccess* seen = nullptr;
      for (const RecordedAccess& a : history.recorded_accesses) {
        if (a.param == p && a.module == facts.module && a.when.engine == reg->when.engine) {
          seen = &a;
        }
      }
      if (seen != nullptr && !seen->registered) {
        out += fmt::format(
            "- The trace was recorded in micro-step {}, when the same access found {} {}{}; "
            "the {} policy discovers only NOT_AVAILABLE parameters, so the recorded trace has "
            "no entry for it at '{}'.\n",
            seen->when.micro_step, name, kDsStatusNames[seen->status],
            params.persist[p] ? " (persistent, so resident)" : "", format_as(discovery), where);
      } else {
        out += fmt::format(
            "- The recording pass never made that access, so the recorded trace has no entry "
            "for {} at '{}'.\n",
            name, where);
      }
    } else {
      out += fmt::format(
          "- {} (a parameter of '{}') is fetched by '{}' as an external parameter; the recorded "
          "trace has no entry for it here.\n",
          name, module_name(scenario, scenario.params[p].owner), where);
    }
  }
  for (ParamIndex p : facts.got) {
    if (!contains(facts.need, p)) {
      out += fmt::format("- The queue gave {}, which '{}' does not fetch here.\n",
                         scenario.params[p].qualified_name, where);
    }
  }
  if (!facts.popped.empty()) {
    const QueueEntry& first = facts.popped.front();
    const auto s = static_cast<size_t>(first.step);
    const std::string owner =
        s < facts.order.size() ? module_name(scenario, facts.order[s].module) : "?";
    out += fmt::format("- The queue's next entry was {}@{} (for '{}' at trace step {}).\n",
                       scenario.params[first.param].qualified_name, first.step, owner, first.step);
  } else {
    out += "- The fetch queue was empty.\n";
  }
  return out;
}

}  // namespace zfetch::sim
