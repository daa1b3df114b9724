// The names exporters give a timeline's slices, modules and parameters, so that every file
// written from one run (Chrome trace, Chakra) calls the same thing the same way.
#pragma once

#include <string_view>

#include "model/scenario.h"
#include "sim/timeline/timeline.h"

namespace zfetch::sim {

/// "compute", "gather", "prefetch", "getter_gather", "persistent_gather", "h2d",
/// "reduce_scatter".
std::string_view slice_kind_name(Slice::Kind kind);

/// A module's qualified name; the root (whose qualified name is "") by the model's name, and
/// "?" for an index the scenario does not have.
std::string_view module_display_name(const model::Scenario& scenario, model::ModuleIndex m);

/// A parameter's qualified name, "?" for an index the scenario does not have.
std::string_view param_display_name(const model::Scenario& scenario, model::ParamIndex p);

}  // namespace zfetch::sim
