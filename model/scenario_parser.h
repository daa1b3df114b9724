// The scenario reader behind load.h: model tree, programs, schedule and expectations (internal).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "model/scenario.h"
#include "model/yaml_reader.h"

namespace zfetch::model::detail {

/// Fills a Scenario from the parts of a scenario file, reporting every problem through the
/// reader. Modules and parameters get their indices in file order (depth-first pre-order).
class ScenarioParser {
 public:
  ScenarioParser(YamlReader& reader, Scenario& scenario) : reader_(reader), scenario_(scenario) {}

  /// Reads the module tree rooted at `root`, then ties, forward programs and the graph. The
  /// programs come last because they may name any module or parameter of the file.
  void read_model(const Field& root);
  /// The `templates:` block: module bodies that `template: NAME` instantiates (before read_model).
  void read_templates(const Field& field);
  void read_schedule(const Field& field);
  /// The params a `gathered` block lists: each path a param or a module (its parameters()),
  /// relative to `module` (a leading `/`: from the root).
  bool resolve_gathered_paths(const Field& paths, ModuleIndex module, GatheredBlock& block);
  /// Needs read_model first: expectations name modules.
  void read_expectations(const Field& field);
  /// Needs read_model first (of every engine): resolves each item's `engine`, a `generate`'s
  /// `encoder` and a `gathered` block's `params` in that engine's model. `engine_parsers` are
  /// the engines' parsers (empty with one engine: this one read the model).
  void resolve_schedule(const std::vector<std::string>& engine_names,
                        const std::vector<ScenarioParser*>& engine_parsers);
  /// The parsers of the other engines, whose module names an expectation may use.
  void set_engine_parsers(std::vector<const ScenarioParser*> parsers) {
    engine_parsers_ = std::move(parsers);
  }
  /// Whether this model (or another engine's) has a module of that name.
  [[nodiscard]] bool has_module(const std::string& qualified_name) const;

 private:
  void read_module(const Field& field, ModuleIndex parent);
  void read_instances(const YAML::Node& node, const YAML::Node& template_key, ModuleIndex parent);
  /// One module from `layers` of mappings, the first layer that has a key giving its value
  /// (an instance's override, the instance entry `node`, its template). `index_name` names
  /// the `count` instances `0`, `1`, ... as a ModuleList does.
  void read_module_layers(const std::vector<YAML::Node>& layers, const YAML::Node& node,
                          ModuleIndex parent, const std::string* index_name);
  void read_params(const Field& field, ModuleIndex module);
  void read_param(const YAML::Node& key, const YAML::Node& value, ModuleIndex module);
  bool read_shape(const Field& field, ParamSpec& param);
  void check_sibling_names(ModuleIndex module);
  void resolve_ties();
  void check_tie(ParamIndex alias, ParamIndex canonical);
  void build_graph();

  std::vector<Op> read_ops(const Field& field, ModuleIndex module);
  bool read_op(const YAML::Node& node, ModuleIndex module, Op& op);
  void read_call_each(const YAML::Node& node, ModuleIndex module, std::vector<Op>& ops);
  bool read_body(const YAML::Node& op_node, std::string_view kind, ModuleIndex module, Op& op);
  /// A call's `input` / `input_from`.
  bool read_call_input(const YAML::Node& node, ModuleIndex module, Op& op);
  /// A block's `modifier_rank`: a rank of the world, or nullopt after an error.
  std::optional<int64_t> read_modifier_rank(const Field& field);
  /// A `gathered` operation's paths and `modifier_rank`.
  bool read_gathered(const YAML::Node& node, const Field& paths, ModuleIndex module,
                     GatheredBlock& block);
  /// Checks that each `input_from` names an earlier call of its scope, and marks that call.
  void link_call_inputs(std::vector<Op>& forward);
  Condition read_condition(const Field& field);
  /// A located warning where a `when` value can never match (a window index past
  /// gradient_accumulation_steps, a rank past world_size) or the values cover every case.
  void warn_if_constant(const Field& field, const std::vector<int64_t>& values);
  /// `route: {seed, top_k[, of, index]}` or `layerdrop: {seed, p[, index]}`; `of` and `index`
  /// only `in_when` (on `call_each` the children are the candidates).
  Draw read_draw(const Field& field, bool in_when);
  /// A number from 0 to 1 (`layerdrop`'s `p`).
  std::optional<double> read_probability(const Field& field);
  std::optional<ModuleIndex> resolve_call(const YAML::Node& node, ModuleIndex module,
                                          std::string_view key = "call");
  /// The first child of `module` called `name`, or kNone.
  [[nodiscard]] ModuleIndex child_named(ModuleIndex module, const std::string& name) const;
  std::optional<ParamIndex> resolve_param(const YAML::Node& node, std::string_view key,
                                          ModuleIndex module);

  /// What an item names that is resolved once the model is read, and where the item is.
  struct PendingItemKey {
    enum What : uint8_t { Engine, Encoder, GenerateModel, Params } what;
    YAML::Node value;
    YAML::Node key;
    std::vector<size_t> path;  ///< index in the schedule, then in each enclosing `do`
  };
  void read_schedule_item(const YAML::Node& node, std::vector<std::string>& saved_tags,
                          std::vector<ScheduleItem>& into);
  ScheduleItem& schedule_item_at(const std::vector<size_t>& path);
  /// With several engines: every item names its engine, and none is engine-wide.
  void require_engines(const std::vector<ScheduleItem>& items,
                       const std::vector<PendingItemKey>& pending);
  /// A `generate` item's `encoder` or `model` (`key`): a submodule, never the root.
  ModuleIndex resolve_generate_module(const YAML::Node& key, const YAML::Node& node);
  void read_expectation(const YAML::Node& key, const YAML::Node& value);
  /// `train: {forwards: [grad, no_grad, eval]}`.
  std::vector<ForwardMode> read_forward_modes(const Field& field);
  /// `generate: N` or `generate: {tokens, encoder, training}`; false if nothing is usable.
  bool read_generate(const Field& field, ScheduleItem& item);

  /// `prefix.name`, or `name` below the root (whose qualified name is "").
  static std::string join_name(const std::string& prefix, const std::string& name);
  /// How messages name a module: its qualified name, or the model's name for the root.
  [[nodiscard]] std::string describe(ModuleIndex module) const;

  YamlReader& reader_;
  Scenario& scenario_;

  // Per module and param: the node of its name, for "previous definition here" notes.
  std::vector<YAML::Node> module_name_nodes_;
  std::vector<YAML::Node> param_name_nodes_;
  // Lookup only (never iterated into output).
  std::unordered_map<std::string, ParamIndex> param_by_name_;
  std::unordered_map<std::string, ModuleIndex> module_by_name_;

  std::vector<PendingItemKey> pending_items_;
  std::vector<size_t> schedule_path_;  // the enclosing `gathered` items of the one being read
  std::vector<const ScenarioParser*> engine_parsers_;

  YAML::Node templates_;
  std::vector<std::string> template_names_;
  std::vector<std::string> instantiating_;  // the template stack, to refuse a template in itself
  std::vector<std::string> checked_templates_;
  bool module_limit_reported_ = false;

  struct PendingTie {
    ParamIndex param;
    YAML::Node target;
    bool shape_given;
    bool dtype_given;
    bool frozen_given;
  };
  std::vector<PendingTie> ties_;
  // Elements of the parameters read so far (tied ones share their target's): checked against
  // kMaxModelNumel as each is added, so the sum never passes it by more than one parameter.
  int64_t model_numel_ = 0;

  struct PendingForward {
    ModuleIndex module;
    YAML::Node key;
    YAML::Node value;
  };
  std::vector<PendingForward> forwards_;
};

}  // namespace zfetch::model::detail
