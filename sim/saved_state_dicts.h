// What each saved checkpoint's module state_dict holds, as far as torch's load_state_dict shape
// check can tell (fast sharding's 1-element buffers, semantics 4.8).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/scenario.h"
#include "sim/state.h"

namespace zfetch::sim {

/// The shape `p`'s data has now, as torch prints it: full, [1] (fast sharding) or [0].
[[nodiscard]] std::string data_shape(const model::Scenario& scenario, const ParamState& params,
                                     ParamIndex p);

class SavedStateDicts {
 public:
  /// save_checkpoint under `tag`: remembers which params hold fast sharding's 1-element buffer.
  void save(const std::string& tag, const ParamState& params);
  /// load_checkpoint of `tag`: torch's size-mismatch lines (state_dict order, aliases too), one
  /// per param saved as [1] whose data has another shape now; empty when the load succeeds.
  [[nodiscard]] std::vector<std::string> load_mismatches(const std::string& tag,
                                                         const model::Scenario& scenario,
                                                         const ParamState& params) const;

 private:
  /// Per saved tag, the params saved with fast sharding's 1-element data.
  std::vector<std::pair<std::string, std::vector<ParamIndex>>> saves_;
};

}  // namespace zfetch::sim
