// Gradient reduction bookkeeping of one backward.
#include "sim/grad_reduction.h"

namespace zfetch::sim {

GradReduction::GradReduction(const model::Scenario& scenario, const ParamState& params,
                             const ModuleState& modules)
    : params_(params),
      modules_(modules),
      leaf_param_(scenario.params.size(), 0),
      added_in_(scenario.params.size(), 0),
      added_by_(scenario.params.size(), -1) {
  bucket_.reserve(scenario.params.size());
  // z3_leaf_parameter: every param of a z3 leaf module's subtree (own_params is recursive there).
  for (size_t m = 0; m < modules.leaf.size(); ++m) {
    if (modules.leaf[m]) {
      for (ParamIndex p : modules.own_params[m]) {
        leaf_param_[static_cast<size_t>(params.canonical[p])] = 1;
      }
    }
  }
}

void GradReduction::begin_backward() {
  ++backward_;
  duplicate_.reset();
  bucket_.clear();
}

void GradReduction::on_accumulated(ParamIndex p, int32_t task_region) {
  if (!leaf_param_[static_cast<size_t>(p)]) {
    add(p, task_region);
  }
}

void GradReduction::on_leaf_module_backward(ModuleIndex m, int32_t task_region) {
  for (ParamIndex p : modules_.own_params[m]) {
    if (!params_.frozen[p]) {
      add(p, task_region);
    }
  }
}

void GradReduction::add(ParamIndex p, int32_t task_region) {
  const auto i = static_cast<size_t>(p);
  if (added_in_[i] == backward_) {
    if (!duplicate_) {
      duplicate_ = Duplicate{p, added_by_[i], task_region, leaf_param_[i] != 0};
    }
    return;
  }
  added_in_[i] = backward_;
  added_by_[i] = task_region;
  bucket_.push_back(p);
}

}  // namespace zfetch::sim
