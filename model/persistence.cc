// named_parameters() order and DeepSpeed's greedy persistence selection.
#include "model/persistence.h"

namespace zfetch::model {

ParamIndex canonical(const Scenario& scenario, ParamIndex param) {
  // The loader rejects cycles; the bound keeps a hand-built Scenario from looping forever.
  for (size_t hops = 0; hops <= scenario.params.size(); ++hops) {
    const ParamIndex next = scenario.params[param].tied_to;
    if (next == kNone) {
      break;
    }
    param = next;
  }
  return param;
}

std::vector<ParamIndex> parameter_order(const Scenario& scenario) {
  // Scenario::params is already in module pre-order with each module's params in order;
  // named_parameters() de-duplicates by object identity (its `memo` set).
  std::vector<ParamIndex> order;
  std::vector<bool> seen(scenario.params.size(), false);
  for (const ModuleSpec& module : scenario.modules) {
    for (ParamIndex param : module.params) {
      const ParamIndex object = canonical(scenario, param);
      if (!seen[object]) {
        seen[object] = true;
        order.push_back(object);
      }
    }
  }
  return order;
}

std::vector<bool> select_persistent(const Scenario& scenario, const ZeroConfig& zero) {
  std::vector<bool> persistent(scenario.params.size(), false);
  // mark_persistent_parameters: one pass with a running total. A param that would push the
  // total over the model threshold is skipped, and later, smaller params may still fit
  // (`continue`, not `break`).
  int64_t total = 0;
  for (ParamIndex param : parameter_order(scenario)) {
    const int64_t numel = scenario.params[param].numel;
    if (numel > zero.model_persistence_threshold - total) {  // numel + total > threshold
      continue;
    }
    if (numel <= zero.param_persistence_threshold) {
      persistent[param] = true;
      total += numel;
    }
  }
  for (ParamIndex param = 0; param < scenario.params.size(); ++param) {
    persistent[param] = persistent[canonical(scenario, param)];
  }
  return persistent;
}

}  // namespace zfetch::model
