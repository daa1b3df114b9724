// One event of a zfetch trace: a flat record of integers and names (see docs/trace-format.md).
#pragma once

#include <cstdint>
#include <string_view>

namespace zfetch::trace {

inline constexpr int kTraceFormatVersion = 1;

/// Where in the training loop an event happens.
enum class Phase : uint8_t {
  None,        ///< outside any pass (engine construction, schedule events)
  Fwd,         ///< training forward
  Bwd,         ///< backward hooks (pre/post-backward)
  Recompute,   ///< forward hooks re-run inside backward (activation-checkpoint replay)
  Eval,        ///< forward of an eval pass
  Optimizer,   ///< engine.step() at an accumulation boundary
  Checkpoint,  ///< save/load checkpoint prologue and epilogue
};

/// What happened. The names (format_as) are the `kind` values of the trace file.
enum class EventKind : uint8_t {
  EngineInit,       ///< a new engine was built (module / param ids assigned)
  Restart,          ///< the engine was destroyed (schedule `restart`)
  PassStart,        ///< reset_step at the root's forward; trace_step = -1
  TraceRecord,      ///< the coordinator entered RECORD for this pass
  TraceComplete,    ///< the param trace was built; numel = number of queue entries
  TraceInvalidate,  ///< the trace was invalidated (3.4 #1/#2); module = the module that caused it
  ModulePre,        ///< forward pre-hook (fwd, eval or recompute)
  ModulePost,       ///< forward post-hook
  BackwardPre,      ///< pre-backward hook
  BackwardPost,     ///< post-backward hook
  Fetch,            ///< fetch_sub_module for `module` at `trace_step`
  Gather,    ///< a coordinator gather of `param` started (NA -> IF); numel/bytes of the full param
  Prefetch,  ///< like Gather, but chosen by prefetch
  Wait,      ///< `param` waited on (IF -> AV) by a fetch or partition-all (not a registry clean)
  QueuePop,  ///< `param` popped from the fetch queue (check or prefetch); trace_step = its step
  Release,   ///< `param` partitioned (AV -> NA) by a module release
  RecomputeAttach,   ///< frozen `param` attributed to `module` (the active-backward owner, 2.8)
  Access,            ///< a getter read of `param` in `module`'s forward (status = its residency)
  RegisterExternal,  ///< `param` registered as an external of `module`
  GetterGather,      ///< synchronous gather by the getter or a dangling return (NA -> AV)
  Transpose,         ///< ZenFlow layout flip of `param` (numel = 1 to compute layout, 0 to storage)
  Mismatch,          ///< the fetch-queue check failed (the run ends with an error)
  Error,             ///< any other DeepSpeed error that ends the run
  OptimizerStep,     ///< engine.step() at a boundary: partition all, then regather persistent
  PartitionAll,      ///< release_and_reset_all partitioned `param`
  PersistentGather,  ///< `param` gathered by _post_step or a checkpoint epilogue
  CheckpointSave,
  CheckpointLoad,
  EmptyPartitionCache,
  Compute,  ///< modelled compute of `module` (timeline)
};

/// Residency of a param (ZeroParamStatus) as traced: AV, NA, IF.
enum class Status : uint8_t { None, Available, NotAvailable, Inflight };

/// One trace event. Names are views into tables that outlive the event (the simulator's
/// name tables when writing, the reader's line buffer or intern table when reading).
/// Fields set to -1 or None are absent from the file.
struct Event {
  uint64_t seq = 0;
  int64_t t_ns = 0;
  int32_t rank = 0;
  int32_t engine = 0;      ///< engine generation (0, then +1 per restart)
  int32_t step = 0;        ///< optimizer step, counted from 0 over the whole schedule
  int32_t micro_step = 0;  ///< micro-step within the engine's training, from 0
  Phase phase = Phase::None;
  EventKind kind = EventKind::PassStart;
  int32_t trace_step = -1;  ///< the coordinator's step_id, or the queue entry's step (QueuePop)
  int64_t module_id = -1;   ///< module ds_id; the module fields are absent when < 0
  std::string_view module;  ///< qualified module name as named_modules() prints it ("" = root)
  int64_t param_id = -1;    ///< param ds_id; the param fields are absent when < 0
  std::string_view param;   ///< qualified param name as named_parameters() prints it
  Status status = Status::None;
  int64_t numel = -1;
  int64_t bytes = -1;
  int64_t group = -1;  ///< Gather/Prefetch/Wait: id of the coalesced collective (one per call)

  // In memory only (not written): indices into the Scenario's modules/params, so consumers
  // such as the timeline need no name lookups. kNoIndex when absent or unknown (read traces).
  static constexpr uint32_t kNoIndex = UINT32_MAX;
  uint32_t module_index = kNoIndex;
  uint32_t param_index = kNoIndex;
};

}  // namespace zfetch::trace
