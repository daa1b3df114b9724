// The fuzzer's scenario generator: whole, valid scenarios drawn from a seeded counter stream.
#pragma once

#include <cstdint>

#include "model/scenario.h"

namespace zfetch::sim {

/// Which scenarios the generator draws.
enum class GeneratorProfile : uint8_t {
  /// Everything the simulator models: world sizes 1 to 64, rank conditions, fp16 overflow
  /// steps, NVMe offload, leaf_module classes, zero-size params.
  Full,
  /// Only what the generic runner of real DeepSpeed (tools/recorder/run_scenario.py on CPU
  /// ranks with gloo) builds faithfully: world sizes 1 and 2, no rank conditions (a rank that
  /// diverges blocks the shared process group), fp32 and bf16, offload none or cpu, at least
  /// one trainable parameter, small tensors and short schedules.
  Runner,
};

/// Scenario `index` of `seed`: a pure function of its arguments (the scenario of one index
/// does not depend on which others were drawn, or on threads and shards). Its module tree,
/// parameter sizes (around the persistence thresholds), forward programs (owner, child,
/// sibling, ancestor and root accesses, data and metadata, modules called several times,
/// reentrant and non-reentrant checkpoint regions, nested ones, `when` conditions, returned
/// and tied params, and under the Full profile calls fed `input: no_grad`, `input:
/// forward_input` or `input_from:` an earlier call, and `output: leaf` on calls whose output
/// would need no grad), config and schedule (accumulation, eval
/// passes, save / restart / load, empty_partition_cache) are all drawn from it. The result loads
/// back identically from model::write_scenario_yaml (modules and params in file order).
model::Scenario generate_scenario(uint64_t seed, uint64_t index, GeneratorProfile profile);

}  // namespace zfetch::sim
