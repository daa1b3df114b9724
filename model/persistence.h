// Parameter identity (tied aliases) and ZeRO-3 persistent-parameter selection (semantics 1.5).
#pragma once

#include <vector>

#include "model/scenario.h"
#include "model/zero_config.h"

namespace zfetch::model {

/// The Parameter object `param` is: follows `tied_to` to the end of the chain.
ParamIndex canonical(const Scenario& scenario, ParamIndex param);

/// The distinct Parameter objects in `named_parameters(recurse=True)` order: modules in
/// pre-order, each module's own params in declaration order, and an object listed once, at
/// its first occurrence (so a tied alias met before its target stands for the target).
/// Returns canonical indices.
std::vector<ParamIndex> parameter_order(const Scenario& scenario);

/// `ds_persist` per ParamIndex (aliases share their target's flag), as
/// `DeepSpeedZeRoOffload.mark_persistent_parameters` decides it.
std::vector<bool> select_persistent(const Scenario& scenario, const ZeroConfig& zero);

}  // namespace zfetch::model
