// Explanations of fetch-queue mismatches (the shape of DeepSpeed issue #8874).
#include "sim/explain.h"

#include <fmt/format.h>

#include "base/enum_names.h"
#include "sim/coordinator.h"
#include "sim/ds_format.h"

namespace zfetch::sim {
namespace {

// What an explanation calls the pass a phase belongs to; the phases outside a pass read as
// the schedule.
constexpr base::EnumNames<trace::Phase::Checkpoint> kPhaseWords("schedule", "forward", "backward",
                                                                "activation-checkpoint recompute",
                                                                "eval forward", "schedule",
                                                                "schedule");

std::string module_name(const model::Scenario& scenario, ModuleIndex m) {
  const std::string& q = scenario.modules[m].qualified_name;
  return q.empty() ? fmt::format("{} (the root)", scenario.modules[m].name) : q;
}

}  // namespace

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
  for (ParamIndex p : facts.need) {
    const std::string& name = scenario.params[p].qualified_name;
    const Registration* reg = nullptr;
    for (const Registration& r : history.registrations) {
      if (r.param == p && r.module == facts.module) {
        reg = &r;
      }
    }
    if (reg != nullptr && reg->trace_complete) {
      out += fmt::format(
          "- {} was registered as an external parameter of '{}' by an access in its {} at "
          "engine {}, micro-step {}, when the trace was already complete; it was {} then",
          name, where, kPhaseWords[reg->when.phase], reg->when.engine, reg->when.micro_step,
          kDsStatusNames[reg->status_at_access]);
      out += reg->status_at_access == Status::NotAvailable
                 ? ", so the getter gathered it and registered the dependency.\n"
                 : ".\n";
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
      out += fmt::format("- '{}' needs {}, which the recorded trace does not list next.\n", where,
                         name);
    }
  }
  if (!facts.popped.empty()) {
    const QueueEntry& first = facts.popped.front();
    const auto s = static_cast<size_t>(first.step);
    const std::string owner =
        s < facts.order.size() ? module_name(scenario, facts.order[s].module) : "?";
    out += fmt::format("- The queue's next entry is {}@{} (for '{}' at trace step {}).\n",
                       scenario.params[first.param].qualified_name, first.step, owner, first.step);
  } else {
    out += "- The fetch queue was empty.\n";
  }
  out += "To avoid it:\n";
  if (discovery == Discovery::ResidentSkip) {
    out +=
        "- run with --discovery residency-independent (DeepSpeed PR #8875), which discovers "
        "external accesses whatever the parameter's residency;\n";
  }
  for (ParamIndex p : facts.need) {
    const std::string& name = scenario.params[p].qualified_name;
    if (params.persist[p]) {
      out += fmt::format(
          "- or set stage3_param_persistence_threshold below {} so that {} is not persistent "
          "(it is then NOT_AVAILABLE at every access and is discovered while recording);\n",
          params.numel[p], name);
    }
    out += fmt::format(
        "- or register it up front: deepspeed.zero.register_external_parameter({}, {}).\n", where,
        name);
  }
  return out;
}

}  // namespace zfetch::sim
