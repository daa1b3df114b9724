// Names of slices, modules and parameters in exported files (see slice_names.h).
#include "sim/export/slice_names.h"

#include "base/enum_names.h"
#include "trace/names.h"

namespace zfetch::sim {

std::string_view slice_kind_name(Slice::Kind kind) {
  static constexpr base::EnumNames<Slice::Kind::ReduceScatter> kNames(
      "compute", "gather", "prefetch", "getter_gather", "persistent_gather", "h2d",
      "reduce_scatter");
  return kNames[kind];
}

std::string_view module_display_name(const model::Scenario& scenario, model::ModuleIndex m) {
  if (m >= scenario.modules.size()) {
    return "?";
  }
  return trace::display_module_name(scenario.modules[m].qualified_name);
}

std::string_view param_display_name(const model::Scenario& scenario, model::ParamIndex p) {
  return p < scenario.params.size() ? std::string_view(scenario.params[p].qualified_name) : "?";
}

}  // namespace zfetch::sim
