// The schedule (train, eval, checkpoints, restarts) and the `expect` block.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "model/outcome.h"
#include "model/scenario_parser.h"
#include "trace/names.h"

namespace zfetch::model::detail {

namespace {

using namespace std::string_view_literals;

constexpr std::array kScheduleKinds = {"train"sv,           "eval"sv,
                                       "save_checkpoint"sv, "restart"sv,
                                       "load_checkpoint"sv, "empty_partition_cache"sv,
                                       "generate"sv,        "gathered"sv};
constexpr std::array kForwardModes = {"grad"sv, "no_grad"sv, "eval"sv};
constexpr std::array kGenerateKeys = {"tokens"sv, "encoder"sv, "training"sv,
                                      "model"sv,  "unwrap"sv,  "engine"sv};
constexpr std::array kGatheredKeys = {"params"sv, "modifier_rank"sv, "engine"sv, "do"sv};
// An expectation names a phase a failure can happen in: every trace phase but `none`.
std::span<const std::string_view> expect_phase_names() {
  return trace::phase_names().subspan(1);
}
constexpr std::array kExpectationKeys = {"outcome"sv,    "phase"sv,  "module"sv,       "step"sv,
                                         "micro_step"sv, "engine"sv, "invalidations"sv};

}  // namespace

void ScenarioParser::read_schedule(const Field& field) {
  if (!reader_.expect_nonempty_seq(field,
                                   "the schedule is empty; give at least one 'train' or 'eval'")) {
    return;
  }
  std::vector<std::string> saved_tags;
  for (const YAML::Node& item : field.value) {
    read_schedule_item(item, saved_tags, scenario_.schedule);
  }
}

ScheduleItem& ScenarioParser::schedule_item_at(const std::vector<size_t>& path) {
  ScheduleItem* item = &scenario_.schedule[path.front()];
  for (size_t k = 1; k < path.size(); ++k) {
    item = &item->body[path[k]];
  }
  return *item;
}

void ScenarioParser::read_schedule_item(const YAML::Node& node,
                                        std::vector<std::string>& saved_tags,
                                        std::vector<ScheduleItem>& into) {
  ScheduleItem item;
  item.loc = YamlReader::loc(node);
  // Where the item will be once pushed: what is resolved after the model (an engine's name, an
  // encoder, a block's params) is found again by this path, and kept only if the item is.
  std::vector<size_t> here = schedule_path_;
  here.push_back(into.size());
  std::vector<PendingItemKey> pending;
  const auto note_engine = [&](const auto& entry) {
    if (entry.first.Scalar() == "engine" &&
        reader_.read_string({entry.second, "engine", entry.first})) {
      pending.push_back({PendingItemKey::Engine, entry.second, entry.first, {}});
    }
  };
  YAML::Node key = node;
  YAML::Node value;
  std::string kind;
  if (node.IsScalar()) {
    kind = node.Scalar();
  } else if (node.IsMap() && node.size() == 1) {
    key.reset(node.begin()->first);
    value.reset(node.begin()->second);
    kind = key.Scalar();
  } else {
    reader_.error(node, fmt::format("expected one schedule action such as 'train: 1', got {}",
                                    describe_value(node)));
    return;
  }
  if (std::find(kScheduleKinds.begin(), kScheduleKinds.end(), kind) == kScheduleKinds.end()) {
    reader_.error(key,
                  fmt::format("unknown schedule action '{}'; valid values are: {}", kind,
                              fmt::join(kScheduleKinds, ", ")),
                  reader_.did_you_mean(key, kind, kScheduleKinds));
    return;
  }
  const bool bare = node.IsScalar() || value.IsNull();
  const Field field{value, kind, key};
  if (kind == "train" || kind == "eval") {
    item.kind = kind == "train" ? ScheduleItem::Kind::Train : ScheduleItem::Kind::Eval;
    const std::string_view count_key = kind == "train" ? "steps" : "passes";
    std::optional<int64_t> count;
    if (bare) {
      count = 1;
    } else if (value.IsMap()) {
      // `overflow`: the optimizer steps (0-based within this item) that fp16 loss scaling
      // skips: params are partitioned, persistent ones are not gathered again (10.21).
      const std::array train_keys = {count_key, "overflow"sv, "forwards"sv, "engine"sv};
      const std::array eval_keys = {count_key, "engine"sv};
      if (kind == "train") {
        reader_.check_keys(value, train_keys, fmt::format("'{}'", kind));
      } else {
        reader_.check_keys(value, eval_keys, fmt::format("'{}'", kind));
      }
      count = 1;
      for (const auto& entry : value) {
        if (entry.first.Scalar() == count_key) {
          count = reader_.read_int({entry.second, count_key, entry.first}, 1);
        } else if (entry.first.Scalar() == "overflow" && kind == "train") {
          item.overflow_steps = reader_.read_int_list({entry.second, "overflow", entry.first}, 0)
                                    .value_or(std::vector<int64_t>{});
        } else if (entry.first.Scalar() == "forwards" && kind == "train") {
          item.forwards = read_forward_modes({entry.second, "forwards", entry.first});
        }
        note_engine(entry);
      }
    } else {
      count = reader_.read_int(field, 1);
    }
    if (!count) {
      return;
    }
    item.steps = *count;
  } else if (kind == "save_checkpoint" || kind == "load_checkpoint") {
    item.kind = kind == "save_checkpoint" ? ScheduleItem::Kind::SaveCheckpoint
                                          : ScheduleItem::Kind::LoadCheckpoint;
    const std::optional<std::string> tag = bare ? std::nullopt : reader_.read_string(field);
    if (bare) {
      reader_.error(key, fmt::format("'{}' needs a checkpoint tag", kind));
    }
    if (!tag) {
      return;
    }
    item.tag = *tag;
    if (item.kind == ScheduleItem::Kind::SaveCheckpoint) {
      saved_tags.push_back(*tag);
    } else if (std::find(saved_tags.begin(), saved_tags.end(), *tag) == saved_tags.end()) {
      reader_.error(value, fmt::format("checkpoint '{}' is loaded before it is saved", *tag),
                    reader_.did_you_mean(value, *tag, saved_tags));
      return;
    }
  } else if (kind == "restart") {
    item.kind = ScheduleItem::Kind::Restart;
    if (!bare) {
      if (!reader_.expect_map(field)) {
        return;
      }
      const std::array known = {"reuse_model"sv};
      reader_.check_keys(value, known, "'restart'");
      for (const auto& entry : value) {
        if (entry.first.Scalar() == "reuse_model") {
          item.reuse_model =
              reader_.read_bool({entry.second, "reuse_model", entry.first}).value_or(false);
        }
      }
    }
  } else if (kind == "generate") {
    item.kind = ScheduleItem::Kind::Generate;
    if (!bare && !read_generate(field, item)) {
      return;
    }
    if (!bare && value.IsMap()) {
      for (const auto& entry : value) {
        if (entry.first.Scalar() == "encoder" && entry.second.IsScalar()) {
          pending.push_back({PendingItemKey::Encoder, entry.second, entry.first, {}});
        } else if (entry.first.Scalar() == "model" && entry.second.IsScalar()) {
          pending.push_back({PendingItemKey::GenerateModel, entry.second, entry.first, {}});
        }
        note_engine(entry);
      }
    }
  } else if (kind == "gathered") {
    // deepspeed.zero.GatheredParameters(params, modifier_rank) around schedule items.
    item.kind = ScheduleItem::Kind::Gathered;
    if (!reader_.expect_map(field)) {
      return;
    }
    reader_.check_keys(value, kGatheredKeys, "'gathered'");
    bool has_params = false;
    bool has_body = false;
    for (const auto& entry : value) {
      const std::string& name = entry.first.Scalar();
      if (name == "params") {
        has_params = true;
        pending.push_back({PendingItemKey::Params, entry.second, entry.first, {}});
      } else if (name == "modifier_rank") {
        const std::optional<int64_t> rank =
            read_modifier_rank({entry.second, "modifier_rank", entry.first});
        if (!rank) {
          return;
        }
        item.gathered.modifier_rank = *rank;
      } else if (name == "do") {
        has_body = true;
        if (!reader_.expect_nonempty_seq({entry.second, "do", entry.first},
                                         "'gathered' has an empty 'do'")) {
          return;
        }
        schedule_path_.push_back(into.size());
        for (const YAML::Node& inner : entry.second) {
          read_schedule_item(inner, saved_tags, item.body);
        }
        schedule_path_.pop_back();
      }
      note_engine(entry);
    }
    if (!has_params || !has_body) {
      reader_.error(key, fmt::format("'gathered' needs '{}'", has_params ? "do" : "params"));
      return;
    }
  } else {
    item.kind = ScheduleItem::Kind::EmptyPartitionCache;
    if (!bare) {
      reader_.error(value, "'empty_partition_cache' takes no value");
      return;
    }
  }
  for (PendingItemKey& key_of_item : pending) {
    key_of_item.path = here;
    pending_items_.push_back(std::move(key_of_item));
  }
  into.push_back(std::move(item));
}

std::vector<ForwardMode> ScenarioParser::read_forward_modes(const Field& field) {
  std::vector<ForwardMode> modes;
  if (!reader_.expect_nonempty_seq(
          field,
          "'forwards' is empty; give the micro-step's root forwards, such as [grad, no_grad]")) {
    return modes;
  }
  for (const YAML::Node& entry : field.value) {
    if (const auto mode = reader_.read_choice({entry, "forwards", {}}, "forward", kForwardModes)) {
      modes.push_back(*mode == "grad"      ? ForwardMode::Grad
                      : *mode == "no_grad" ? ForwardMode::NoGrad
                                           : ForwardMode::Eval);
    }
  }
  return modes;
}

bool ScenarioParser::read_generate(const Field& field, ScheduleItem& item) {
  if (field.value.IsScalar()) {
    const std::optional<int64_t> tokens = reader_.read_int(field, 1);
    item.steps = tokens.value_or(1);
    return tokens.has_value();
  }
  if (!reader_.expect_map(field)) {
    return false;
  }
  reader_.check_keys(field.value, kGenerateKeys, "'generate'");
  for (const auto& entry : field.value) {
    const std::string& name = entry.first.Scalar();
    const Field value{entry.second, name, entry.first};
    if (name == "tokens") {
      item.steps = reader_.read_int(value, 1).value_or(1);
    } else if (name == "training") {
      item.training = reader_.read_bool(value).value_or(false);
    } else if (name == "unwrap") {
      // `none` is the default, not a value a file gives.
      if (const auto behaviour =
              reader_.read_choice(value, "unwrap", kRehookNames.names().subspan(1))) {
        item.unwrap = kRehookNames.find(*behaviour).value_or(Rehook::None);
      }
    } else if (name == "encoder" || name == "model") {
      reader_.read_string(value);  // resolved once the model is read (the schedule comes first)
    }
  }
  return true;
}

void ScenarioParser::resolve_schedule(const std::vector<std::string>& engine_names,
                                      const std::vector<ScenarioParser*>& engine_parsers) {
  // Which engine each item names first: its encoder and params are that engine's.
  for (const PendingItemKey& pending : pending_items_) {
    if (pending.what != PendingItemKey::Engine) {
      continue;
    }
    ScheduleItem& item = schedule_item_at(pending.path);
    const std::string& name = pending.value.Scalar();
    const auto found = std::find(engine_names.begin(), engine_names.end(), name);
    if (engine_names.empty()) {
      reader_.error(pending.key,
                    "'engine' names one of the 'engines:'; this scenario has one engine "
                    "('model:')");
    } else if (found == engine_names.end()) {
      reader_.error(pending.value,
                    fmt::format("unknown engine '{}'; the engines are: {}", name,
                                fmt::join(engine_names, ", ")),
                    reader_.did_you_mean(pending.value, name, engine_names));
    } else {
      item.engine = static_cast<uint32_t>(found - engine_names.begin());
    }
  }
  if (engine_names.size() > 1) {
    require_engines(scenario_.schedule, pending_items_);
  }
  for (const PendingItemKey& pending : pending_items_) {
    ScheduleItem& item = schedule_item_at(pending.path);
    ScenarioParser& owner =
        engine_parsers.empty()
            ? *this
            : *engine_parsers[std::min<size_t>(item.engine, engine_parsers.size() - 1)];
    if (pending.what == PendingItemKey::Params) {
      owner.resolve_gathered_paths({pending.value, "params", pending.key}, 0, item.gathered);
    } else if (pending.what == PendingItemKey::Encoder) {
      item.encoder = owner.resolve_generate_module(pending.key, pending.value);
    } else if (pending.what == PendingItemKey::GenerateModel) {
      item.generate_model = owner.resolve_generate_module(pending.key, pending.value);
    }
  }
}

void ScenarioParser::require_engines(const std::vector<ScheduleItem>& items,
                                     const std::vector<PendingItemKey>& pending) {
  for (const ScheduleItem& item : items) {
    using Kind = ScheduleItem::Kind;
    if (item.kind == Kind::Restart || item.kind == Kind::SaveCheckpoint ||
        item.kind == Kind::LoadCheckpoint || item.kind == Kind::EmptyPartitionCache) {
      reader_.error_at(item.loc, 1,
                       "with several engines, the schedule runs 'train', 'eval', 'generate' and "
                       "'gathered' items only (each naming its 'engine')");
      continue;
    }
    const bool named = std::any_of(pending.begin(), pending.end(), [&](const PendingItemKey& p) {
      return p.what == PendingItemKey::Engine && &schedule_item_at(p.path) == &item;
    });
    if (!named) {
      reader_.error_at(item.loc, 1,
                       "with several engines, each schedule item names its engine, such as "
                       "'train: {steps: 1, engine: NAME}'");
    }
    require_engines(item.body, pending);
  }
}

ModuleIndex ScenarioParser::resolve_generate_module(const YAML::Node& key, const YAML::Node& node) {
  const std::string& path = node.Scalar();
  const auto found = module_by_name_.find(path);
  if (found != module_by_name_.end() && found->second != 0) {
    return found->second;
  }
  std::vector<std::string> names;
  for (const ModuleSpec& spec : scenario_.modules) {
    if (!spec.qualified_name.empty()) {
      names.push_back(spec.qualified_name);
    }
  }
  const bool unknown = found == module_by_name_.end();
  const std::string message =
      unknown ? fmt::format("unknown module '{}' as the '{}' of 'generate'", path, key.Scalar())
      : key.Scalar() == "encoder"
          ? std::string(
                "the 'encoder' of 'generate' is a submodule called directly; the root's "
                "forwards are the generate loop's")
          : std::string(
                "the 'model' of 'generate' is the root, which generate() runs when 'model' is "
                "left out");
  reader_.error(node, message,
                unknown ? reader_.did_you_mean(node, path, names) : std::vector<Note>{});
  return kNone;
}

bool ScenarioParser::has_module(const std::string& qualified_name) const {
  if (module_by_name_.count(qualified_name) != 0) {
    return true;
  }
  return std::any_of(engine_parsers_.begin(), engine_parsers_.end(),
                     [&](const ScenarioParser* p) { return p->has_module(qualified_name); });
}

void ScenarioParser::read_expectations(const Field& field) {
  if (!reader_.expect_map(field)) {
    return;
  }
  std::vector<std::string> seen;
  for (const auto& entry : field.value) {
    // The keys are policy names, so a wrong key is reported as an unknown policy.
    const std::optional<std::string> policy =
        reader_.read_choice({entry.first, "expect", {}}, "policy", kDiscoveryNames.names());
    if (!policy) {
      continue;
    }
    if (std::find(seen.begin(), seen.end(), *policy) != seen.end()) {
      reader_.error(entry.first, fmt::format("duplicate expectation for '{}'", *policy));
      continue;
    }
    seen.push_back(*policy);
    read_expectation(entry.first, entry.second);
  }
}

void ScenarioParser::read_expectation(const YAML::Node& key, const YAML::Node& value) {
  PolicyExpectation result;
  const std::string policy = key.Scalar();
  result.policy = kDiscoveryNames.find(policy).value_or(Discovery::ResidentSkip);
  Expectation& expect = result.expect;
  expect.loc = YamlReader::loc(key);
  if (!reader_.expect_map({value, policy, key})) {
    return;
  }
  reader_.check_keys(value, kExpectationKeys, fmt::format("the expectation for '{}'", policy));
  bool has_outcome = false;
  for (const auto& entry : value) {
    const std::string& name = entry.first.Scalar();
    const Field field{entry.second, name, entry.first};
    if (name == "outcome") {
      has_outcome = true;
      if (const auto outcome = reader_.read_choice(field, "outcome", kOutcomeNames.names())) {
        expect.outcome = kOutcomeNames.find(*outcome).value_or(OutcomeKind::Pass);
      }
    } else if (name == "phase") {
      if (const auto phase = reader_.read_choice(field, "phase", expect_phase_names())) {
        expect.phase = trace::parse_phase(*phase);
      }
    } else if (name == "module") {
      std::optional<std::string> module = reader_.read_string(field);
      if (module == trace::kRootModuleName) {
        module = "";  // the root as outputs name it; its qualified name is ""
      }
      if (module && !has_module(*module)) {
        std::vector<std::string> names;
        for (const ModuleSpec& spec : scenario_.modules) {
          names.push_back(spec.qualified_name);
        }
        reader_.error(
            entry.second,
            fmt::format("unknown module '{}' in the expectation for '{}'", *module, policy),
            reader_.did_you_mean(entry.second, *module, names));
      }
      expect.module = module;
    } else if (name == "step" || name == "micro_step" || name == "engine" ||
               name == "invalidations") {
      std::optional<int64_t>& slot = name == "step"         ? expect.step
                                     : name == "micro_step" ? expect.micro_step
                                     : name == "engine"     ? expect.engine
                                                            : expect.invalidations;
      slot = reader_.read_int(field, 0);
    }
  }
  if (!has_outcome) {
    reader_.error(key, fmt::format("the expectation for '{}' has no 'outcome'", policy));
  }
  scenario_.expectations.push_back(std::move(result));
}

}  // namespace zfetch::model::detail
