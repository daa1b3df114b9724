// InvariantChecker: residency replayed from events, checked at every transition and compute.
#include "sim/explore/invariants.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/leaves.h"
#include "model/persistence.h"
#include "trace/names.h"

namespace zfetch::sim {

using trace::EventKind;
using trace::Phase;
using trace::Status;

std::vector<std::vector<model::ParamIndex>> own_fetch_lists(const model::Scenario& scenario) {
  const size_t nm = scenario.modules.size();
  const std::vector<uint8_t> leaves = model::z3_leaf_modules(scenario);
  std::vector<std::vector<model::ParamIndex>> direct(nm);
  std::vector<std::vector<model::ParamIndex>> recursive(nm);
  const auto add = [](std::vector<model::ParamIndex>& list, model::ParamIndex p) {
    if (std::find(list.begin(), list.end(), p) == list.end()) {
      list.push_back(p);
    }
  };
  for (size_t i = nm; i-- > 0;) {  // pre-order: children come after their parent
    for (model::ParamIndex p : scenario.modules[i].params) {
      add(direct[i], model::canonical(scenario, p));
    }
    recursive[i] = direct[i];
    for (model::ModuleIndex child : scenario.modules[i].children) {
      for (model::ParamIndex p : recursive[child]) {
        add(recursive[i], p);
      }
    }
  }
  for (size_t i = 0; i < nm; ++i) {
    if (leaves[i]) {
      direct[i] = std::move(recursive[i]);
    }
  }
  return direct;
}

InvariantChecker::InvariantChecker(const model::Scenario& scenario)
    : scenario_(scenario), fetch_list_(own_fetch_lists(scenario)) {
  canonical_.resize(scenario.params.size());
  for (model::ParamIndex p = 0; p < scenario.params.size(); ++p) {
    canonical_[p] = model::canonical(scenario, p);
  }
  reset();
}

void InvariantChecker::reset() {
  residency_.assign(scenario_.params.size(), Residency::Unknown);
  group_.assign(scenario_.params.size(), -1);
  open_forwards_.assign(scenario_.modules.size(), 0);
}

void InvariantChecker::fail(const trace::Event& e, std::string_view what) {
  if (violation_.empty()) {
    violation_ = fmt::format("event #{} ({} of '{}' '{}', rank {}, engine {}, micro-step {}): {}",
                             e.seq, trace::format_as(e.kind), e.module, e.param, e.rank, e.engine,
                             e.micro_step, what);
  }
}

void InvariantChecker::on_event(const trace::Event& e) {
  if (e.rank != rank_ || e.kind == EventKind::EngineInit) {
    rank_ = e.rank;
    reset();
  }
  const uint32_t p = e.param_index;
  const bool has_param = p != trace::Event::kNoIndex && p < residency_.size();
  Residency* r = has_param ? &residency_[canonical_[p]] : nullptr;
  switch (e.kind) {
  case EventKind::Gather:
  case EventKind::Prefetch:
    if (r != nullptr) {
      if (*r == Residency::Inflight || *r == Residency::Available) {
        fail(e, "a gather started on a parameter that is not NOT_AVAILABLE");
      }
      *r = Residency::Inflight;
      group_[canonical_[p]] = e.group;
    }
    break;
  case EventKind::GetterGather:
  case EventKind::PersistentGather:
    if (r != nullptr) {
      if (*r == Residency::Inflight || *r == Residency::Available) {
        fail(e, "a synchronous gather of a parameter that is not NOT_AVAILABLE");
      }
      *r = Residency::Available;
    }
    break;
  case EventKind::Wait:
    // One handle completes its whole coalesced gather; a later wait on another param of the
    // same gather finds it AVAILABLE already.
    if (r != nullptr) {
      if (*r == Residency::NotAvailable) {
        fail(e, "a wait on a parameter that is NOT_AVAILABLE");
      }
      *r = Residency::Available;
      for (size_t q = 0; q < residency_.size(); ++q) {
        if (residency_[q] == Residency::Inflight && group_[q] == e.group) {
          residency_[q] = Residency::Available;
        }
      }
    }
    break;
  case EventKind::Release:
    if (r != nullptr) {
      for (model::ModuleIndex m = 0; m < open_forwards_.size(); ++m) {
        const auto& list = fetch_list_[m];
        if (open_forwards_[m] > 0 && m != e.module_index &&
            std::find(list.begin(), list.end(), canonical_[p]) != list.end()) {
          fail(e, fmt::format("released while '{}', which uses it, is still in its forward",
                              trace::display_module_name(scenario_.modules[m].qualified_name)));
        }
      }
      *r = Residency::NotAvailable;
    }
    break;
  case EventKind::PartitionAll:
    if (r != nullptr) {
      *r = Residency::NotAvailable;
    }
    break;
  case EventKind::Access:
    if (r != nullptr && *r != Residency::Unknown) {
      const Status implied = *r == Residency::Available  ? Status::Available
                             : *r == Residency::Inflight ? Status::Inflight
                                                         : Status::NotAvailable;
      if (implied != e.status) {
        fail(e, "the access reports a residency the events before it do not imply");
      }
    }
    break;
  case EventKind::Fetch:  // a module holds its params from its fetch on (the consumers set)
    if (e.module_index < open_forwards_.size() &&
        (e.phase == Phase::Fwd || e.phase == Phase::Eval)) {
      ++open_forwards_[e.module_index];
    }
    break;
  case EventKind::ModulePost:
    if (e.module_index < open_forwards_.size() &&
        (e.phase == Phase::Fwd || e.phase == Phase::Eval) && open_forwards_[e.module_index] > 0) {
      --open_forwards_[e.module_index];
    }
    break;
  case EventKind::PassStart:
    std::fill(open_forwards_.begin(), open_forwards_.end(), 0);
    break;
  case EventKind::Compute:
    if (e.module_index < fetch_list_.size() && !scenario_.zenflow) {
      for (model::ParamIndex q : fetch_list_[e.module_index]) {
        const Residency now = residency_[q];
        if (now == Residency::NotAvailable || now == Residency::Inflight) {
          fail(e,
               fmt::format("computes with '{}' while it is {}", scenario_.params[q].qualified_name,
                           now == Residency::Inflight ? "INFLIGHT" : "NOT_AVAILABLE"));
          break;
        }
      }
    }
    break;
  default:
    break;
  }
}

}  // namespace zfetch::sim
