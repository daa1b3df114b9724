// Loading a scenario file: YAML syntax, top-level keys, the ds_config (inline or a JSON file).
#include "model/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/input_file.h"
#include "model/ds_config_parse.h"
#include "model/scenario_parser.h"
#include "model/yaml_limits.h"
#include "model/yaml_reader.h"

namespace zfetch::model {

namespace {

using namespace std::string_view_literals;
using detail::Field;
using detail::SourceText;
using detail::YamlReader;

constexpr std::array kTopKeys = {
    "name"sv,    "source"sv,    "world_size"sv,       "input_requires_grad"sv,
    "zenflow"sv, "deepspeed"sv, "deepspeed_config"sv, "timing"sv,
    "model"sv,   "schedule"sv,  "expect"sv,
};
constexpr std::array kTimingKeys = {"tokens_per_micro_batch"sv, "calibration"sv};

Diagnostic whole_file_error(const std::string& file, std::string message) {
  Diagnostic diagnostic;
  diagnostic.file = file;
  diagnostic.message = std::move(message);
  return diagnostic;
}

// A JSON document as a YAML tree without positions: the fallback for JSON that nlohmann
// accepts but yaml-cpp does not, so the config is still read (errors then have no line).
YAML::Node json_to_yaml(const nlohmann::json& json) {
  if (json.is_object()) {
    YAML::Node map(YAML::NodeType::Map);
    for (const auto& [key, value] : json.items()) {
      map[key] = json_to_yaml(value);
    }
    return map;
  }
  if (json.is_array()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& value : json) {
      list.push_back(json_to_yaml(value));
    }
    return list;
  }
  if (json.is_null()) {
    return YAML::Node(YAML::NodeType::Null);
  }
  return YAML::Node(json.is_string() ? json.get<std::string>() : json.dump());
}

// Reads `deepspeed_config: path.json`: nlohmann-json checks the JSON (a user's file must be
// real JSON, as DeepSpeed reads it), then yaml-cpp re-reads the same text for positions.
void read_config_file(YamlReader& reader, const Field& field, std::string_view base_dir,
                      DeepSpeedConfig& config, DiagnosticList& out) {
  const std::optional<std::string> relative = reader.read_string(field);
  if (!relative) {
    return;
  }
  const std::string path =
      (std::filesystem::path(base_dir) / *relative).lexically_normal().generic_string();
  const io::InputText input = io::read_input_file(path);
  if (!input.text) {
    reader.error(field.value,
                 fmt::format("cannot read ds_config file '{}': {}", path, input.error));
    return;
  }
  const std::string* text = &*input.text;
  const SourceText source(path, *text);
  YamlReader config_reader(source, out);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: detail".
    std::string message = e.what();
    const size_t column = message.find("column ");
    const size_t colon = column == std::string::npos ? column : message.find(": ", column);
    if (colon != std::string::npos) {
      message = message.substr(colon + 2);
    }
    const size_t offset = e.byte == 0 ? 0 : e.byte - 1;
    config_reader.error_at(source.loc_of_offset(offset), 1, "invalid JSON: " + message);
    return;
  }
  YAML::Node root;
  try {
    std::optional<YAML::Node> loaded = detail::load_yaml_within_limits(config_reader, *text);
    if (!loaded) {
      return;
    }
    root.reset(*loaded);
  } catch (const YAML::Exception&) {
    root.reset(json_to_yaml(json));
  }
  detail::read_deepspeed_config(config_reader, Field{root, "deepspeed_config", {}}, config);
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
      timing.tokens_per_micro_batch = reader.read_int(value, 0).value_or(0);
    } else if (key == "calibration") {
      timing.calibration = reader.read_string(value).value_or("");
    }
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
  reader.check_keys(root, kTopKeys, "the scenario");
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
    scenario.world_size = reader.read_int(*field, 1).value_or(1);
  }
  if (auto field = find("input_requires_grad")) {
    scenario.input_requires_grad = reader.read_bool(*field).value_or(false);
  }
  if (auto field = find("zenflow")) {
    scenario.zenflow = reader.read_bool(*field).value_or(false);
  }
  const std::optional<Field> inline_config = find("deepspeed");
  const std::optional<Field> config_file = find("deepspeed_config");
  if (inline_config && config_file) {
    reader.error(config_file->key, "give either 'deepspeed' or 'deepspeed_config', not both");
  } else if (inline_config) {
    detail::read_deepspeed_config(reader, *inline_config, scenario.config);
  } else if (config_file) {
    read_config_file(reader, *config_file, base_dir, scenario.config, out);
  } else {
    // No ds_config at all: zfetch simulates ZeRO-3, so the one required key is implied.
    scenario.config.zero.stage = 3;
  }
  scenario.zenflow = scenario.zenflow || scenario.config.zero.zenflow;
  if (auto field = find("timing")) {
    read_timing(reader, *field, scenario.timing);
  }
  if (auto field = require("model")) {
    parser.read_model(*field);
  }
  if (auto field = require("schedule")) {
    parser.read_schedule(*field);
  }
  if (auto field = find("expect")) {
    parser.read_expectations(*field);
  }
}

}  // namespace

LoadResult parse_scenario_text(std::string_view file_name, std::string_view text,
                               std::string_view base_dir) {
  LoadResult result;
  const std::string file(file_name);
  const SourceText source(file, text);
  YamlReader reader(source, result.diagnostics);
  Scenario scenario;
  scenario.path = file;
  try {
    if (const std::optional<YAML::Node> root = detail::load_yaml_within_limits(reader, text)) {
      read_top_level(reader, *root, base_dir, scenario, result.diagnostics);
    }
  } catch (const YAML::Exception& e) {
    // Syntax errors (ParserException) and anything else yaml-cpp refuses carry a mark.
    SourceLoc at{};
    if (e.mark.line >= 0 && e.mark.column >= 0) {
      at = {static_cast<uint32_t>(e.mark.line + 1), static_cast<uint32_t>(e.mark.column + 1)};
    }
    reader.error_at(at, 1, fmt::format("invalid YAML: {}", e.msg));
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
  if (result.diagnostics.empty()) {
    result.scenario = std::move(scenario);
  }
  return result;
}

LoadResult load_scenario_file(const std::string& path) {
  const io::InputText input = io::read_input_file(path);
  if (!input.text) {
    LoadResult result;
    result.diagnostics.push_back(
        whole_file_error(path, fmt::format("cannot read file: {}", input.error)));
    return result;
  }
  const std::string* text = &*input.text;
  std::string base_dir = std::filesystem::path(path).parent_path().generic_string();
  if (base_dir.empty()) {
    base_dir = ".";
  }
  return parse_scenario_text(path, *text, base_dir);
}

}  // namespace zfetch::model
