// Loading a scenario file: YAML syntax, top-level keys, the ds_config (inline or a JSON file).
#include "model/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iterator>
#include <memory>

#include "io/input_file.h"
#include "model/ds_config_parse.h"
#include "model/hf_auto.h"
#include "model/hjson_read.h"
#include "model/limits.h"
#include "model/read_error.h"
#include "model/scenario_parser.h"
#include "model/yaml_limits.h"
#include "model/yaml_merge.h"
#include "model/yaml_reader.h"

namespace zfetch::model {

namespace {

using namespace std::string_view_literals;
using detail::Field;
using detail::SourceText;
using detail::YamlReader;

constexpr std::array kTopKeys = {
    "name"sv,
    "source"sv,
    "world_size"sv,
    "input_requires_grad"sv,
    "zenflow"sv,
    "deepspeed"sv,
    "deepspeed_config"sv,
    "hf"sv,
    "timing"sv,
    "templates"sv,
    "model"sv,
    "engines"sv,
    "schedule"sv,
    "expect"sv,
};
constexpr std::array kHfKeys = {"hidden_size"sv, "per_device_train_batch_size"sv,
                                "gradient_accumulation_steps"sv, "fp16"sv, "bf16"sv};
// hidden_size^2 * 9 stays far inside int64_t.
constexpr int64_t kMaxHiddenSize = int64_t{1} << 24;
constexpr std::array kTimingKeys = {"tokens_per_micro_batch"sv, "calibration"sv};

Diagnostic whole_file_error(const std::string& file, std::string message) {
  Diagnostic diagnostic;
  diagnostic.file = file;
  diagnostic.message = std::move(message);
  return diagnostic;
}

// Reads `deepspeed_config: path`: the file's text goes to read_ds_config_text.
void read_config_file(YamlReader& reader, const Field& field, std::string_view base_dir,
                      const HfTrainingArgs& hf, DeepSpeedConfig& config, DiagnosticList& out) {
  const std::optional<std::string> relative = reader.read_string(field);
  if (!relative) {
    return;
  }
  const std::string path =
      (std::filesystem::path(base_dir) / *relative).lexically_normal().generic_string();
  const io::InputText input = io::read_input_file(path);
  if (!input.text && input.error_line != 0) {
    out.push_back(read_error(path, input, ""));
    return;
  }
  if (!input.text) {
    reader.error(field.value,
                 fmt::format("cannot read ds_config file '{}': {}", path, input.error));
    return;
  }
  read_ds_config_text(path, *input.text, hf, config, out);
}

void read_timing(YamlReader& reader, const Field& field, TimingSpec& timing) {
  if (!reader.expect_map(field)) {
    return;
  }
  reader.check_keys(field.value, kTimingKeys, "'timing'");
  for (const auto& entry : field.value) {
    const std::string& key = entry.first.Scalar();
    const Field value{entry.second, key, entry.first};
    if (key == "tokens_per_micro_batch") {
      timing.tokens_per_micro_batch =
          reader.read_int(value, 0, false, kMaxTokensPerMicroBatch).value_or(0);
    } else if (key == "calibration") {
      timing.calibration = reader.read_string(value).value_or("");
    }
  }
}

// The `hf:` block: what the HF integration fills "auto" values from.
void read_hf(YamlReader& reader, const Field& field, HfTrainingArgs& hf) {
  if (!reader.expect_map(field)) {
    return;
  }
  reader.check_keys(field.value, kHfKeys, "'hf'");
  for (const auto& entry : field.value) {
    const std::string& key = entry.first.Scalar();
    const Field value{entry.second, key, entry.first};
    if (key == "hidden_size") {
      if (auto size = reader.read_int(value, 1)) {
        if (*size > kMaxHiddenSize) {
          reader.error(entry.second, fmt::format("expected a hidden size of at most {}, got {}",
                                                 kMaxHiddenSize, *size));
        } else {
          hf.hidden_size = *size;
        }
      }
    } else if (key == "per_device_train_batch_size" || key == "gradient_accumulation_steps") {
      if (auto count = reader.read_int(value, 1)) {
        (key == "per_device_train_batch_size" ? hf.per_device_train_batch_size
                                              : hf.gradient_accumulation_steps) = *count;
      }
    } else if (key == "fp16" || key == "bf16") {
      if (auto flag = reader.read_bool(value)) {
        (key == "fp16" ? hf.fp16 : hf.bf16) = *flag;
      }
    }
  }
}

constexpr std::array kEngineKeys = {"model"sv};

// `engines: {NAME: {model: ...}, ...}`: several engines in one process, each its own model; the
// top level's model becomes the first one's (for the tools that show one model).
void read_engines(YamlReader& reader, const Field& field, const std::optional<Field>& templates,
                  Scenario& scenario,
                  std::vector<std::unique_ptr<detail::ScenarioParser>>& parsers) {
  if (!reader.expect_map(field)) {
    return;
  }
  if (field.value.size() == 0) {
    reader.error(field.value, "'engines' is empty; give each engine a name and a 'model'");
    return;
  }
  scenario.engines.reserve(field.value.size());  // each parser keeps a reference to its engine
  for (const auto& entry : field.value) {
    const std::optional<std::string> name = reader.read_string({entry.first, "engines", {}});
    if (!name) {
      continue;
    }
    if (!reader.expect_map({entry.second, *name, entry.first})) {
      continue;
    }
    reader.check_keys(entry.second, kEngineKeys, fmt::format("engine '{}'", *name));
    std::optional<Field> model;
    for (const auto& key : entry.second) {
      if (key.first.Scalar() == "model") {
        model = Field{key.second, "model", key.first};
      }
    }
    if (!model) {
      reader.error(entry.first, fmt::format("engine '{}' needs a 'model'", *name));
      continue;
    }
    // The file's settings, read before the engines; the model, schedule and expectations are
    // each engine's own (read below) or the file's (copied in at the end).
    Scenario engine = scenario;
    engine.schedule.clear();
    engine.engine_names.clear();
    engine.engines.clear();
    scenario.engine_names.push_back(*name);
    scenario.engines.push_back(std::move(engine));
    parsers.push_back(std::make_unique<detail::ScenarioParser>(reader, scenario.engines.back()));
    if (templates) {
      parsers.back()->read_templates(*templates);
    }
    parsers.back()->read_model(*model);
  }
  if (!scenario.engines.empty()) {
    scenario.modules = scenario.engines.front().modules;
    scenario.params = scenario.engines.front().params;
    scenario.graph = scenario.engines.front().graph;
  }
}

void read_top_level(YamlReader& reader, const YAML::Node& root, std::string_view base_dir,
                    Scenario& scenario, DiagnosticList& out) {
  if (!root.IsMap()) {
    if (YamlReader::loc(root).line == 0) {
      out.push_back(whole_file_error(reader.source().file(), "the scenario file is empty"));
    } else {
      reader.error(root, fmt::format("expected a mapping at the top of the scenario, got {}",
                                     detail::describe_value(root)));
    }
    return;
  }
  // Keys starting with `x-` are ignored: a place to define YAML anchors for merge keys.
  YAML::Node checked(YAML::NodeType::Map);
  for (const auto& entry : root) {
    if (!entry.first.IsScalar() || entry.first.Scalar().rfind("x-", 0) != 0) {
      checked.force_insert(entry.first, entry.second);
    }
  }
  reader.check_keys(checked, kTopKeys, "the scenario");
  detail::ScenarioParser parser(reader, scenario);
  const auto find = [&](std::string_view name) -> std::optional<Field> {
    for (const auto& entry : root) {
      if (entry.first.Scalar() == name) {
        return Field{entry.second, name, entry.first};
      }
    }
    return std::nullopt;
  };
  const auto require = [&](std::string_view name) {
    std::optional<Field> field = find(name);
    if (!field) {
      out.push_back(
          whole_file_error(reader.source().file(), fmt::format("missing required key '{}'", name)));
    }
    return field;
  };

  if (auto field = require("name")) {
    scenario.name = reader.read_string(*field).value_or("");
  }
  if (auto field = find("source")) {
    scenario.source = reader.read_string(*field).value_or("");
  }
  if (auto field = find("world_size")) {
    scenario.world_size = reader.read_int(*field, 1, false, kMaxWorldSize).value_or(1);
  }
  if (auto field = find("input_requires_grad")) {
    scenario.input_requires_grad = reader.read_bool(*field).value_or(false);
  }
  if (auto field = find("zenflow")) {
    scenario.zenflow = reader.read_bool(*field).value_or(false);
  }
  // The schedule first: "auto" values may be filled from its number of steps.
  const std::optional<Field> engines_field = find("engines");
  const std::optional<Field> model_field = engines_field ? find("model") : require("model");
  if (engines_field && model_field) {
    reader.error(model_field->key,
                 "give 'model' (one engine) or 'engines' (several, each with its own model), not "
                 "both");
  }
  if (auto field = require("schedule")) {
    parser.read_schedule(*field);
  }
  HfTrainingArgs hf;
  hf.world_size = scenario.world_size;
  for (const ScheduleItem& item : scenario.schedule) {
    if (item.kind == ScheduleItem::Kind::Train) {
      hf.training_steps += item.steps;
    }
  }
  if (auto field = find("hf")) {
    read_hf(reader, *field, hf);
  }
  const std::optional<Field> inline_config = find("deepspeed");
  const std::optional<Field> config_file = find("deepspeed_config");
  if (config_file) {
    read_config_file(reader, *config_file, base_dir, hf, scenario.config, out);
  }
  if (inline_config) {
    // Inline keys override the file's, key by key.
    detail::read_deepspeed_config(reader, *inline_config, hf, scenario.config,
                                  config_file.has_value());
  }
  if (!inline_config && !config_file) {
    // No ds_config at all: zfetch simulates ZeRO-3, so the one required key is implied.
    scenario.config.zero.stage = 3;
  }
  scenario.zenflow = scenario.zenflow || scenario.config.zero.zenflow;
  if (auto field = find("timing")) {
    read_timing(reader, *field, scenario.timing);
  }
  if (auto field = find("templates"); field && !engines_field) {
    parser.read_templates(*field);
  }
  // Each engine's model is read by a parser of its own, into a scenario of its own.
  std::vector<std::unique_ptr<detail::ScenarioParser>> engine_parsers;
  if (engines_field && !model_field) {
    read_engines(reader, *engines_field, find("templates"), scenario, engine_parsers);
  }
  std::vector<detail::ScenarioParser*> parsers;
  for (const auto& p : engine_parsers) {
    parsers.push_back(p.get());
  }
  if (model_field) {
    parser.read_model(*model_field);
  }
  if (model_field || engines_field) {
    parser.resolve_schedule(scenario.engine_names, parsers);
  }
  parser.set_engine_parsers({parsers.begin(), parsers.end()});
  if (auto field = find("expect")) {
    parser.read_expectations(*field);
  }
  for (size_t e = 0; e < scenario.engines.size(); ++e) {
    // Every engine runs the one schedule and config of the file.
    Scenario& engine = scenario.engines[e];
    engine.schedule = scenario.schedule;
    engine.expectations = scenario.expectations;
  }
}

// A tab in the leading blanks of line `line` or of the nearest non-blank line above it: what
// yaml-cpp's syntax error there is about (it says "illegal map value" or "end of map not found").
std::optional<SourceLoc> indenting_tab(const SourceText& source, uint32_t line) {
  for (uint32_t at = line; at > 0; --at) {
    const std::string text = source.line(at);
    const size_t content = text.find_first_not_of(" \t");
    if (content == std::string::npos) {
      continue;
    }
    const size_t tab = text.find('\t');
    if (tab < content) {
      return SourceLoc{at, static_cast<uint32_t>(tab + 1)};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

// The file is hjson, as DeepSpeed reads it (model/hjson_read.h), rewritten as YAML so that the
// same reader as an inline `deepspeed:` block checks it, with every location mapped back into
// the file.
void read_ds_config_text(const std::string& path, std::string_view text, const HfTrainingArgs& hf,
                         DeepSpeedConfig& config, DiagnosticList& out) {
  const SourceText source(path, text);
  YamlReader config_reader(source, out);
  detail::HjsonDocument document =
      detail::read_hjson(text, detail::kMaxYamlDepth, kMaxDsConfigNodes);
  if (document.error) {
    const detail::HjsonError& error = *document.error;
    std::vector<Note> notes;
    std::string message = error.message;
    if (error.first_offset) {
      Note note;
      note.loc = source.loc_of_offset(*error.first_offset);
      note.message = "first given here";
      note.source_line = source.line(note.loc.line);
      notes.push_back(std::move(note));
    } else {
      message = "invalid ds_config: " + message;
    }
    config_reader.error_at(source.loc_of_offset(error.offset), 1, std::move(message),
                           std::move(notes));
    return;
  }
  YAML::Node root;
  try {
    root = YAML::Load(document.yaml);
  } catch (const YAML::Exception& ex) {
    // read_hjson writes only what YAML reads; this would be a bug in it, reported, not thrown.
    config_reader.error_at(
        {}, 1, fmt::format("internal error rewriting the ds_config as YAML: {}", ex.what()));
    return;
  }
  config_reader.set_line_origins(std::move(document.line_origins));
  detail::read_deepspeed_config(config_reader, Field{root, "deepspeed_config", {}}, hf, config);
}

LoadResult parse_scenario_text(std::string_view file_name, std::string_view text,
                               std::string_view base_dir) {
  LoadResult result;
  const std::string file(file_name);
  // A file was checked as it was read; text given directly is checked here, so that every name
  // that reaches an output (a trace, --json) is UTF-8 whatever the way in.
  if (const std::optional<io::InputText> bad = io::check_text(text)) {
    result.diagnostics.push_back(read_error(file, *bad, "invalid text"));
    return result;
  }
  const SourceText source(file, text);
  YamlReader reader(source, result.diagnostics);
  Scenario scenario;
  scenario.path = file;
  try {
    if (const std::optional<YAML::Node> root = detail::load_yaml_within_limits(reader, text)) {
      detail::apply_merge_keys(*root, reader);
      read_top_level(reader, *root, base_dir, scenario, result.diagnostics);
    }
  } catch (const YAML::Exception& e) {
    // Syntax errors (ParserException) and anything else yaml-cpp refuses carry a mark.
    SourceLoc at{};
    if (e.mark.line >= 0 && e.mark.column >= 0) {
      at = {static_cast<uint32_t>(e.mark.line + 1), static_cast<uint32_t>(e.mark.column + 1)};
    }
    if (const std::optional<SourceLoc> tab = indenting_tab(source, at.line)) {
      reader.error_at(*tab, 1, "a tab in the indentation: YAML indents with spaces only");
    } else {
      reader.error_at(at, 1, fmt::format("invalid YAML: {}", e.msg));
    }
  }
  // Report in file order (the scenario file first, then a ds_config file); the passes above
  // find problems in a different order. Stable, so one position keeps discovery order.
  std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                   [&](const Diagnostic& a, const Diagnostic& b) {
                     const bool a_other = a.file != file;
                     const bool b_other = b.file != file;
                     if (a_other != b_other) {
                       return b_other;
                     }
                     if (a.loc.line != b.loc.line) {
                       return a.loc.line < b.loc.line;
                     }
                     return a.loc.col < b.loc.col;
                   });
  // A template's error is found once per instance: report it once.
  result.diagnostics.erase(std::unique(result.diagnostics.begin(), result.diagnostics.end(),
                                       [](const Diagnostic& a, const Diagnostic& b) {
                                         return a.file == b.file && a.loc.line == b.loc.line &&
                                                a.loc.col == b.loc.col && a.message == b.message;
                                       }),
                           result.diagnostics.end());
  const auto warnings = std::stable_partition(
      result.diagnostics.begin(), result.diagnostics.end(),
      [](const Diagnostic& d) { return d.severity != diag::Severity::Warning; });
  result.warnings.assign(std::make_move_iterator(warnings),
                         std::make_move_iterator(result.diagnostics.end()));
  result.diagnostics.erase(warnings, result.diagnostics.end());
  if (result.diagnostics.empty()) {
    result.scenario = std::move(scenario);
  }
  return result;
}

LoadResult load_scenario_file(const std::string& path) {
  const io::InputText input = io::read_input_file(path);
  if (!input.text) {
    LoadResult result;
    result.diagnostics.push_back(read_error(path, input, "cannot read file"));
    return result;
  }
  return parse_scenario_file_text(path, *input.text);
}

LoadResult parse_scenario_file_text(const std::string& path, std::string_view text) {
  std::string base_dir = std::filesystem::path(path).parent_path().generic_string();
  if (base_dir.empty()) {
    base_dir = ".";
  }
  return parse_scenario_text(path, text, base_dir);
}

}  // namespace zfetch::model
