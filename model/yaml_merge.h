// YAML merge keys (`<<: *base`), which yaml-cpp 0.7 reads as an ordinary key (internal).
#pragma once

#include <yaml-cpp/yaml.h>

#include "model/yaml_reader.h"

namespace zfetch::model::detail {

/// Applies every merge key of the tree at `root`, in place, as YAML 1.1 defines them: a
/// mapping's `<<` value (a mapping, or a list of mappings where earlier ones win) adds each
/// key the mapping does not have itself, with its value. Merged entries keep their own
/// positions, so errors in them point at the anchor's text. Problems go to `reader`.
void apply_merge_keys(const YAML::Node& root, YamlReader& reader);

}  // namespace zfetch::model::detail
