// Names of slices, modules and parameters in exported files (see slice_names.h).
#include "sim/export/slice_names.h"

namespace zfetch::sim {

std::string_view slice_kind_name(Slice::Kind kind) {
  switch (kind) {
  case Slice::Kind::Compute:
    return "compute";
  case Slice::Kind::Gather:
    return "gather";
  case Slice::Kind::Prefetch:
    return "prefetch";
  case Slice::Kind::GetterGather:
    return "getter_gather";
  case Slice::Kind::PersistentGather:
    return "persistent_gather";
  case Slice::Kind::H2d:
    return "h2d";
  case Slice::Kind::ReduceScatter:
    return "reduce_scatter";
  }
  return "?";
}

std::string_view module_display_name(const model::Scenario& scenario, model::ModuleIndex m) {
  if (m >= scenario.modules.size()) {
    return "?";
  }
  return m == 0 ? std::string_view(scenario.modules[0].name)
                : std::string_view(scenario.modules[m].qualified_name);
}

std::string_view param_display_name(const model::Scenario& scenario, model::ParamIndex p) {
  return p < scenario.params.size() ? std::string_view(scenario.params[p].qualified_name) : "?";
}

}  // namespace zfetch::sim
