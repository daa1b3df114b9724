// The internal signal that a simulated DeepSpeed call raised: caught by the process runner.
#pragma once

#include <string>

#include "sim/simulator.h"

namespace zfetch::sim {

/// Thrown inside one simulated process when DeepSpeed would raise; never crosses the API.
struct Raised {
  OutcomeKind kind;
  Failure failure;
};

}  // namespace zfetch::sim
