// What the explanation of a failure needs to know about the past: who registered which
// external parameter when, and what the recording pass saw.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/emitter.h"
#include "sim/state.h"

namespace zfetch::sim {

/// An access seen during a RECORD pass, and whether it was registered.
struct RecordedAccess {
  ModuleIndex module = model::kNone;
  ParamIndex param = model::kNone;
  Status status = Status::None;
  bool registered = false;
  Context when;
};

/// What last made a parameter NOT_AVAILABLE (semantics 1.5, 4.3): why a persistent param was
/// partitioned at an access where it would otherwise have been resident.
enum class PartitionCause : uint8_t {
  None,                 ///< never gathered since the model was built
  NewModel,             ///< a fresh model object: converted and partitioned (1.1)
  NewEngine,            ///< a new engine on the same model: its gradient hooks partition (A3)
  RecordingRelease,     ///< a module release in a recording (or invalid) pass: persistent too
  Release,              ///< a module release in a replay (never a persistent param)
  OptimizerStep,        ///< partition-all of the step, before _post_step regathers
  OverflowSkip,         ///< partition-all of an fp16-overflow step: nothing is regathered
  CheckpointSave,       ///< save_checkpoint's prologue
  CheckpointLoad,       ///< load_checkpoint's prologue
  EmptyPartitionCache,  ///< empty_partition_cache()
  GatheredExit,         ///< the exit of a GatheredParameters block (semantics 11)
  UnwrapExit,           ///< the end of unwrap_model_for_generation (its GatheredParameters)
};

/// The latest partition of one parameter.
struct Partitioned {
  PartitionCause cause = PartitionCause::None;
  Context when;
};

/// One external registration (5.2, 5.3, 5.4).
struct Registration {
  ModuleIndex module = model::kNone;
  ParamIndex param = model::kNone;
  Context when;
  Status status_at_access = Status::None;
  bool trace_complete = false;  ///< the coordinator was COMPLETE: the trace cannot have it
  Partitioned partitioned;      ///< the param's latest partition before the access
};

/// Bounded history (the latest entries matter; old ones are dropped so memory stays flat).
struct History {
  static constexpr size_t kMax = 256;
  std::vector<Registration> registrations;
  std::vector<RecordedAccess> recorded_accesses;
  std::vector<Partitioned> last_partitioned;  ///< per canonical param, sized by the process
  std::vector<Invalidation> invalidations;    ///< the first Outcome::kMaxInvalidationDetails

  void add(const Registration& r) {
    if (registrations.size() == kMax) {
      registrations.erase(registrations.begin());
    }
    registrations.push_back(r);
  }
  void add(const RecordedAccess& a) {
    if (recorded_accesses.size() == kMax) {
      recorded_accesses.erase(recorded_accesses.begin());
    }
    recorded_accesses.push_back(a);
  }
};

}  // namespace zfetch::sim
