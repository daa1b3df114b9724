// z3 leaf selection: explicit flags, the leaf_module config, and the granularity threshold.
#include "model/leaves.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "model/persistence.h"

namespace zfetch::model {
namespace {

// torch.nn.modules.container.__all__: never auto-selected as leaves, and they add no layer.
constexpr std::array<std::string_view, 6> kContainerClasses = {
    "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"};

bool is_container(const ModuleSpec& spec) {
  return std::find(kContainerClasses.begin(), kContainerClasses.end(), spec.class_name) !=
         kContainerClasses.end();
}

std::string_view last_component(std::string_view s) {
  const size_t dot = s.rfind('.');
  return dot == std::string_view::npos ? s : s.substr(dot + 1);
}

// `leaf: true`, or a match of zero_optimization.leaf_module (classes by full or short name,
// qualified names, name suffixes).
bool marked_leaf(const Scenario& scenario, const ModuleSpec& spec) {
  if (spec.leaf) {
    return true;
  }
  const LeafModuleConfig& leaf = scenario.config.zero.leaf_module;
  if (!spec.class_name.empty()) {
    for (const std::string& c : leaf.classes) {
      if (c == spec.class_name || last_component(c) == spec.class_name) {
        return true;
      }
    }
  }
  for (const std::string& n : leaf.names) {
    if (n == spec.qualified_name) {
      return true;
    }
  }
  for (const std::string& suffix : leaf.name_suffixes) {
    if (std::string_view(spec.qualified_name).ends_with(suffix)) {
      return true;
    }
  }
  return false;
}

// Distinct params of each module's subtree (module.parameters(): one entry per object).
std::vector<int64_t> subtree_numel(const Scenario& scenario) {
  const size_t nm = scenario.modules.size();
  std::vector<std::vector<ParamIndex>> objects(nm);
  std::vector<int64_t> numel(nm, 0);
  // Modules are in pre-order: children come after their parent, so walk backwards.
  for (size_t i = nm; i-- > 0;) {
    std::vector<ParamIndex>& own = objects[i];
    for (ParamIndex p : scenario.modules[i].params) {
      own.push_back(canonical(scenario, p));
    }
    for (ModuleIndex child : scenario.modules[i].children) {
      own.insert(own.end(), objects[child].begin(), objects[child].end());
    }
    std::sort(own.begin(), own.end());
    own.erase(std::unique(own.begin(), own.end()), own.end());
    for (ParamIndex p : own) {
      numel[i] += scenario.params[p].numel;
    }
  }
  return numel;
}

struct LayerCount {
  int64_t layers = 0;
  int64_t params = 0;
};

// _get_granularity_recursively: returns (layers, params) of the subtree and sets granularity.
LayerCount granularity_of(const Scenario& scenario, ModuleIndex m,
                          const std::vector<int64_t>& subtree, std::vector<int64_t>& granularity) {
  constexpr int64_t kMaxLeafParams = 1'000'000'000;  // Z3_MAX_LEAF_SIZE
  const ModuleSpec& spec = scenario.modules[m];
  if (subtree[m] == 0) {  // no params anywhere below (GELU, ...)
    return {};
  }
  LayerCount count;
  // parameters(recurse=False): the module's own distinct objects.
  std::vector<ParamIndex> own;
  for (ParamIndex p : spec.params) {
    own.push_back(canonical(scenario, p));
  }
  std::sort(own.begin(), own.end());
  own.erase(std::unique(own.begin(), own.end()), own.end());
  for (ParamIndex p : own) {
    count.params += scenario.params[p].numel;
  }
  if (spec.children.empty()) {  // a torch leaf: one layer, never chosen
    count.layers = 1;
    return count;
  }
  for (ModuleIndex child : spec.children) {
    const LayerCount c = granularity_of(scenario, child, subtree, granularity);
    count.layers += c.layers;
    count.params += c.params;
  }
  if (is_container(spec)) {
    return count;
  }
  count.layers += 1;
  granularity[m] = count.params <= kMaxLeafParams ? count.params / count.layers : kNoGranularity;
  return count;
}

// _set_leaf_by_threshold_preorder: parents first; a chosen module's subtree is not searched.
void choose_by_threshold(const Scenario& scenario, ModuleIndex m, int64_t threshold,
                         const std::vector<int64_t>& subtree,
                         const std::vector<int64_t>& granularity, std::vector<uint8_t>& chosen) {
  if (subtree[m] == 0) {
    return;
  }
  if (granularity[m] <= threshold) {
    chosen[m] = 1;
    return;
  }
  for (ModuleIndex child : scenario.modules[m].children) {
    choose_by_threshold(scenario, child, threshold, subtree, granularity, chosen);
  }
}

}  // namespace

std::vector<int64_t> module_granularity(const Scenario& scenario) {
  std::vector<int64_t> granularity(scenario.modules.size(), kNoGranularity);
  if (!scenario.modules.empty()) {
    granularity_of(scenario, 0, subtree_numel(scenario), granularity);
  }
  return granularity;
}

std::vector<uint8_t> z3_leaf_modules(const Scenario& scenario) {
  const size_t nm = scenario.modules.size();
  std::vector<uint8_t> marked(nm, 0);
  for (size_t i = 0; i < nm; ++i) {
    marked[i] = marked_leaf(scenario, scenario.modules[i]) ? 1 : 0;
  }
  // DeepSpeedZeRoOffload.__init__ marks by granularity before the hooks are registered, and
  // only when some module's granularity is within the threshold.
  const int64_t threshold = scenario.config.zero.module_granularity_threshold;
  if (threshold > 0 && nm > 0) {
    const std::vector<int64_t> subtree = subtree_numel(scenario);
    const std::vector<int64_t> granularity = module_granularity(scenario);
    if (*std::min_element(granularity.begin(), granularity.end()) <= threshold) {
      choose_by_threshold(scenario, 0, threshold, subtree, granularity, marked);
    }
  }
  // Registration walks children() from the root and stops at a leaf (2.1).
  std::vector<uint8_t> leaf(nm, 0);
  std::vector<uint8_t> reached(nm, 0);
  for (size_t i = 0; i < nm; ++i) {
    const ModuleSpec& spec = scenario.modules[i];
    reached[i] = spec.parent == kNone || (reached[spec.parent] != 0 && leaf[spec.parent] == 0);
    leaf[i] = reached[i] != 0 && marked[i] != 0 ? 1 : 0;
  }
  return leaf;
}

}  // namespace zfetch::model
