// Forward programs: call, access, checkpoint, repeat and returns operations, with `when` guards.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string_view>

#include "base/spellcheck.h"
#include "model/scenario_parser.h"

namespace zfetch::model::detail {

namespace {

using namespace std::string_view_literals;

// Each operation is a mapping with exactly one of the kind keys, plus the keys its kind allows.
constexpr std::array kOpKindKeys = {"call"sv,   "access"sv,  "checkpoint"sv,
                                    "repeat"sv, "returns"sv, "gathered"sv};
constexpr std::array kOpKeys = {"call"sv,          "access"sv,   "checkpoint"sv, "repeat"sv,
                                "returns"sv,       "gathered"sv, "kind"sv,       "body"sv,
                                "when"sv,          "input"sv,    "input_from"sv, "hooks"sv,
                                "modifier_rank"sv, "output"sv};
constexpr std::array kCallEachKeys = {"call_each"sv, "when"sv, "route"sv, "layerdrop"sv};
// `window_micro_step` is the documented name of the index within the accumulation window;
// `micro_step` is its older name, kept with the same meaning.
constexpr std::array kConditionKeys = {
    "step"sv,  "window_micro_step"sv, "micro_step"sv, "rank"sv, "engine"sv, "forward"sv, "phase"sv,
    "route"sv, "layerdrop"sv};
// A draw in `when` names its candidate; on `call_each` the children are the candidates.
constexpr std::array kRouteKeys = {"seed"sv, "top_k"sv, "of"sv, "index"sv};
constexpr std::array kLayerDropKeys = {"seed"sv, "p"sv, "index"sv};
constexpr std::array kPhases = {"train"sv, "eval"sv, "generate"sv};
constexpr std::array kAccessKinds = {"data"sv, "metadata"sv};
constexpr std::array kCheckpointKeys = {"reentrant"sv};
constexpr std::array kCallInputs = {"no_grad"sv, "forward_input"sv};
constexpr std::array kCallHooks = {"all"sv, "none"sv, "own"sv};
constexpr std::array kCallOutputs = {"leaf"sv};

// The keys an operation of each kind may carry besides its kind key and `when`.
bool allows(std::string_view kind, std::string_view key) {
  if (key == kind || key == "when") {
    return true;
  }
  if (key == "kind") {
    return kind == "access";
  }
  if (key == "body") {
    return kind == "checkpoint" || kind == "repeat" || kind == "gathered";
  }
  if (key == "input" || key == "input_from" || key == "hooks" || key == "output") {
    return kind == "call";
  }
  if (key == "modifier_rank") {
    return kind == "gathered";
  }
  return false;
}

// The `call` ops of one scope (a forward program or a checkpoint body; a repeat body is part of
// its scope), in program order, so that `input_from` can name an earlier one.
void link_scope(std::vector<Op>& ops, std::vector<Op*>& calls, YamlReader& reader,
                const Scenario& scenario) {
  for (Op& op : ops) {
    if (op.kind == Op::Kind::Repeat || op.kind == Op::Kind::Gathered) {
      link_scope(op.body, calls, reader, scenario);
    } else if (op.kind == Op::Kind::Checkpoint) {
      std::vector<Op*> region_calls;
      link_scope(op.body, region_calls, reader, scenario);
    } else if (op.kind == Op::Kind::Call) {
      if (op.input == CallInput::OutputOf) {
        const auto earlier = std::find_if(calls.rbegin(), calls.rend(), [&](const Op* call) {
          return call->callee == op.input_from;
        });
        if (earlier == calls.rend()) {
          const std::string& name = scenario.modules[op.input_from].qualified_name;
          reader.error_at(op.input_from_loc, op.input_from_length,
                          fmt::format("'input_from' needs an earlier call of '{}' in the same "
                                      "forward (a checkpoint body is a forward of its own)",
                                      name));
          op.input = CallInput::Running;
        } else {
          (*earlier)->output_read = true;
        }
      }
      calls.push_back(&op);
    }
  }
}

}  // namespace

void ScenarioParser::link_call_inputs(std::vector<Op>& forward) {
  std::vector<Op*> calls;
  link_scope(forward, calls, reader_, scenario_);
}

std::vector<Op> ScenarioParser::read_ops(const Field& field, ModuleIndex module) {
  std::vector<Op> ops;
  if (!reader_.expect_seq(field)) {
    return ops;
  }
  for (const YAML::Node& node : field.value) {
    if (node.IsMap() && std::any_of(node.begin(), node.end(), [](const auto& entry) {
          return entry.first.IsScalar() && entry.first.Scalar() == "call_each";
        })) {
      read_call_each(node, module, ops);
      continue;
    }
    Op op;
    if (read_op(node, module, op)) {
      ops.push_back(std::move(op));
    }
  }
  return ops;
}

void ScenarioParser::read_call_each(const YAML::Node& node, ModuleIndex module,
                                    std::vector<Op>& ops) {
  // `for layer in self.layers: x = layer(x)`: the container itself runs no forward, so it
  // gets no hooks; each child is called in registration order.
  reader_.check_keys(node, kCallEachKeys, "a 'call_each' operation");
  Condition when;
  std::optional<ModuleIndex> container;
  Draw draw;
  YAML::Node draw_key;
  for (const auto& entry : node) {
    const std::string& key = entry.first.Scalar();
    if (key == "route" || key == "layerdrop") {
      if (draw.kind != Draw::Kind::None) {
        reader_.error(entry.first, "give one of 'route' and 'layerdrop', not both");
      }
      draw = read_draw({entry.second, key, entry.first}, false);
      draw_key.reset(entry.first);
    }
  }
  for (const auto& entry : node) {
    if (entry.first.Scalar() == "when") {
      when = read_condition({entry.second, "when", entry.first});
      if (draw.kind != Draw::Kind::None && when.draw.kind != Draw::Kind::None) {
        reader_.error(draw_key, "a 'call_each' with a draw cannot also draw in its 'when'");
      }
    } else if (entry.first.Scalar() == "call_each") {
      container = resolve_call(entry.second, module);
      if (container && scenario_.modules[*container].children.empty()) {
        reader_.error(entry.second,
                      fmt::format("'{}' has no children to call", describe(*container)));
        container.reset();
      }
    }
  }
  if (!container) {
    return;
  }
  const std::vector<ModuleIndex>& children = scenario_.modules[*container].children;
  if (draw.kind == Draw::Kind::Route) {
    draw.of = static_cast<int64_t>(children.size());
    if (draw.top_k > draw.of) {
      reader_.error(draw_key, fmt::format("'route' picks top_k {} of the {} children of '{}'",
                                          draw.top_k, draw.of, describe(*container)));
      draw.top_k = draw.of;
    }
  }
  for (size_t k = 0; k < children.size(); ++k) {
    Op op;
    op.kind = Op::Kind::Call;
    op.loc = YamlReader::loc(node);
    op.when = when;
    if (draw.kind != Draw::Kind::None) {
      op.when.draw = draw;
      op.when.draw.index = static_cast<int64_t>(k);
    }
    op.callee = children[k];
    ops.push_back(std::move(op));
  }
}

Draw ScenarioParser::read_draw(const Field& field, bool in_when) {
  Draw draw;
  if (!reader_.expect_map(field)) {
    return draw;
  }
  const bool route = field.name == "route";
  draw.kind = route ? Draw::Kind::Route : Draw::Kind::LayerDrop;
  const std::span<const std::string_view> keys =
      route ? std::span<const std::string_view>(kRouteKeys)
            : std::span<const std::string_view>(kLayerDropKeys);
  // On `call_each` the children are the candidates, so `of` and `index` are not given.
  const std::span<const std::string_view> allowed = in_when ? keys : keys.first(2);
  reader_.check_keys(field.value, allowed, fmt::format("'{}'", field.name));
  bool has_seed = false;
  bool has_p = false;
  for (const auto& entry : field.value) {
    const std::string& key = entry.first.Scalar();
    const Field value{entry.second, key, entry.first};
    if (key == "seed") {
      has_seed = true;
      draw.seed = static_cast<uint64_t>(reader_.read_int(value, 0).value_or(0));
    } else if (key == "top_k") {
      draw.top_k = reader_.read_int(value, 1).value_or(1);
    } else if (key == "of") {
      draw.of = reader_.read_int(value, 1).value_or(1);
    } else if (key == "index") {
      draw.index = reader_.read_int(value, 0).value_or(0);
    } else if (key == "p") {
      has_p = true;
      draw.p = read_probability(value).value_or(0);
    }
  }
  if (!has_seed) {
    reader_.error(field.key, fmt::format("'{}' needs a 'seed'", field.name));
  }
  if (!route && !has_p) {
    reader_.error(field.key, "'layerdrop' needs 'p', the probability of dropping a layer");
  }
  if (route && in_when && (draw.top_k > draw.of || draw.index >= draw.of)) {
    reader_.error(field.key,
                  fmt::format("'route' needs top_k <= of and index < of; got top_k {}, of {}, "
                              "index {}",
                              draw.top_k, draw.of, draw.index));
  }
  return draw;
}

std::optional<double> ScenarioParser::read_probability(const Field& field) {
  const std::optional<std::string> text = reader_.read_string(field);
  if (!text) {
    return std::nullopt;
  }
  double value = -1;
  const char* end = text->data() + text->size();
  const auto [at, error] = std::from_chars(text->data(), end, value);
  if (error != std::errc() || at != end || !(value >= 0 && value <= 1)) {
    reader_.error(field.value,
                  fmt::format("'{}' is a probability from 0 to 1, got '{}'", field.name, *text));
    return std::nullopt;
  }
  return value;
}

bool ScenarioParser::read_op(const YAML::Node& node, ModuleIndex module, Op& op) {
  if (!reader_.expect_map({node, "forward", {}})) {
    return false;
  }
  op.loc = YamlReader::loc(node);
  reader_.check_keys(node, kOpKeys, "an operation");

  // Which kind is this operation?
  std::string kind;
  YAML::Node kind_key;
  YAML::Node kind_value;
  for (const auto& entry : node) {
    const std::string& key = entry.first.Scalar();
    if (std::find(kOpKindKeys.begin(), kOpKindKeys.end(), key) == kOpKindKeys.end()) {
      continue;
    }
    if (!kind.empty()) {
      reader_.error(
          entry.first,
          fmt::format("operation has both '{}' and '{}'; give one per list item", kind, key));
      return false;
    }
    kind = key;
    kind_key.reset(entry.first);
    kind_value.reset(entry.second);
  }
  if (kind.empty()) {
    const bool only_known = std::all_of(node.begin(), node.end(), [](const auto& entry) {
      return std::find(kOpKeys.begin(), kOpKeys.end(), entry.first.Scalar()) != kOpKeys.end();
    });
    // An unknown key was already reported with a suggestion; do not pile on.
    if (only_known) {
      reader_.error(node,
                    "operation needs one of 'call', 'access', 'checkpoint', 'repeat', "
                    "'returns', 'gathered'");
    }
    return false;
  }

  bool ok = true;
  for (const auto& entry : node) {
    const std::string& key = entry.first.Scalar();
    const bool known = std::find(kOpKeys.begin(), kOpKeys.end(), key) != kOpKeys.end();
    if (known && !allows(kind, key)) {
      reader_.error(entry.first, fmt::format("'{}' does not apply to a '{}' operation", key, kind));
      ok = false;
    } else if (key == "when") {
      op.when = read_condition({entry.second, "when", entry.first});
    }
  }

  const Field value{kind_value, kind, kind_key};
  if (kind == "call") {
    op.kind = Op::Kind::Call;
    const std::optional<ModuleIndex> callee = resolve_call(kind_value, module);
    ok = ok && callee.has_value();
    op.callee = callee.value_or(kNone);
    ok = read_call_input(node, module, op) && ok;
    for (const auto& entry : node) {
      if (entry.first.Scalar() == "hooks") {
        const auto hooks =
            reader_.read_choice({entry.second, "hooks", entry.first}, "call hooks", kCallHooks);
        ok = ok && hooks.has_value();
        op.hooks = hooks == "none"  ? CallHooks::None
                   : hooks == "own" ? CallHooks::Own
                                    : CallHooks::All;
      }
      if (entry.first.Scalar() == "output") {
        const auto output =
            reader_.read_choice({entry.second, "output", entry.first}, "call output", kCallOutputs);
        ok = ok && output.has_value();
        op.output_leaf = output.has_value();
      }
    }
  } else if (kind == "gathered") {
    op.kind = Op::Kind::Gathered;
    ok = read_gathered(node, value, module, op.gathered) && ok;
    ok = read_body(node, kind, module, op) && ok;
  } else if (kind == "access" || kind == "returns") {
    op.kind = kind == "access" ? Op::Kind::Access : Op::Kind::Return;
    const std::optional<ParamIndex> param = resolve_param(kind_value, kind, module);
    ok = ok && param.has_value();
    op.param = param.value_or(kNone);
    for (const auto& entry : node) {
      if (entry.first.Scalar() == "kind") {
        const auto access =
            reader_.read_choice({entry.second, "kind", entry.first}, "access kind", kAccessKinds);
        ok = ok && access.has_value();
        op.access = access == "metadata" ? AccessKind::Metadata : AccessKind::Data;
      }
    }
  } else if (kind == "checkpoint") {
    op.kind = Op::Kind::Checkpoint;
    // `checkpoint: {}` or `checkpoint:` alone mean DeepSpeed's default, reentrant.
    if (!kind_value.IsNull()) {
      if (reader_.expect_map(value)) {
        reader_.check_keys(kind_value, kCheckpointKeys, "'checkpoint'");
        for (const auto& entry : kind_value) {
          if (entry.first.Scalar() == "reentrant") {
            const auto reentrant = reader_.read_bool({entry.second, "reentrant", entry.first});
            ok = ok && reentrant.has_value();
            op.reentrant = reentrant.value_or(true);
          }
        }
      } else {
        ok = false;
      }
    }
    ok = read_body(node, kind, module, op) && ok;
  } else {
    op.kind = Op::Kind::Repeat;
    const std::optional<int64_t> count = reader_.read_int(value, 1);
    ok = ok && count.has_value();
    op.count = count.value_or(1);
    ok = read_body(node, kind, module, op) && ok;
  }
  return ok;
}

bool ScenarioParser::read_call_input(const YAML::Node& node, ModuleIndex module, Op& op) {
  bool ok = true;
  bool given = false;
  for (const auto& entry : node) {
    const std::string& key = entry.first.Scalar();
    if (key != "input" && key != "input_from") {
      continue;
    }
    if (given) {
      reader_.error(entry.first, "give one of 'input' and 'input_from'");
      return false;
    }
    given = true;
    if (key == "input") {
      const auto input =
          reader_.read_choice({entry.second, "input", entry.first}, "call input", kCallInputs);
      ok = input.has_value();
      op.input = input == "no_grad" ? CallInput::NoGrad : CallInput::ForwardInput;
    } else {
      const std::optional<ModuleIndex> from = resolve_call(entry.second, module, "input_from");
      ok = from.has_value();
      if (from) {
        op.input = CallInput::OutputOf;
        op.input_from = *from;
        op.input_from_loc = YamlReader::loc(entry.second);
        op.input_from_length = static_cast<uint32_t>(entry.second.Scalar().size());
      }
    }
  }
  return ok;
}

bool ScenarioParser::read_body(const YAML::Node& op_node, std::string_view kind, ModuleIndex module,
                               Op& op) {
  for (const auto& entry : op_node) {
    if (entry.first.Scalar() != "body") {
      continue;
    }
    if (entry.second.IsSequence() && entry.second.size() == 0) {
      reader_.error(entry.second, fmt::format("'{}' has an empty 'body'", kind));
      return false;
    }
    op.body = read_ops({entry.second, "body", entry.first}, module);
    return true;
  }
  reader_.error(op_node, fmt::format("'{}' needs a 'body' list of operations", kind));
  return false;
}

Condition ScenarioParser::read_condition(const Field& field) {
  Condition condition;
  if (!reader_.expect_map(field)) {
    return condition;
  }
  reader_.check_keys(field.value, kConditionKeys, "'when'");
  std::optional<YAML::Node> window_key;  // the first of micro_step / window_micro_step
  for (const auto& entry : field.value) {
    const std::string& key = entry.first.Scalar();
    const Field value{entry.second, key, entry.first};
    const bool window = key == "micro_step" || key == "window_micro_step";
    if (window) {
      if (window_key) {
        reader_.error(entry.first,
                      fmt::format("'{}' and '{}' are one condition (the index within the "
                                  "accumulation window); give one of them",
                                  window_key->Scalar(), key),
                      {reader_.quoting_note(*window_key, "the other one is here")});
        continue;
      }
      window_key = entry.first;
    }
    std::vector<int64_t>* list = key == "step"      ? &condition.steps
                                 : window           ? &condition.micro_steps
                                 : key == "rank"    ? &condition.ranks
                                 : key == "engine"  ? &condition.engines
                                 : key == "forward" ? &condition.forwards
                                                    : nullptr;
    if (list != nullptr) {
      *list = reader_.read_int_list(value, 0).value_or(std::vector<int64_t>{});
      warn_if_constant(value, *list);
    } else if (key == "route" || key == "layerdrop") {
      if (condition.draw.kind != Draw::Kind::None) {
        reader_.error(entry.first, "give one of 'route' and 'layerdrop', not both");
      }
      condition.draw = read_draw(value, true);
    } else if (key == "phase") {
      if (auto phase = reader_.read_choice(value, "phase", kPhases)) {
        condition.phase = *phase == "train"  ? Condition::Phase::Train
                          : *phase == "eval" ? Condition::Phase::Eval
                                             : Condition::Phase::Generate;
      }
    }
  }
  return condition;
}

void ScenarioParser::warn_if_constant(const Field& field, const std::vector<int64_t>& values) {
  // The values the condition's quantity takes in this scenario, where the file fixes them: the
  // window index below gradient_accumulation_steps, the rank below world_size.
  const std::string_view key = field.name;
  int64_t count = 0;
  std::string why;
  if (key == "micro_step" || key == "window_micro_step") {
    count = scenario_.config.gradient_accumulation_steps;
    why = fmt::format(
        "'{}' is the micro-step's index within the accumulation window, 0 to {} with "
        "gradient_accumulation_steps {}{}",
        key, count - 1, count,
        key == "micro_step" ? " (not the engine-wide micro-step that outcomes, traces and "
                              "`expect` count; `window_micro_step` is its unambiguous name)"
                            : "");
  } else if (key == "rank") {
    count = scenario_.world_size;
    why = fmt::format("ranks are 0 to {} with world_size {}", count - 1, count);
  } else {
    return;
  }
  // The distinct values in range, not a flag per value the quantity can take: count is up to
  // gradient_accumulation_steps, which may be 10^12 (a table of flags was a runaway allocation).
  std::vector<int64_t> matched;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < count) {
      matched.push_back(values[i]);
      continue;
    }
    // Point at the value itself when it is one element of a list.
    const YAML::Node& at = field.value.IsSequence() && i < field.value.size()
                               ? field.value[i]
                               : YamlReader::where(field);
    reader_.warning(at, fmt::format("{}: {} can never match ({})", key, values[i], why));
  }
  std::sort(matched.begin(), matched.end());
  matched.erase(std::unique(matched.begin(), matched.end()), matched.end());
  // Values are at least 0 (read_int_list's minimum), so count distinct ones below count cover
  // every value.
  if (!values.empty() && static_cast<int64_t>(matched.size()) == count) {
    reader_.warning(
        YamlReader::where(field),
        fmt::format("{} matches every value it can take, so it always holds ({})", key, why));
  }
}

bool ScenarioParser::read_gathered(const YAML::Node& node, const Field& paths, ModuleIndex module,
                                   GatheredBlock& block) {
  bool ok = true;
  for (const auto& entry : node) {
    if (entry.first.Scalar() == "modifier_rank") {
      const std::optional<int64_t> rank =
          read_modifier_rank({entry.second, "modifier_rank", entry.first});
      ok = ok && rank.has_value();
      block.modifier_rank = rank.value_or(-1);
    }
  }
  return resolve_gathered_paths(paths, module, block) && ok;
}

std::optional<int64_t> ScenarioParser::read_modifier_rank(const Field& field) {
  const std::optional<int64_t> rank = reader_.read_int(field, 0);
  if (rank && *rank >= scenario_.world_size) {
    reader_.error(field.value, fmt::format("'modifier_rank' {} is not a rank of a world of {}",
                                           *rank, scenario_.world_size));
    return std::nullopt;
  }
  return rank;
}

bool ScenarioParser::resolve_gathered_paths(const Field& paths, ModuleIndex module,
                                            GatheredBlock& block) {
  if (!reader_.expect_nonempty_seq(
          paths,
          "'gathered' lists no parameters; give parameter or module paths (a module "
          "stands for its parameters(), \"\" for the whole model)")) {
    return false;
  }
  bool ok = true;
  const std::string& prefix = scenario_.modules[module].qualified_name;
  for (const YAML::Node& node : paths.value) {
    const std::optional<std::string> path = reader_.read_string({node, "gathered", {}});
    if (!path) {
      ok = false;
      continue;
    }
    block.paths.push_back(*path);
    // Relative to the running module, or from the root with a leading `/`, as `access` reads.
    const bool from_root = !path->empty() && path->front() == '/';
    const std::string tail = from_root ? path->substr(1) : *path;
    const std::string name = from_root || prefix.empty() ? tail
                             : tail.empty()              ? prefix
                                                         : prefix + "." + tail;
    if (const auto param = param_by_name_.find(name); param != param_by_name_.end()) {
      block.params.push_back(param->second);
      continue;
    }
    const auto found = module_by_name_.find(name);
    if (found == module_by_name_.end()) {
      std::vector<std::string> names;
      if (reader_.can_suggest(scenario_.modules.size() + scenario_.params.size())) {
        for (const ModuleSpec& spec : scenario_.modules) {
          names.push_back(spec.qualified_name);
        }
        for (const ParamSpec& param : scenario_.params) {
          names.push_back(param.qualified_name);
        }
      }
      reader_.error(
          node, fmt::format("'{}' names no parameter or module of '{}'", *path, describe(module)),
          reader_.did_you_mean(node, name, names));
      ok = false;
      continue;
    }
    // module.parameters(): its own and its descendants', in registration order.
    std::vector<ModuleIndex> stack = {found->second};
    std::vector<ModuleIndex> order;
    while (!stack.empty()) {
      const ModuleIndex at = stack.back();
      stack.pop_back();
      order.push_back(at);
      const auto& children = scenario_.modules[at].children;
      stack.insert(stack.end(), children.rbegin(), children.rend());
    }
    for (ModuleIndex at : order) {
      const auto& own = scenario_.modules[at].params;
      block.params.insert(block.params.end(), own.begin(), own.end());
    }
  }
  return ok;
}

std::optional<ModuleIndex> ScenarioParser::resolve_call(const YAML::Node& node, ModuleIndex module,
                                                        std::string_view key) {
  const std::optional<std::string> path = reader_.read_string({node, key, {}});
  if (!path) {
    return std::nullopt;
  }
  // Walk the dotted path one child at a time: `layers.0` is child `0` of child `layers`.
  ModuleIndex at = module;
  std::string walked;
  size_t start = 0;
  while (true) {
    const size_t dot = path->find('.', start);
    const std::string segment =
        path->substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const ModuleIndex next = child_named(at, segment);
    const std::string walked_before = walked;
    walked = walked.empty() ? segment : walked + "." + segment;
    if (next == kNone) {
      const std::string wanted = dot == std::string::npos ? walked : walked + path->substr(dot);
      // A module calling itself gets a plain note: the nearest child name would mislead.
      std::vector<Note> notes;
      if (at == module && segment == scenario_.modules[module].name) {
        Note note;
        note.loc = YamlReader::loc(node);
        note.message = "a module cannot call itself; it calls its children";
        notes.push_back(note);
      } else if (reader_.can_suggest(scenario_.modules[at].children.size())) {
        std::vector<std::string> candidates;
        for (ModuleIndex child : scenario_.modules[at].children) {
          const std::string& name = scenario_.modules[child].name;
          candidates.push_back(walked_before.empty() ? name : walked_before + "." + name);
        }
        notes = reader_.did_you_mean(node, wanted, candidates);
      }
      reader_.error(
          node, fmt::format("module '{}' is not a child of '{}'", *path, describe(module)), notes);
      return std::nullopt;
    }
    at = next;
    if (dot == std::string::npos) {
      return at;
    }
    start = dot + 1;
  }
}

ModuleIndex ScenarioParser::child_named(ModuleIndex module, const std::string& name) const {
  // A hash lookup by qualified name (a scan of 10^5 siblings per call was quadratic). Every
  // child is registered under its qualified name, so a miss means there is none; a hit is
  // checked, because a child whose own name has a dot can share it with a grandchild (the
  // first registered keeps it), and then the children are scanned.
  const ModuleSpec& parent = scenario_.modules[module];
  const auto found = module_by_name_.find(join_name(parent.qualified_name, name));
  if (found == module_by_name_.end()) {
    return kNone;
  }
  const ModuleSpec& hit = scenario_.modules[found->second];
  if (hit.parent == module && hit.name == name) {
    return found->second;
  }
  for (ModuleIndex child : parent.children) {
    if (scenario_.modules[child].name == name) {
      return child;
    }
  }
  return kNone;
}

std::optional<ParamIndex> ScenarioParser::resolve_param(const YAML::Node& node,
                                                        std::string_view key, ModuleIndex module) {
  const std::optional<std::string> path = reader_.read_string({node, key, {}});
  if (!path) {
    return std::nullopt;
  }
  // `/a.b.weight` is from the root; anything else is relative to the running module.
  const std::string& prefix = scenario_.modules[module].qualified_name;
  const bool from_root = !path->empty() && path->front() == '/';
  const std::string name =
      from_root ? path->substr(1) : (prefix.empty() ? *path : prefix + "." + *path);
  const auto found = param_by_name_.find(name);
  if (found != param_by_name_.end()) {
    return found->second;
  }
  std::vector<std::string> names;
  if (reader_.can_suggest(scenario_.params.size())) {
    for (const ParamSpec& param : scenario_.params) {
      names.push_back(param.qualified_name);
    }
  }
  std::vector<Note> notes;
  if (const std::optional<std::string> best = reader_.closest(name, names)) {
    // Suggest the spelling the user would write here: relative below this module, else rooted.
    const std::string below = prefix.empty() ? "" : prefix + ".";
    const bool relative = !from_root && best->compare(0, below.size(), below) == 0;
    Note note;
    note.loc = YamlReader::loc(node);
    note.message =
        fmt::format("did you mean '{}'?", relative ? best->substr(below.size()) : "/" + *best);
    notes.push_back(note);
  }
  reader_.error(node, fmt::format("unknown parameter '{}' in module '{}'", *path, describe(module)),
                notes);
  return std::nullopt;
}

}  // namespace zfetch::model::detail
