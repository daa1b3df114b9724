// Setting one config value by key (see config_override.h).
#include "model/config_override.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "model/spellcheck.h"

namespace zfetch::model {

namespace {

using namespace std::string_view_literals;

// What a key sets: an integer field with its lower bound, or the offload device.
struct Field {
  std::string_view key;
  int64_t minimum;
  int64_t* (*target)(Scenario&);  // nullptr: offload_param.device
};

constexpr std::array kFields = {
    Field{"stage3_prefetch_bucket_size", 0,
          [](Scenario& s) { return &s.config.zero.prefetch_bucket_size; }},
    Field{"stage3_param_persistence_threshold", 0,
          [](Scenario& s) { return &s.config.zero.param_persistence_threshold; }},
    Field{"stage3_model_persistence_threshold", 0,
          [](Scenario& s) { return &s.config.zero.model_persistence_threshold; }},
    Field{"stage3_max_live_parameters", 0,
          [](Scenario& s) { return &s.config.zero.max_live_parameters; }},
    Field{"stage3_max_reuse_distance", 0,
          [](Scenario& s) { return &s.config.zero.max_reuse_distance; }},
    Field{"stage3_module_granularity_threshold", 0,
          [](Scenario& s) { return &s.config.zero.module_granularity_threshold; }},
    Field{"gradient_accumulation_steps", 1,
          [](Scenario& s) { return &s.config.gradient_accumulation_steps; }},
    Field{"train_micro_batch_size_per_gpu", 1,
          [](Scenario& s) { return &s.config.train_micro_batch_size_per_gpu; }},
    Field{"offload_param.device", 0, nullptr},
    Field{"world_size", 1, [](Scenario& s) { return &s.world_size; }},
    Field{"timing.tokens_per_micro_batch", 0,
          [](Scenario& s) { return &s.timing.tokens_per_micro_batch; }},
};

constexpr std::array kKeys = [] {
  std::array<std::string_view, kFields.size()> keys{};
  for (size_t i = 0; i < kFields.size(); ++i) {
    keys[i] = kFields[i].key;
  }
  return keys;
}();

}  // namespace

std::optional<int64_t> parse_config_integer(std::string_view text) {
  std::string digits;
  int64_t exponent = 0;
  const size_t e = text.find_first_of("eE");
  std::string_view mantissa = text.substr(0, e);
  if (e != std::string_view::npos) {
    const std::string_view exp = text.substr(e + 1);
    const auto [end, ec] = std::from_chars(exp.data(), exp.data() + exp.size(), exponent);
    if (ec != std::errc() || end != exp.data() + exp.size() || exp.empty() || exponent > 18) {
      return std::nullopt;
    }
  }
  for (size_t i = 0; i < mantissa.size(); ++i) {
    const char c = mantissa[i];
    if (c == '_' && i > 0 && i + 1 < mantissa.size()) {
      continue;
    }
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    digits += c;
  }
  if (digits.empty()) {
    return std::nullopt;
  }
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return std::nullopt;
  }
  for (int64_t i = 0; i < exponent; ++i) {
    if (value > INT64_MAX / 10) {
      return std::nullopt;
    }
    value *= 10;
  }
  return value;
}

std::optional<std::string> set_config_value(Scenario& scenario, std::string_view key,
                                            std::string_view value) {
  if (key.starts_with("zero_optimization.")) {
    key.remove_prefix("zero_optimization."sv.size());
  }
  for (const Field& field : kFields) {
    if (field.key != key) {
      continue;
    }
    if (field.target == nullptr) {
      if (auto device = kOffloadDeviceNames.find(value)) {
        scenario.config.zero.offload_param.device = *device;
        scenario.config.zero.offload_param_set = *device != OffloadDevice::None;
        return std::nullopt;
      }
      return fmt::format("invalid value '{}' for '{}'; valid values are: none, cpu, nvme", value,
                         key);
    }
    const std::optional<int64_t> parsed = parse_config_integer(value);
    if (!parsed) {
      return fmt::format("expected an integer for '{}', got '{}'", key, value);
    }
    if (*parsed < field.minimum) {
      return fmt::format("expected an integer >= {} for '{}', got '{}'", field.minimum, key, value);
    }
    *field.target(scenario) = *parsed;
    return std::nullopt;
  }
  std::string message = fmt::format("unknown config key '{}'", key);
  if (const auto suggestion = closest_word(key, std::span<const std::string_view>(kKeys))) {
    message += fmt::format(", did you mean '{}'?", *suggestion);
  } else {
    message += "; valid keys are: ";
    for (size_t i = 0; i < kKeys.size(); ++i) {
      message += fmt::format("{}{}", i == 0 ? "" : ", ", kKeys[i]);
    }
  }
  return message;
}

}  // namespace zfetch::model
