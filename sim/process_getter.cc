// The parameter getter of one process: ZeROOrderedDict.__getitem__'s discovery of external
// params and dangling returned params (semantics 5.2, 5.3, 5.6, 5.7).
#include <fmt/format.h>

#include <algorithm>

#include "sim/process.h"

namespace zfetch::sim {

using model::Op;
using trace::EventKind;

bool Process::access(ModuleIndex context, const Op& op, bool rg) {
  const ParamIndex p = params_.canonical[op.param];
  const ModuleIndex owner = scenario_.params[op.param].owner;
  const Status status = params_.status[p];
  const ModuleIndex top = stack_top();
  // The getter's call is an event during a call of the root (engine forward or generate's
  // direct call), where the getter may act, and in a replay inside backward, where it does
  // nothing (`_in_forward` is off) but the read is what a recompute mismatch comes from; a
  // recorder of a real run writes both. A module called outside any root call (generate's
  // encoder call, a PEFT base model's loop) reads through it to no effect: no event, as in real
  // recordings (docs/trace-format.md, "Accesses").
  if (in_forward_ || in_graph_task_) {
    emitter_.emit(EventKind::Access, top == kForeign ? model::kNone : top, p, -1, -1, status);
  }
  // Discovery happens only in an eager forward, inside a call of the root (2.12, 10.18).
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
  } else if (eager && owner != top) {
    note_hazard(top, p, status);
  }
  if (eager && coordinator_->mode() == TraceMode::Record) {
    history_.add(RecordedAccess{top, p, status, registered, emitter_.context});
  }
  if (op.access == model::AccessKind::Data) {
    // An INFLIGHT param whose gather already set its data reads with its full shape (the values
    // are only complete after the wait); one whose data is still empty fails like a real use.
    const bool shaped = params_.status[p] == Status::Available ||
                        (params_.status[p] == Status::Inflight && params_.inflight_shaped[p]);
    if (!shaped) {
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
    if (grad_enabled_ && !params_.frozen[p]) {
      // The read is an op on the param: its gradient flows back through it (semantics 2.6).
      graph_.add_data_read(context);
      graph_.add_use(p);
      return true;
    }
    return rg;
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
                            coordinator_->mode() == TraceMode::Complete,
                            history_.last_partitioned[p]});
}

void Process::note_hazard(ModuleIndex m, ParamIndex p, Status status) {
  const std::vector<ParamIndex>& ext = modules_.externals[m];
  if (std::find(ext.begin(), ext.end(), p) != ext.end()) {
    return;  // discovered earlier (while NOT_AVAILABLE): the trace has the dependency
  }
  // A module still in its forward whose own fetch list has the param (its own params; a z3
  // leaf's whole subtree) fetched it in its pre-hook and holds it until its post-hook: the
  // residency comes from that fetch, not from timing or persistence.
  for (ModuleIndex open : fwd_stack_) {
    if (open != kForeign) {
      const std::vector<ParamIndex>& fetched = modules_.own_params[open];
      if (std::find(fetched.begin(), fetched.end(), p) != fetched.end()) {
        return;
      }
    }
  }
  for (const Hazard& h : hazards_) {
    if (h.module == m && h.param == p) {
      return;
    }
  }
  if (hazards_.size() == Outcome::kMaxHazards) {
    return;
  }
  const Context& now = emitter_.context;
  hazards_.push_back(Hazard{m, p, status, params_.persist[p] != 0, now.phase, now.rank, now.engine,
                            now.step, now.micro_step});
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

}  // namespace zfetch::sim
