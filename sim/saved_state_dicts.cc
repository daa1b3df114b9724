// Saved module state_dicts and torch's shape check when one is loaded.
#include "sim/saved_state_dicts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace zfetch::sim {

std::string data_shape(const model::Scenario& scenario, const ParamState& params, ParamIndex p) {
  if (params.status[p] == Status::Available) {
    return fmt::format("torch.Size([{}])", fmt::join(scenario.params[p].shape, ", "));
  }
  return params.fast_sharded[p] ? "torch.Size([1])" : "torch.Size([0])";
}

void SavedStateDicts::save(const std::string& tag, const ParamState& params) {
  // The module state_dict holds each param's data as it is: a released param's is empty, but a
  // leaf param released by fast sharding still holds its 1-element buffer.
  std::vector<ParamIndex> one_element;
  for (ParamIndex p : params.by_id) {
    if (params.fast_sharded[p]) {
      one_element.push_back(p);
    }
  }
  saves_.emplace_back(tag, std::move(one_element));
}

std::vector<std::string> SavedStateDicts::load_mismatches(const std::string& tag,
                                                          const model::Scenario& scenario,
                                                          const ParamState& params) const {
  // load_module_state_dict: torch's load_state_dict compares each saved tensor's shape with the
  // param's data now; fast sharding's [1] against a partitioned param's [0] is a size mismatch
  // (seen on real DeepSpeed, scenarios/validation/v36_granularity_lora_resume).
  std::vector<std::string> errors;
  for (auto it = saves_.rbegin(); it != saves_.rend(); ++it) {
    if (it->first != tag) {
      continue;
    }
    for (size_t i = 0; i < scenario.params.size(); ++i) {
      const ParamIndex p = params.canonical[i];
      const std::string now = data_shape(scenario, params, p);
      if (std::find(it->second.begin(), it->second.end(), p) != it->second.end() &&
          now != "torch.Size([1])") {
        errors.push_back(
            fmt::format("size mismatch for {}: copying a param with shape "
                        "torch.Size([1]) from checkpoint, the shape in current "
                        "model is {}.",
                        scenario.params[i].qualified_name, now));
      }
    }
    break;
  }
  return errors;
}

}  // namespace zfetch::sim
