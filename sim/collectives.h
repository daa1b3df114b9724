// The collectives one simulated rank issues, in order, for the cross-rank comparison (10.15).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/emitter.h"

namespace zfetch::sim {

enum class CollectiveKind : uint8_t {
  AgreeModules,  ///< assert_ints_same_as_other_ranks on the recorded module ids
  AgreeParams,   ///< ... on the param ids of the built trace
  AgreeSteps,    ///< ... on the step ids of the built trace
  Gather,        ///< a coordinator all-gather (payload: ds_ids, sorted)
  GetterGather,  ///< a synchronous all-gather outside the coordinator
  PersistentGather,
};

struct Collective {
  CollectiveKind kind;
  std::vector<int64_t> payload;  ///< agreement: the list; gathers: partition sizes
  Context when;                  ///< where the rank issued it
  int32_t trace_step;
  /// AgreeModules: the module of each id; a coordinator gather: the module whose fetch issued
  /// it (none for a prefetch). For the explanation of a divergence.
  std::vector<model::ModuleIndex> modules;
};

/// Records collectives when enabled (only when ranks can diverge; a symmetric run skips it).
class CollectiveLog {
 public:
  explicit CollectiveLog(bool enabled) : enabled_(enabled) {}
  [[nodiscard]] bool enabled() const { return enabled_; }
  void add(CollectiveKind kind, std::vector<int64_t> payload, const Context& when,
           int32_t trace_step, std::vector<model::ModuleIndex> modules = {}) {
    if (enabled_) {
      entries_.push_back({kind, std::move(payload), when, trace_step, std::move(modules)});
    }
  }
  [[nodiscard]] const std::vector<Collective>& entries() const { return entries_; }

 private:
  bool enabled_;
  std::vector<Collective> entries_;
};

}  // namespace zfetch::sim
