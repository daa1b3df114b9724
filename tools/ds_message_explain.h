// What a DeepSpeed ZeRO-3 fetch message says, without a scenario: the trace step, the named
// parameters, the cause classes that fit, the checks that tell them apart, and the next step.
#pragma once

#include <string>
#include <vector>

#include "tools/ds_messages.h"

namespace zfetch::tools {

/// The explanation of every message, numbered, for a person to read.
std::string explain_ds_messages(const std::vector<DsMessage>& messages);

/// A scenario to start from, with the module tree the named parameters imply (their shapes,
/// frozen ones, persistent ones); the forward is left to fill in.
std::string scenario_skeleton(const std::vector<ParamSummary>& params);

}  // namespace zfetch::tools
