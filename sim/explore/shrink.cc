// shrink_scenario(): one-part-at-a-time removals and simplifications, kept while they fail.
#include "sim/explore/shrink.h"

#include <optional>
#include <type_traits>
#include <vector>

#include "model/load.h"
#include "model/scenario_writer.h"

namespace zfetch::sim {
namespace {

using model::kNone;
using model::ModuleIndex;
using model::Op;
using model::ParamIndex;
using model::Scenario;
using model::ScheduleItem;

// A candidate is valid when its own YAML loads; the loaded form is what gets tested, so every
// kept scenario is exactly what the written file will say.
std::optional<Scenario> reload(const Scenario& candidate) {
  model::LoadResult loaded =
      model::parse_scenario_text("shrink.yaml", model::write_scenario_yaml(candidate));
  if (!loaded.scenario) {
    return std::nullopt;
  }
  loaded.scenario->path = candidate.path;
  return std::move(loaded.scenario);
}

// Ops with references to removed modules or params dropped, indices renumbered; a region left
// empty goes too.
std::vector<Op> filter_ops(const std::vector<Op>& ops, const std::vector<ModuleIndex>& module_map,
                           const std::vector<ParamIndex>& param_map) {
  std::vector<Op> out;
  for (const Op& op : ops) {
    Op copy = op;
    if (op.kind == Op::Kind::Call) {
      if (module_map[op.callee] == kNone) {
        continue;
      }
      copy.callee = module_map[op.callee];
      if (op.input == model::CallInput::OutputOf) {
        copy.input_from = module_map[op.input_from];
        if (copy.input_from == kNone) {
          copy.input = model::CallInput::Running;
        }
      }
    } else if (op.kind == Op::Kind::Access || op.kind == Op::Kind::Return) {
      if (param_map[op.param] == kNone) {
        continue;
      }
      copy.param = param_map[op.param];
    } else {
      copy.body = filter_ops(op.body, module_map, param_map);
      if (copy.body.empty()) {
        continue;
      }
    }
    out.push_back(std::move(copy));
  }
  return out;
}

// The scenario without the modules and params marked gone (a removed module takes its subtree
// and its params; ties to a removed param are undone).
Scenario rebuild(const Scenario& s, std::vector<bool> module_gone, std::vector<bool> param_gone) {
  for (ModuleIndex m = 1; m < s.modules.size(); ++m) {  // pre-order: parents first
    module_gone[m] = module_gone[m] || module_gone[s.modules[m].parent];
  }
  for (ParamIndex p = 0; p < s.params.size(); ++p) {
    param_gone[p] = param_gone[p] || module_gone[s.params[p].owner];
  }
  std::vector<ModuleIndex> module_map(s.modules.size(), kNone);
  std::vector<ParamIndex> param_map(s.params.size(), kNone);
  // Everything but the tree, which is rebuilt below, and what names its modules (the
  // expectations and the graph).
  Scenario out = s;
  out.modules.clear();
  out.params.clear();
  out.expectations.clear();
  out.graph = model::ModuleGraph();
  for (ModuleIndex m = 0; m < s.modules.size(); ++m) {
    if (!module_gone[m]) {
      module_map[m] = static_cast<ModuleIndex>(out.modules.size());
      out.modules.push_back(s.modules[m]);
    }
  }
  for (ParamIndex p = 0; p < s.params.size(); ++p) {
    if (!param_gone[p]) {
      param_map[p] = static_cast<ParamIndex>(out.params.size());
      out.params.push_back(s.params[p]);
    }
  }
  for (model::ParamSpec& p : out.params) {
    p.owner = module_map[p.owner];
    p.tied_to = p.tied_to == kNone ? kNone : param_map[p.tied_to];
  }
  for (model::ModuleSpec& m : out.modules) {
    m.parent = m.parent == kNone ? kNone : module_map[m.parent];
    std::vector<ModuleIndex> children;
    for (ModuleIndex c : m.children) {
      if (module_map[c] != kNone) {
        children.push_back(module_map[c]);
      }
    }
    m.children = std::move(children);
    std::vector<ParamIndex> params;
    for (ParamIndex p : m.params) {
      if (param_map[p] != kNone) {
        params.push_back(param_map[p]);
      }
    }
    m.params = std::move(params);
    m.forward = filter_ops(m.forward, module_map, param_map);
  }
  return out;
}

// Every operation as (module, path of indices through nested bodies), in program order.
struct OpSite {
  ModuleIndex module;
  std::vector<size_t> path;
};

void collect_sites(ModuleIndex m, const std::vector<Op>& ops, std::vector<size_t>& prefix,
                   std::vector<OpSite>& out) {
  for (size_t i = 0; i < ops.size(); ++i) {
    prefix.push_back(i);
    out.push_back({m, prefix});
    collect_sites(m, ops[i].body, prefix, out);
    prefix.pop_back();
  }
}

std::vector<OpSite> op_sites(const Scenario& s) {
  std::vector<OpSite> sites;
  std::vector<size_t> prefix;
  for (ModuleIndex m = 0; m < s.modules.size(); ++m) {
    collect_sites(m, s.modules[m].forward, prefix, sites);
  }
  return sites;
}

// The list that holds the op at `site`, and its index there.
std::vector<Op>& container_of(Scenario& s, const OpSite& site, size_t& index) {
  std::vector<Op>* list = &s.modules[site.module].forward;
  for (size_t k = 0; k + 1 < site.path.size(); ++k) {
    list = &(*list)[site.path[k]].body;
  }
  index = site.path.back();
  return *list;
}

enum class OpEdit { Remove, Unwrap, DropCondition, RepeatOnce };

std::optional<Scenario> edit_op(const Scenario& s, const OpSite& site, OpEdit edit) {
  Scenario out = s;
  size_t i = 0;
  std::vector<Op>& list = container_of(out, site, i);
  Op& op = list[i];
  switch (edit) {
  case OpEdit::Remove:
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  case OpEdit::Unwrap: {
    if (op.kind != Op::Kind::Checkpoint && op.kind != Op::Kind::Repeat) {
      return std::nullopt;
    }
    std::vector<Op> body = std::move(op.body);
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(i), body.begin(), body.end());
    break;
  }
  case OpEdit::DropCondition:
    if (op.when.always()) {
      return std::nullopt;
    }
    op.when = {};
    break;
  case OpEdit::RepeatOnce:
    if (op.kind != Op::Kind::Repeat || op.count == 1) {
      return std::nullopt;
    }
    op.count = 1;
    break;
  }
  return out;
}

// Config and size simplifications, each toward DeepSpeed's default or the smallest value.
std::optional<Scenario> simplify(const Scenario& s, size_t which) {
  Scenario out = s;
  const model::DeepSpeedConfig defaults;
  model::ZeroConfig& z = out.config.zero;
  // Sets `field` to `value`; whether that changed it.
  const auto set_to = []<typename T>(T& field, std::type_identity_t<T> value) {
    const bool differs = field != value;
    field = value;
    return differs;
  };
  bool changed = true;
  switch (which) {
  case 0:
    changed = set_to(out.world_size, 1);
    break;
  case 1:
    changed = out.world_size > 2;
    out.world_size = 2;
    break;
  case 2:
    changed = set_to(out.config.gradient_accumulation_steps, 1);
    break;
  case 3:
    changed = set_to(out.config.train_micro_batch_size_per_gpu, 1);
    break;
  case 4:
    changed = set_to(z.prefetch_bucket_size, defaults.zero.prefetch_bucket_size);
    break;
  case 5:
    changed = set_to(z.max_reuse_distance, defaults.zero.max_reuse_distance);
    break;
  case 6:
    changed = set_to(z.max_live_parameters, defaults.zero.max_live_parameters);
    break;
  case 7:
    changed = set_to(z.model_persistence_threshold, defaults.zero.model_persistence_threshold);
    break;
  case 8:
    changed = set_to(z.module_granularity_threshold, 0);
    break;
  case 9:
    changed = z.offload_param_set;
    z.offload_param_set = false;
    z.offload_param = {};
    break;
  case 10:
    changed = z.allgather_sequential || z.use_all_reduce_for_fetch_params;
    z.allgather_sequential = false;
    z.use_all_reduce_for_fetch_params = false;
    break;
  case 11:
    changed = out.input_requires_grad;
    out.input_requires_grad = false;
    break;
  case 12:
    changed = out.config.bf16 || out.config.fp16;
    out.config.bf16 = false;
    out.config.fp16 = false;
    for (model::ParamSpec& p : out.params) {
      p.dtype = model::DType::Fp32;
    }
    break;
  case 13:
    changed = false;
    for (model::ModuleSpec& m : out.modules) {
      changed = changed || m.outputs != 1 || m.leaf;
      m.outputs = 1;
      m.leaf = false;
    }
    break;
  case 14:
    changed = false;
    for (model::ParamSpec& p : out.params) {
      changed = changed || p.tied_to != kNone;
      p.tied_to = kNone;
    }
    break;
  default:
    return std::nullopt;
  }
  if (!changed) {
    return std::nullopt;
  }
  return out;
}
constexpr size_t kSimplifications = 15;

std::optional<Scenario> edit_schedule(const Scenario& s, size_t item, int edit) {
  if (item >= s.schedule.size()) {
    return std::nullopt;
  }
  Scenario out = s;
  ScheduleItem& it = out.schedule[item];
  if (edit == 0) {
    out.schedule.erase(out.schedule.begin() + static_cast<std::ptrdiff_t>(item));
    if (out.schedule.empty()) {
      return std::nullopt;
    }
    return out;
  }
  if (edit == 1 && it.kind == ScheduleItem::Kind::Restart && it.reuse_model) {
    it.reuse_model = false;
    return out;
  }
  if (edit == 2 && (it.kind == ScheduleItem::Kind::Train || it.kind == ScheduleItem::Kind::Eval) &&
      it.steps > 1) {
    it.steps = 1;
    it.overflow_steps.clear();
    return out;
  }
  return std::nullopt;
}

// Parameters shrink toward one element (persistence may change, so each is its own candidate).
std::optional<Scenario> shrink_param(const Scenario& s, ParamIndex p) {
  if (s.params[p].numel <= 1 || s.params[p].tied_to != kNone) {
    return std::nullopt;
  }
  Scenario out = s;
  out.params[p].shape = {1};
  out.params[p].numel = 1;
  for (model::ParamSpec& alias : out.params) {
    if (alias.tied_to == p) {
      alias.shape = {1};
      alias.numel = 1;
    }
  }
  return out;
}

size_t count_ops(const std::vector<Op>& ops) {
  size_t n = 0;
  for (const Op& op : ops) {
    n += 1 + count_ops(op.body);
  }
  return n;
}

}  // namespace

ScenarioSize scenario_size(const Scenario& scenario) {
  ScenarioSize size;
  size.modules = scenario.modules.size();
  for (const model::ModuleSpec& m : scenario.modules) {
    size.operations += count_ops(m.forward);
  }
  return size;
}

ShrinkResult shrink_scenario(const Scenario& failing,
                             const std::function<bool(const Scenario&)>& still_fails,
                             int max_attempts) {
  ShrinkResult result;
  Scenario start = failing;
  start.expectations.clear();  // they name what no longer exists once parts are removed
  std::optional<Scenario> loaded = reload(start);
  result.scenario = loaded ? std::move(*loaded) : std::move(start);
  // Tries one candidate; true when it was kept.
  const auto attempt = [&](std::optional<Scenario> candidate) {
    if (!candidate || result.attempts >= max_attempts) {
      return false;
    }
    std::optional<Scenario> valid = reload(*candidate);
    if (!valid) {
      return false;
    }
    ++result.attempts;
    if (!still_fails(*valid)) {
      return false;
    }
    result.scenario = std::move(*valid);
    ++result.accepted;
    return true;
  };
  bool progress = true;
  while (progress && result.attempts < max_attempts) {
    progress = false;
    // Coarse parts first: whole schedule items and module subtrees remove the most.
    for (size_t i = result.scenario.schedule.size(); i-- > 0;) {
      progress = attempt(edit_schedule(result.scenario, i, 0)) || progress;
    }
    for (ModuleIndex m = static_cast<ModuleIndex>(result.scenario.modules.size()); m-- > 1;) {
      if (m >= result.scenario.modules.size()) {
        continue;
      }
      std::vector<bool> gone(result.scenario.modules.size(), false);
      gone[m] = true;
      progress = attempt(rebuild(result.scenario, gone,
                                 std::vector<bool>(result.scenario.params.size(), false))) ||
                 progress;
    }
    for (ParamIndex p = static_cast<ParamIndex>(result.scenario.params.size()); p-- > 0;) {
      if (p >= result.scenario.params.size()) {
        continue;
      }
      std::vector<bool> gone(result.scenario.params.size(), false);
      gone[p] = true;
      progress = attempt(rebuild(result.scenario,
                                 std::vector<bool>(result.scenario.modules.size(), false), gone)) ||
                 progress;
    }
    for (OpEdit edit :
         {OpEdit::Remove, OpEdit::Unwrap, OpEdit::DropCondition, OpEdit::RepeatOnce}) {
      const std::vector<OpSite> sites = op_sites(result.scenario);
      // Back to front: an edit moves only later siblings and its own nested ops, which were
      // tried already, so the earlier sites' paths stay valid.
      for (size_t k = sites.size(); k-- > 0;) {
        progress = attempt(edit_op(result.scenario, sites[k], edit)) || progress;
      }
    }
    for (size_t i = result.scenario.schedule.size(); i-- > 0;) {
      progress = attempt(edit_schedule(result.scenario, i, 1)) || progress;
      progress = attempt(edit_schedule(result.scenario, i, 2)) || progress;
    }
    for (size_t which = 0; which < kSimplifications; ++which) {
      progress = attempt(simplify(result.scenario, which)) || progress;
    }
    for (ParamIndex p = 0; p < result.scenario.params.size(); ++p) {
      progress = attempt(shrink_param(result.scenario, p)) || progress;
    }
  }
  return result;
}

}  // namespace zfetch::sim
