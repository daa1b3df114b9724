// The state a scenario defines before any engine exists.
#include "sim/initial_state.h"

#include <cstdint>
#include <vector>

#include "model/leaves.h"
#include "model/partition.h"
#include "model/persistence.h"

namespace zfetch::sim {

ParamState initial_param_state(const model::Scenario& scenario) {
  ParamState params;
  const size_t np = scenario.params.size();
  const auto world = scenario.world_size;
  params.ds_id.assign(np, -1);
  params.status.assign(np, Status::NotAvailable);
  params.persist.assign(np, 0);
  params.is_external.assign(np, 0);
  params.consumers.resize(np);
  for (IdSet& s : params.consumers) {
    s.reserve(4);
  }
  params.attributed_owner.assign(np, -1);
  params.inflight_group.assign(np, -1);
  params.inflight_shaped.assign(np, 0);
  params.numel.resize(np);
  params.partition_numel.resize(np);
  params.bytes.resize(np);
  params.frozen.resize(np);
  params.multi_dim.resize(np);
  params.compute_layout.assign(np, 0);
  params.swapped_in.assign(np, 0);
  params.fast_sharded.assign(np, 0);
  params.has_grad.assign(np, 0);
  params.emptied_grad_numel.assign(np, -1);
  params.canonical.resize(np);
  for (size_t i = 0; i < np; ++i) {
    const model::ParamSpec& spec = scenario.params[i];
    const auto p = static_cast<ParamIndex>(i);
    params.canonical[p] = model::canonical(scenario, p);
    params.numel[p] = spec.numel;
    params.partition_numel[p] = model::partition_numel<int64_t>(spec.numel, world);
    params.bytes[p] = spec.numel * model::dtype_bytes(spec.dtype);
    params.frozen[p] = spec.frozen ? 1 : 0;
    params.multi_dim[p] = spec.shape.size() != 1 ? 1 : 0;
  }
  params.by_id = model::parameter_order(scenario);
  return params;
}

ModuleState initial_module_state(const model::Scenario& scenario, const ParamState& params) {
  ModuleState modules;
  const size_t nm = scenario.modules.size();
  // Hooks go to every module reached through children() from the root, but not below a z3
  // leaf (2.1). Param lists use canonical params, deduplicated (tied weights are one object).
  const std::vector<uint8_t> leaves = model::z3_leaf_modules(scenario);
  modules.ds_id.assign(nm, -1);
  modules.hooked.assign(nm, 0);
  modules.leaf.assign(nm, 0);
  modules.own_params.resize(nm);
  modules.direct_params.resize(nm);
  modules.recursive_params.resize(nm);
  modules.externals.resize(nm);
  modules.recompute.resize(nm);
  modules.grads_remaining.assign(nm, 0);
  // Deduplication by stamp, not by search: a module may hold tens of thousands of params.
  std::vector<uint32_t> seen(scenario.params.size(), 0);
  uint32_t stamp = 0;
  for (size_t i = 0; i < nm; ++i) {
    const auto m = static_cast<ModuleIndex>(i);
    const model::ModuleSpec& spec = scenario.modules[m];
    const bool parent_hooked =
        spec.parent == model::kNone || (modules.hooked[spec.parent] && !modules.leaf[spec.parent]);
    modules.hooked[m] = parent_hooked ? 1 : 0;
    modules.leaf[m] = leaves[m];
    ++stamp;
    for (ParamIndex p : spec.params) {
      const ParamIndex c = params.canonical[p];
      if (seen[c] != stamp) {
        seen[c] = stamp;
        modules.direct_params[m].push_back(c);
      }
    }
  }
  // Recursive lists: modules are in pre-order, so walk backwards and append children's.
  for (size_t i = nm; i-- > 0;) {
    const auto m = static_cast<ModuleIndex>(i);
    std::vector<ParamIndex>& rec = modules.recursive_params[m];
    rec = modules.direct_params[m];
    ++stamp;
    for (ParamIndex p : rec) {
      seen[p] = stamp;
    }
    for (ModuleIndex child : scenario.modules[m].children) {
      for (ParamIndex p : modules.recursive_params[child]) {
        if (seen[p] != stamp) {
          seen[p] = stamp;
          rec.push_back(p);
        }
      }
    }
  }
  for (size_t i = 0; i < nm; ++i) {
    const auto m = static_cast<ModuleIndex>(i);
    modules.own_params[m] =
        modules.leaf[m] ? modules.recursive_params[m] : modules.direct_params[m];
    modules.externals[m].reserve(4);
    modules.recompute[m].reserve(4);
  }
  return modules;
}

}  // namespace zfetch::sim
