// Reading a DeepSpeed ds_config (inline `deepspeed:` block or a JSON file) (internal).
#pragma once

#include <span>
#include <string_view>

#include "model/hf_auto.h"
#include "model/yaml_reader.h"
#include "model/zero_config.h"

namespace zfetch::model::detail {

/// One integer or boolean field of zero_optimization. DeepSpeed's pydantic config also
/// accepts the field name for the stage3_ aliases (populate_by_name), so both spellings are rows.
struct ZeroKey {
  std::string_view key;
  int64_t ZeroConfig::*int_field = nullptr;
  bool ZeroConfig::*bool_field = nullptr;
  int64_t min = 0;
};

/// Every integer and boolean key of zero_optimization, the canonical (stage3_) spelling of a
/// field first; the scenario writer writes those.
std::span<const ZeroKey> zero_config_keys();

/// Reads the ds_config mapping in `block` into `config` (which holds DeepSpeed's defaults,
/// or a ds_config file's values that `block` overrides when `is_override`), reporting
/// unknown keys, wrong types and a stage other than 3. "auto" values are filled from `hf` as
/// the HF integration fills them and listed in `config.resolved_auto`.
void read_deepspeed_config(YamlReader& reader, const Field& block, const HfTrainingArgs& hf,
                           DeepSpeedConfig& config, bool is_override = false);

}  // namespace zfetch::model::detail
