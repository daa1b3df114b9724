// Setting one config value by key (see config_override.h).
#include "model/config_override.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "base/spellcheck.h"
#include "model/limits.h"

namespace zfetch::model {

namespace {

using namespace std::string_view_literals;

// What a key sets: an integer field with its lower bound, or the offload device.
struct Field {
  std::string_view key;
  int64_t minimum;
  int64_t* (*target)(Scenario&);  // nullptr: offload_param.device
  int64_t maximum = INT64_MAX;    // the loader's limit for the same value (model/limits.h)
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
          [](Scenario& s) { return &s.config.train_micro_batch_size_per_gpu; },
          kMaxTokensPerMicroBatch},
    Field{"offload_param.device", 0, nullptr},
    Field{"world_size", 1, [](Scenario& s) { return &s.world_size; }, kMaxWorldSize},
    Field{"timing.tokens_per_micro_batch", 0,
          [](Scenario& s) { return &s.timing.tokens_per_micro_batch; }, kMaxTokensPerMicroBatch},
};

constexpr std::array kKeys = [] {
  std::array<std::string_view, kFields.size()> keys{};
  for (size_t i = 0; i < kFields.size(); ++i) {
    keys[i] = kFields[i].key;
  }
  return keys;
}();

}  // namespace

namespace {

// Digits with single '_' separators between them ("50_000_000"), appended to `digits`; false
// when `text` is empty or a separator is misplaced.
bool append_digits(std::string_view text, std::string& digits) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_' && i > 0 && i + 1 < text.size() && text[i + 1] != '_') {
      continue;
    }
    if (c < '0' || c > '9') {
      return false;
    }
    digits += c;
  }
  return !text.empty();
}

}  // namespace

std::optional<int64_t> parse_config_integer(std::string_view text, std::string* problem) {
  auto fail = [&](std::string_view why) -> std::optional<int64_t> {
    if (problem != nullptr) {
      *problem = why;
    }
    return std::nullopt;
  };
  // [sign] digits [. digits] [e [sign] digits]: the value of the decimal number, exactly.
  const bool negative = text.starts_with('-');
  if (negative || text.starts_with('+')) {
    text.remove_prefix(1);
  }
  const size_t e = text.find_first_of("eE");
  const std::string_view mantissa = text.substr(0, e);
  const size_t dot = mantissa.find('.');
  std::string digits;
  if (!append_digits(mantissa.substr(0, dot), digits) ||
      (dot != std::string_view::npos && !append_digits(mantissa.substr(dot + 1), digits))) {
    return fail("not a number");
  }
  // The power of ten the digits are scaled by; exponents past 10^6 are out of range anyway.
  int64_t scale =
      dot == std::string_view::npos ? 0 : -static_cast<int64_t>(mantissa.size() - dot - 1);
  if (e != std::string_view::npos) {
    std::string_view exp = text.substr(e + 1);
    const bool negative_exp = exp.starts_with('-');
    if (negative_exp || exp.starts_with('+')) {
      exp.remove_prefix(1);
    }
    std::string exp_digits;
    if (!append_digits(exp, exp_digits)) {
      return fail("not a number");
    }
    const size_t first = std::min(exp_digits.find_first_not_of('0'), exp_digits.size());
    if (exp_digits.size() - first > 6) {
      exp_digits = "1000000";
    }
    int64_t exponent = 0;
    std::from_chars(exp_digits.data(), exp_digits.data() + exp_digits.size(), exponent);
    scale += negative_exp ? -exponent : exponent;
  }
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) {
    return 0;
  }
  // A negative scale must only drop zeros, or the number has a fraction.
  while (scale < 0) {
    if (digits.back() != '0') {
      return fail("not a whole number");
    }
    digits.pop_back();
    ++scale;
  }
  if (digits.size() + static_cast<size_t>(std::min<int64_t>(scale, 100)) > 19) {
    return fail("out of range");
  }
  digits.append(static_cast<size_t>(scale), '0');
  uint64_t magnitude = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  const uint64_t largest = negative ? uint64_t{1} << 63 : uint64_t{INT64_MAX};
  if (digits.size() > 19 || magnitude > largest) {
    return fail("out of range");
  }
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

std::string_view config_key_name(std::string_view key) {
  return key.starts_with("zero_optimization.") ? key.substr("zero_optimization."sv.size()) : key;
}

std::optional<std::string> set_config_value(Scenario& scenario, std::string_view key,
                                            std::string_view value) {
  key = config_key_name(key);
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
    std::string problem;
    const std::optional<int64_t> parsed = parse_config_integer(value, &problem);
    if (!parsed && problem == "out of range") {
      return fmt::format("'{}' for '{}' is out of range: expected an integer of at most {}", value,
                         key, INT64_MAX);
    }
    if (!parsed) {
      return fmt::format("expected an integer for '{}', got '{}' ({})", key, value, problem);
    }
    if (*parsed > field.maximum) {
      return fmt::format("expected an integer <= {} for '{}' (zfetch's limit), got '{}'",
                         field.maximum, key, value);
    }
    if (*parsed < field.minimum) {
      return fmt::format("expected an integer >= {} for '{}', got '{}'", field.minimum, key, value);
    }
    *field.target(scenario) = *parsed;
    return std::nullopt;
  }
  std::string message = fmt::format("unknown config key '{}'", key);
  if (const auto suggestion = base::closest_word(key, std::span<const std::string_view>(kKeys))) {
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
