// Setting one config value by its ds_config key, for `zfetch sweep --set KEY=VALUE`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/scenario.h"

namespace zfetch::model {

/// Sets `key` to `value` in `scenario`. Keys are ds_config keys, with or without the
/// `zero_optimization.` prefix (`stage3_prefetch_bucket_size`, `offload_param.device`, ...),
/// plus the scenario-level `world_size` and `timing.tokens_per_micro_batch`. Integers are
/// decimal, optionally with digit separators `_` or an exponent (`5e7`, DeepSpeed configs
/// often write 1e9). Returns an error message (lowercase, user tokens quoted, with a
/// "did you mean" for a misspelled key) and leaves `scenario` unchanged on failure.
std::optional<std::string> set_config_value(Scenario& scenario, std::string_view key,
                                            std::string_view value);

/// Parses an integer as set_config_value does: "1000", "-3", "50_000_000", "5e7", "1.5e3",
/// "15000e-3", exactly. A number with a fraction ("1.5", "1e-5"), one beyond int64_t or text
/// that is not a decimal number is nullopt, and `problem` (when given) says which: "not a
/// whole number", "out of range" or "not a number".
std::optional<int64_t> parse_config_integer(std::string_view text, std::string* problem = nullptr);

/// The key set_config_value sets: `key` without a leading `zero_optimization.`.
std::string_view config_key_name(std::string_view key);

}  // namespace zfetch::model
