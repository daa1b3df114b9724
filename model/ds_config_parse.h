// Reading a DeepSpeed ds_config (inline `deepspeed:` block or a JSON file) (internal).
#pragma once

#include "model/yaml_reader.h"
#include "model/zero_config.h"

namespace zfetch::model::detail {

/// Reads the ds_config mapping in `block` into `config` (which holds DeepSpeed's defaults),
/// reporting unknown keys, wrong types, "auto" values and a stage other than 3.
void read_deepspeed_config(YamlReader& reader, const Field& block, DeepSpeedConfig& config);

}  // namespace zfetch::model::detail
