// What the explanation of a failure needs to know about the past: who registered which
// external parameter when, and what the recording pass saw.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/emitter.h"
#include "sim/state.h"

namespace zfetch::sim {

/// One external registration (5.2, 5.3, 5.4).
struct Registration {
  ModuleIndex module = model::kNone;
  ParamIndex param = model::kNone;
  Context when;
  Status status_at_access = Status::None;
  bool trace_complete = false;  ///< the coordinator was COMPLETE: the trace cannot have it
};

/// An access seen during a RECORD pass, and whether it was registered.
struct RecordedAccess {
  ModuleIndex module = model::kNone;
  ParamIndex param = model::kNone;
  Status status = Status::None;
  bool registered = false;
  Context when;
};

/// Bounded history (the latest entries matter; old ones are dropped so memory stays flat).
struct History {
  static constexpr size_t kMax = 256;
  std::vector<Registration> registrations;
  std::vector<RecordedAccess> recorded_accesses;

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
