// The internal signal that a simulated DeepSpeed call raised: caught by the process runner.
#pragma once

#include <string>

#include "sim/emitter.h"
#include "sim/simulator.h"

namespace zfetch::sim {

/// A failure stamped with where the simulation is (`where`) and the coordinator's step.
inline Failure failure_at(const Context& where, int32_t trace_step, ModuleIndex module,
                          std::string message, std::string explanation) {
  Failure failure;
  failure.message = std::move(message);
  failure.explanation = std::move(explanation);
  where.stamp(failure);
  failure.trace_step = trace_step;
  failure.module = module;
  return failure;
}

/// Thrown inside one simulated process when DeepSpeed would raise; never crosses the API.
struct Raised {
  OutcomeKind kind;
  Failure failure;
};

}  // namespace zfetch::sim
