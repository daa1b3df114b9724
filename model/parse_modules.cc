// The module tree and its parameters: names, shapes, ties, and the Boost.Graph view.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "model/limits.h"
#include "model/scenario_parser.h"

namespace zfetch::model::detail {

namespace {

using namespace std::string_view_literals;

constexpr std::array kModuleKeys = {"name"sv,    "class"sv, "params"sv,  "children"sv,
                                    "forward"sv, "leaf"sv,  "outputs"sv, "compute_us"sv};
constexpr std::array kInstanceKeys = {"name"sv,     "class"sv, "params"sv,   "children"sv,
                                      "forward"sv,  "leaf"sv,  "outputs"sv,  "compute_us"sv,
                                      "template"sv, "count"sv, "overrides"sv};
// Instances of one entry, and modules of one scenario: bounds that keep a typo (or nested
// counts) from exhausting memory; a 1000-layer model with 100 modules a layer fits.
constexpr int64_t kMaxCount = 100'000;
constexpr size_t kMaxModules = size_t{1} << 20;
constexpr std::array kParamKeys = {"shape"sv, "numel"sv, "dtype"sv, "frozen"sv, "tied_to"sv};
// The largest parameter accepted (model/limits.h). The simulator computes bytes (numel * 4),
// partitions padded to the world size, and sums of bytes over a run in int64_t; this bound keeps
// all of them far from overflow.
constexpr int64_t kMaxNumel = kMaxParamNumel;

std::string too_many_elements(const std::string& param) {
  return fmt::format("parameter '{}' has too many elements; at most {} (2^40) are supported", param,
                     kMaxNumel);
}

std::string format_shape(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

std::string ScenarioParser::describe(ModuleIndex module) const {
  const ModuleSpec& spec = scenario_.modules[module];
  return spec.qualified_name.empty() ? spec.name : spec.qualified_name;
}

void ScenarioParser::read_model(const Field& root) {
  read_module(root, kNone);
  resolve_ties();
  for (const PendingForward& pending : forwards_) {
    ModuleSpec& module = scenario_.modules[pending.module];
    module.has_forward = true;
    module.forward = read_ops({pending.value, "forward", pending.key}, pending.module);
    link_call_inputs(module.forward);
  }
  build_graph();
}

std::string ScenarioParser::join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

void ScenarioParser::read_templates(const Field& field) {
  if (!reader_.expect_map(field)) {
    return;
  }
  for (const auto& entry : field.value) {
    if (!entry.first.IsScalar()) {
      reader_.error(entry.first,
                    fmt::format("expected a template name, got {}", describe_value(entry.first)));
      continue;
    }
    if (std::find(template_names_.begin(), template_names_.end(), entry.first.Scalar()) !=
        template_names_.end()) {
      reader_.error(entry.first, fmt::format("duplicate template '{}'", entry.first.Scalar()));
    }
    template_names_.push_back(entry.first.Scalar());
  }
  templates_.reset(field.value);
}

namespace {

std::optional<YAML::Node> find_key(const YAML::Node& map, std::string_view key) {
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) {
      return entry.first;
    }
  }
  return std::nullopt;
}

// The value of `key` in `map`; an undefined node when there is none.
YAML::Node value_of(const YAML::Node& map, std::string_view key) {
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) {
      return entry.second;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

}  // namespace

void ScenarioParser::read_module(const Field& field, ModuleIndex parent) {
  if (!reader_.expect_map(field)) {
    return;
  }
  const YAML::Node& node = field.value;
  if (const std::optional<YAML::Node> template_key = find_key(node, "template")) {
    reader_.check_keys(node, kInstanceKeys, "a module");
    read_instances(node, *template_key, parent);
    return;
  }
  reader_.check_keys(node, kModuleKeys, "a module");
  if (find_key(node, "count") || find_key(node, "overrides")) {
    reader_.error(node, "'count' and 'overrides' need a 'template' to instantiate");
  }
  read_module_layers({node}, node, parent, nullptr);
}

void ScenarioParser::read_instances(const YAML::Node& node, const YAML::Node& template_key,
                                    ModuleIndex parent) {
  const YAML::Node name_value = value_of(node, "template");
  const std::optional<std::string> name =
      reader_.read_string({name_value, "template", template_key});
  if (!name) {
    return;
  }
  const YAML::Node body =
      templates_.IsDefined() ? value_of(templates_, *name) : YAML::Node(YAML::NodeType::Undefined);
  if (!body.IsDefined()) {
    reader_.error(name_value, fmt::format("unknown template '{}'", *name),
                  reader_.did_you_mean(name_value, *name, template_names_));
    return;
  }
  if (std::find(instantiating_.begin(), instantiating_.end(), *name) != instantiating_.end()) {
    reader_.error(name_value, fmt::format("template '{}' contains itself", *name));
    return;
  }
  if (!reader_.expect_map({body, *name, {}})) {
    return;
  }
  if (std::find(checked_templates_.begin(), checked_templates_.end(), *name) ==
      checked_templates_.end()) {
    checked_templates_.push_back(*name);
    reader_.check_keys(body, kModuleKeys, fmt::format("template '{}'", *name));
  }

  int64_t count = 0;  // 0: one instance named by `name`
  if (const std::optional<YAML::Node> count_key = find_key(node, "count")) {
    count = reader_.read_int({value_of(node, "count"), "count", *count_key}, 1).value_or(0);
    if (count > kMaxCount) {
      reader_.error(value_of(node, "count"),
                    fmt::format("expected at most {} instances, got {}", kMaxCount, count));
      return;
    }
    if (count == 0) {
      return;
    }
    if (const std::optional<YAML::Node> name_key = find_key(node, "name")) {
      reader_.error(*name_key,
                    "instances of 'count' are named 0, 1, ... as a ModuleList's are; remove "
                    "'name'");
    }
  }
  std::vector<YAML::Node> overrides(static_cast<size_t>(std::max<int64_t>(count, 1)));
  if (const std::optional<YAML::Node> overrides_key = find_key(node, "overrides")) {
    const YAML::Node map = value_of(node, "overrides");
    if (count == 0) {
      reader_.error(*overrides_key, "'overrides' applies to the instances of a 'count'");
    } else if (reader_.expect_map({map, "overrides", *overrides_key})) {
      for (const auto& entry : map) {
        const std::optional<int64_t> index = reader_.read_int({entry.first, "overrides", {}}, 0);
        if (!index) {
          continue;
        }
        if (*index >= count) {
          reader_.error(entry.first,
                        fmt::format("instance {} is out of range; 'count' is {}", *index, count));
        } else if (reader_.expect_map({entry.second, "overrides", entry.first})) {
          reader_.check_keys(entry.second, kModuleKeys,
                             fmt::format("the overrides of instance {}", *index));
          overrides[static_cast<size_t>(*index)].reset(entry.second);
        }
      }
    }
  }

  instantiating_.push_back(*name);
  if (count == 0) {
    read_module_layers({node, body}, node, parent, nullptr);
  } else {
    for (int64_t i = 0; i < count; ++i) {
      const std::string index_name = std::to_string(i);
      const YAML::Node& instance = overrides[static_cast<size_t>(i)];
      if (instance.IsDefined()) {
        read_module_layers({instance, node, body}, node, parent, &index_name);
      } else {
        read_module_layers({node, body}, node, parent, &index_name);
      }
    }
  }
  instantiating_.pop_back();
}

void ScenarioParser::read_module_layers(const std::vector<YAML::Node>& layers,
                                        const YAML::Node& node, ModuleIndex parent,
                                        const std::string* index_name) {
  if (scenario_.modules.size() >= kMaxModules) {
    if (!module_limit_reported_) {
      reader_.error(node, fmt::format("the model has more than {} modules", kMaxModules));
      module_limit_reported_ = true;
    }
    return;
  }
  // The module's entries: for each key, the first layer that has it.
  std::vector<std::pair<YAML::Node, YAML::Node>> entries;
  std::vector<std::string> seen;
  for (const YAML::Node& layer : layers) {
    for (const auto& entry : layer) {
      const std::string& key = entry.first.Scalar();
      if (key == "template" || key == "count" || key == "overrides" ||
          std::find(seen.begin(), seen.end(), key) != seen.end()) {
        continue;
      }
      seen.push_back(key);
      entries.emplace_back(entry.first, entry.second);
    }
  }

  const ModuleIndex index = static_cast<ModuleIndex>(scenario_.modules.size());
  ModuleSpec module;
  module.parent = parent;
  module.loc = YamlReader::loc(node);
  YAML::Node name_node = node;
  bool has_name = false;
  if (index_name != nullptr) {
    has_name = true;
    module.name = *index_name;
  }
  for (const auto& [key_node, value_node] : entries) {
    if (index_name != nullptr || key_node.Scalar() != "name") {
      continue;
    }
    has_name = true;
    name_node.reset(key_node);
    if (auto name = reader_.read_string({value_node, "name", key_node})) {
      name_node.reset(value_node);
      module.name = *name;
      if (name->empty() || name->find('.') != std::string::npos) {
        reader_.error(value_node,
                      fmt::format("module name '{}' must be non-empty and contain no '.'", *name));
      }
    }
  }
  if (!has_name) {
    reader_.error(node, "module has no 'name'");
  }
  if (parent != kNone) {
    module.qualified_name = join_name(scenario_.modules[parent].qualified_name, module.name);
    scenario_.modules[parent].children.push_back(index);
  }
  scenario_.modules.push_back(module);
  module_name_nodes_.push_back(name_node);
  module_by_name_.emplace(scenario_.modules[index].qualified_name, index);

  // Own params before children: Scenario::params is in module pre-order.
  YAML::Node children_key;
  YAML::Node children;
  for (const auto& entry : entries) {
    const std::string& key = entry.first.Scalar();
    const Field value{entry.second, key, entry.first};
    ModuleSpec& spec = scenario_.modules[index];
    if (key == "class") {
      if (auto text = reader_.read_string(value)) {
        spec.class_name = *text;
      }
    } else if (key == "params") {
      read_params(value, index);
    } else if (key == "children") {
      children_key.reset(entry.first);
      children.reset(entry.second);
    } else if (key == "forward") {
      forwards_.push_back({index, entry.first, entry.second});
    } else if (key == "leaf") {
      if (auto flag = reader_.read_bool(value)) {
        spec.leaf = *flag;
      }
    } else if (key == "outputs") {
      // One backward node per output: a bound keeps a typo from exhausting memory.
      constexpr int64_t kMaxOutputs = 1024;
      if (auto count = reader_.read_int(value, 1)) {
        if (*count > kMaxOutputs) {
          reader_.error(value.value,
                        fmt::format("expected at most {} outputs, got {}", kMaxOutputs, *count));
        } else {
          spec.outputs = *count;
        }
      }
    } else if (key == "compute_us") {
      if (auto time = reader_.read_int(value, 0, false, kMaxComputeUs)) {
        spec.compute_us = *time;
      }
    }
  }
  if (children_key.IsDefined() && YamlReader::loc(children_key).line != 0) {
    if (reader_.expect_seq({children, "children", children_key})) {
      for (const YAML::Node& child : children) {
        read_module({child, "children", {}}, index);
      }
    }
  }
  check_sibling_names(index);
}

void ScenarioParser::check_sibling_names(ModuleIndex module) {
  // Params and children share one attribute namespace (nn.Module.__setattr__).
  struct Entry {
    std::string name;
    YAML::Node node;
    bool is_param;
  };
  std::vector<Entry> entries;
  const ModuleSpec& spec = scenario_.modules[module];
  for (ParamIndex param : spec.params) {
    entries.push_back({scenario_.params[param].name, param_name_nodes_[param], true});
  }
  for (ModuleIndex child : spec.children) {
    entries.push_back({scenario_.modules[child].name, module_name_nodes_[child], false});
  }
  // The first entry of each name: a hash lookup per entry, so 10^5 siblings stay linear.
  std::unordered_map<std::string_view, size_t> first_of_name;
  first_of_name.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& second = entries[i];
    if (second.name.empty()) {
      continue;
    }
    const auto [found, inserted] = first_of_name.emplace(second.name, i);
    if (inserted) {
      continue;
    }
    const Entry& first = entries[found->second];
    std::string message;
    if (first.is_param && second.is_param) {
      message =
          fmt::format("duplicate parameter '{}' in module '{}'", second.name, describe(module));
    } else if (!first.is_param && !second.is_param) {
      message = fmt::format("duplicate child '{}' in module '{}'", second.name, describe(module));
    } else {
      message = fmt::format("'{}' is both a parameter and a child of module '{}'", second.name,
                            describe(module));
    }
    reader_.error(second.node, message,
                  {reader_.quoting_note(first.node, "previous definition here")});
  }
}

void ScenarioParser::read_params(const Field& field, ModuleIndex module) {
  if (!reader_.expect_map(field)) {
    return;
  }
  for (const auto& entry : field.value) {
    if (!entry.first.IsScalar()) {
      reader_.error(entry.first,
                    fmt::format("expected a parameter name, got {}", describe_value(entry.first)));
      continue;
    }
    read_param(entry.first, entry.second, module);
  }
}

void ScenarioParser::read_param(const YAML::Node& key, const YAML::Node& value,
                                ModuleIndex module) {
  const ParamIndex index = static_cast<ParamIndex>(scenario_.params.size());
  ParamSpec param;
  param.name = key.Scalar();
  param.owner = module;
  param.qualified_name = join_name(scenario_.modules[module].qualified_name, param.name);
  param.loc = YamlReader::loc(key);
  if (param.name.empty() || param.name.find('.') != std::string::npos) {
    reader_.error(
        key, fmt::format("parameter name '{}' must be non-empty and contain no '.'", param.name));
  }

  bool shape_given = false;
  bool dtype_given = false;
  bool frozen_given = false;
  YAML::Node tied_target;
  bool tied = false;
  if (value.IsSequence()) {
    shape_given = read_shape({value, "shape", key}, param);
  } else if (value.IsMap()) {
    reader_.check_keys(value, kParamKeys, fmt::format("parameter '{}'", param.qualified_name));
    YAML::Node numel_key;
    YAML::Node shape_key;
    for (const auto& entry : value) {
      const std::string& name = entry.first.Scalar();
      const Field field{entry.second, name, entry.first};
      if (name == "shape") {
        shape_key.reset(entry.first);
        if (!reader_.expect_seq(field)) {
          shape_given = true;  // reported; do not also ask for a shape
          continue;
        }
        shape_given = true;
        read_shape(field, param);
      } else if (name == "numel") {
        numel_key.reset(entry.first);
        shape_given = true;
        if (auto numel = reader_.read_int(field, INT64_MIN)) {
          if (*numel < 0) {
            reader_.error(entry.second,
                          fmt::format("negative size {} for 'numel' of parameter '{}'", *numel,
                                      param.qualified_name));
          } else if (*numel > kMaxNumel) {
            reader_.error(entry.second, too_many_elements(param.qualified_name));
          } else {
            param.numel = *numel;
            param.shape = {*numel};
          }
        }
      } else if (name == "dtype") {
        dtype_given = true;
        if (auto dtype = reader_.read_choice(field, "dtype", kDTypeNames.names())) {
          param.dtype = kDTypeNames.find(*dtype).value_or(DType::Fp32);
        }
      } else if (name == "frozen") {
        frozen_given = true;
        if (auto frozen = reader_.read_bool(field)) {
          param.frozen = *frozen;
        }
      } else if (name == "tied_to") {
        if (reader_.read_string(field)) {
          tied = true;
          tied_target.reset(entry.second);
        }
      }
    }
    if (YamlReader::loc(numel_key).line != 0 && YamlReader::loc(shape_key).line != 0) {
      reader_.error(numel_key, fmt::format("parameter '{}' has both 'shape' and 'numel'; give one",
                                           param.qualified_name));
    }
    if (!shape_given && !tied) {
      reader_.error(
          key, fmt::format("parameter '{}' needs a 'shape' or a 'numel'", param.qualified_name));
    }
  } else {
    reader_.error(value.IsNull() ? key : value,
                  fmt::format("expected a shape list or a mapping for parameter '{}', got {}",
                              param.qualified_name, describe_value(value)));
  }

  if (!tied && model_numel_ <= kMaxModelNumel) {
    model_numel_ += param.numel;
    if (model_numel_ > kMaxModelNumel) {
      reader_.error(key, fmt::format("the model's parameters hold more than {} (2^48) elements in "
                                     "all once '{}' is added (zfetch's limit)",
                                     kMaxModelNumel, param.qualified_name));
    }
  }
  scenario_.params.push_back(param);
  scenario_.modules[module].params.push_back(index);
  param_name_nodes_.push_back(key);
  param_by_name_.emplace(param.qualified_name, index);
  if (tied) {
    ties_.push_back({index, tied_target, shape_given, dtype_given, frozen_given});
  }
}

bool ScenarioParser::read_shape(const Field& field, ParamSpec& param) {
  std::vector<int64_t> shape;
  int64_t numel = 1;
  bool ok = true;
  for (const YAML::Node& dim : field.value) {
    const std::optional<int64_t> size = reader_.read_int({dim, "shape", {}}, INT64_MIN);
    if (!size) {
      ok = false;
      continue;
    }
    if (*size < 0) {
      reader_.error(dim, fmt::format("negative size {} in the shape of parameter '{}'", *size,
                                     param.qualified_name));
      ok = false;
      continue;
    }
    // Saturate rather than stop: a later zero dimension makes the parameter empty.
    if (__builtin_mul_overflow(numel, *size, &numel) || numel > kMaxNumel) {
      numel = kMaxNumel + 1;
    }
    shape.push_back(*size);
  }
  if (ok && numel > kMaxNumel) {
    reader_.error(field.value, too_many_elements(param.qualified_name));
    ok = false;
  }
  if (ok) {
    param.shape = std::move(shape);
    param.numel = numel;
  }
  return true;
}

void ScenarioParser::resolve_ties() {
  std::vector<std::string> names;  // built at the first unknown target
  for (const PendingTie& tie : ties_) {
    std::string target = tie.target.Scalar();
    if (!target.empty() && target.front() == '/') {
      target.erase(0, 1);
    }
    const auto found = param_by_name_.find(target);
    ParamSpec& param = scenario_.params[tie.param];
    if (found == param_by_name_.end()) {
      if (names.empty() && reader_.can_suggest(scenario_.params.size())) {
        for (const ParamSpec& other : scenario_.params) {
          names.push_back(other.qualified_name);
        }
      }
      reader_.error(
          tie.target,
          fmt::format("unknown parameter '{}' in 'tied_to' of '{}'", target, param.qualified_name),
          reader_.did_you_mean(tie.target, target, names));
    } else if (found->second == tie.param) {
      reader_.error(tie.target, fmt::format("parameter '{}' is tied to itself", target));
    } else {
      param.tied_to = found->second;
    }
  }

  // A chain a -> b -> c is one Parameter object; a loop has no object to be. Each parameter
  // ties to at most one other, so one walk per chain, never repeated, finds every loop and
  // every parameter's canonical one in linear time (a chain of 10^5 ties included).
  const size_t count = scenario_.params.size();
  enum class Walk : uint8_t { Unvisited, OnPath, Done };
  std::vector<Walk> walk(count, Walk::Unvisited);
  std::vector<ParamIndex> canonical_of(count, kNone);  // kNone: in or into a loop
  std::vector<ParamIndex> cycle_starts;                // each loop's first parameter in file order
  std::vector<ParamIndex> path;
  for (ParamIndex start = 0; start < count; ++start) {
    path.clear();
    ParamIndex at = start;
    while (at != kNone && walk[at] == Walk::Unvisited) {
      walk[at] = Walk::OnPath;
      path.push_back(at);
      at = scenario_.params[at].tied_to;
    }
    ParamIndex canonical = kNone;
    if (at == kNone) {
      canonical = path.back();
    } else if (walk[at] == Walk::Done) {
      canonical = canonical_of[at];
    } else {  // back on this walk's path: `at` .. the end of the path is a loop
      const auto loop_begin = std::find(path.begin(), path.end(), at);
      cycle_starts.push_back(*std::min_element(loop_begin, path.end()));
    }
    for (ParamIndex member : path) {
      walk[member] = Walk::Done;
      canonical_of[member] = canonical;
    }
  }
  std::sort(cycle_starts.begin(), cycle_starts.end());
  for (ParamIndex first : cycle_starts) {
    std::vector<std::string> names_on_loop{scenario_.params[first].qualified_name};
    for (ParamIndex at = scenario_.params[first].tied_to; at != first;
         at = scenario_.params[at].tied_to) {
      names_on_loop.push_back(scenario_.params[at].qualified_name);
    }
    names_on_loop.push_back(scenario_.params[first].qualified_name);
    reader_.error(param_name_nodes_[first], fmt::format("tied parameters form a cycle: {}",
                                                        fmt::join(names_on_loop, " -> ")));
  }

  for (const PendingTie& tie : ties_) {
    ParamSpec& alias = scenario_.params[tie.param];
    const ParamIndex canonical = canonical_of[tie.param];
    if (alias.tied_to == kNone || canonical == kNone) {
      continue;  // not tied, or in or into a loop (reported above)
    }
    const ParamSpec& target = scenario_.params[canonical];
    const std::vector<Note> notes = {reader_.quoting_note(
        param_name_nodes_[canonical], fmt::format("'{}' declared here", target.qualified_name))};
    if (!tie.shape_given) {
      alias.shape = target.shape;
      alias.numel = target.numel;
    } else if (alias.shape != target.shape) {
      reader_.error(param_name_nodes_[tie.param],
                    fmt::format("tied parameter '{}' has shape {}, but '{}' has shape {}",
                                alias.qualified_name, format_shape(alias.shape),
                                target.qualified_name, format_shape(target.shape)),
                    notes);
    }
    if (!tie.dtype_given) {
      alias.dtype = target.dtype;
    } else if (alias.dtype != target.dtype) {
      reader_.error(param_name_nodes_[tie.param],
                    fmt::format("tied parameter '{}' has dtype {}, but '{}' has dtype {}",
                                alias.qualified_name, dtype_name(alias.dtype),
                                target.qualified_name, dtype_name(target.dtype)),
                    notes);
    }
    if (!tie.frozen_given) {
      alias.frozen = target.frozen;
    } else if (alias.frozen != target.frozen) {
      reader_.error(
          param_name_nodes_[tie.param],
          fmt::format("tied parameter '{}' has frozen: {}, but '{}' has frozen: {}",
                      alias.qualified_name, alias.frozen, target.qualified_name, target.frozen),
          notes);
    }
  }
}

void ScenarioParser::build_graph() {
  ModuleGraph& graph = scenario_.graph;
  graph = ModuleGraph(scenario_.modules.size());
  for (ModuleIndex parent = 0; parent < scenario_.modules.size(); ++parent) {
    for (ModuleIndex child : scenario_.modules[parent].children) {
      boost::add_edge(parent, child, ModuleEdge{EdgeKind::Child, kNone}, graph);
    }
  }
  for (ParamIndex param = 0; param < scenario_.params.size(); ++param) {
    const ParamSpec& spec = scenario_.params[param];
    if (spec.tied_to != kNone) {
      boost::add_edge(spec.owner, scenario_.params[spec.tied_to].owner,
                      ModuleEdge{EdgeKind::Tied, param}, graph);
    }
  }
}

}  // namespace zfetch::model::detail
