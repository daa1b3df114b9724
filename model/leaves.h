// Which modules are z3 leaf modules (semantics 2.1, 4.8): fetched and released as one unit with
// their whole subtree's params, their descendants left without hooks.
#pragma once

#include <cstdint>
#include <vector>

#include "model/scenario.h"

namespace zfetch::model {

/// Per ModuleIndex, 1 when the module is a z3 leaf that DeepSpeed's hook registration reaches
/// (a leaf below another leaf is never visited, so it is 0). A module is marked a leaf by
/// `leaf: true`, by `zero_optimization.leaf_module` (classes, names, name suffixes), or by
/// `stage3_module_granularity_threshold` (see module_granularity).
std::vector<uint8_t> z3_leaf_modules(const Scenario& scenario);

/// The granularity DeepSpeed computes per module for `stage3_module_granularity_threshold`
/// (`DeepSpeedZeRoOffload._get_granularity_recursively`): params of the subtree divided by its
/// layers, where a module without children is one layer of granularity "none", a container
/// (`ModuleList`, `Sequential`, ...) adds no layer and is never chosen, a module whose subtree
/// holds no params is skipped, and a subtree of more than 10^9 params is never chosen.
/// kNoGranularity stands for Python's sys.maxsize.
inline constexpr int64_t kNoGranularity = INT64_MAX;
std::vector<int64_t> module_granularity(const Scenario& scenario);

}  // namespace zfetch::model
