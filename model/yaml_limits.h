// Loading a YAML document within fixed bounds on nesting and on size after alias expansion, so
// that recursive or exponential aliases (billion laughs) and deep nesting are located errors.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "model/yaml_reader.h"

namespace zfetch::model::detail {

/// Deepest nesting of collections a document may have (aliases count with the depth of what
/// they refer to). A scenario's deepest real structure is far shallower; yaml-cpp itself
/// gives up at 2000 with "bad file".
inline constexpr int kMaxYamlDepth = 256;

/// Most nodes a document may have once every alias is expanded: the loader walks aliased
/// structure once per use, so this bounds its work and memory (about 450 bytes per node in
/// yaml-cpp). A 10^5-module scenario has about 7 * 10^5.
inline constexpr uint64_t kMaxYamlNodes = 1'000'000;

/// YAML::Load of the first document of `text`, after checking the bounds above on a first
/// pass over the parser's events (which builds nothing). An alias that refers to a node
/// containing it (`model: &m {children: [*m]}`) is an error at the alias; so is the alias
/// at which the expanded size passes kMaxYamlNodes, and the collection or alias at which
/// the depth passes kMaxYamlDepth. Returns nullopt after reporting the error to `reader`.
/// Syntax errors throw YAML::Exception, as YAML::Load does.
std::optional<YAML::Node> load_yaml_within_limits(YamlReader& reader, std::string_view text);

}  // namespace zfetch::model::detail
