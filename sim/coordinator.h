// The PartitionedParameterCoordinator of one engine: trace modes, fetch, prefetch, release
// (semantics sections 3 and 4).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/scenario.h"
#include "sim/collectives.h"
#include "sim/emitter.h"
#include "sim/failure.h"
#include "sim/history.h"
#include "sim/simulator.h"
#include "sim/state.h"

namespace zfetch::sim {

enum class TraceMode : uint8_t { Record = 1, Complete = 2, Invalid = 3 };

/// One module occurrence of the recorded module trace, with the step it was fetched at and the
/// module's ds_id when it was recorded (record_module keys its step by that id, 3.2).
struct Occurrence {
  ModuleIndex module;
  int32_t step;
  int64_t recorded_ds_id;
};

/// One entry of the parameter trace / fetch queue: (param, step_id_last_used_at).
struct QueueEntry {
  ParamIndex param;
  int32_t step;
};

class Coordinator {
 public:
  /// `gather_groups`: the process's all-gather counter, shared by every engine's coordinator, so
  /// that gather-group ids stay unique when a re-used model's backward hooks call an earlier
  /// engine's coordinator.
  Coordinator(const model::Scenario& scenario, ParamState& params, ModuleState& modules,
              Emitter& emitter, CollectiveLog& collectives, History& history, Discovery discovery,
              int64_t& gather_groups);

  [[nodiscard]] TraceMode mode() const { return mode_; }
  [[nodiscard]] int32_t step_id() const { return step_id_; }
  [[nodiscard]] int64_t invalidations() const { return invalidations_; }
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }

  /// reset_step (2.10): at every root forward.
  void reset_step();
  /// trace_prologue (3.3 a) then record_module in RECORD mode (3.2).
  void prologue_and_record(ModuleIndex m);
  /// The hooks were registered on the root again (_register_deepspeed_module, PR #8043):
  /// invalidates a trace that is not already invalid, without a warning.
  void invalidate_on_rehook();
  /// fetch_sub_module (4.1); `in_graph_task` enables recompute attribution for forward fetches.
  void fetch(ModuleIndex m, bool forward, bool in_graph_task);
  /// release_sub_module (4.3).
  void release(ModuleIndex m, bool forward);
  /// release_backward_leftovers (2.9), at the end of every backward.
  void release_backward_leftovers();
  /// release_and_reset_all (2.11): optimizer step, checkpoint prologue, empty_partition_cache.
  void release_and_reset_all(PartitionCause cause);
  /// Partitions every available param, persistent ones too, outside the coordinator (the exit
  /// of unwrap_model_for_generation's GatheredParameters): no event, as the recorder sees it.
  void partition_outside(PartitionCause cause);
  /// Synchronous gather of `p` outside the coordinator (getter, dangling return, _post_step).
  void gather_sync(ParamIndex p, trace::EventKind kind);

  /// The module's fetch list: own params (recursive if leaf) then externals, deduplicated.
  std::span<const ParamIndex> param_list(ModuleIndex m);

 private:
  void gather(std::span<const ParamIndex> params, trace::EventKind kind, ModuleIndex for_module);
  void wait(ParamIndex p, bool emit_event = true);
  void partition(ParamIndex p, trace::EventKind kind, PartitionCause cause);
  void release_param(ParamIndex p);
  void clean_inflight_registry();
  /// Whether this coordinator's in-flight registry holds p (gathered, its entry not popped).
  bool in_registry(ParamIndex p) const;
  void invalidate(std::string warning);
  /// The step of each occurrence as record_parameters pops it (3.2): the steps are queued by
  /// the ds_id at record time and popped by the ds_id now, so after the module ids were
  /// renumbered (hooks re-registered) an occurrence may pop another module's step, or none.
  void steps_by_current_ids();
  void note_invalidation(InvalidationCause cause, ModuleIndex found, ModuleIndex expected);
  void queue_check(ModuleIndex m, std::span<const ParamIndex> list);
  void prefetch();
  [[nodiscard]] bool on_nvme(ParamIndex p) const;
  void nvme_read_ahead();
  /// The memo entry itself: a backward release adds its recompute params to it (4.3).
  std::vector<ParamIndex>& params_to_release(ModuleIndex m, int32_t s);
  void agree(CollectiveKind kind, std::vector<int64_t> values,
             std::vector<ModuleIndex> modules = {});
  [[noreturn]] void raise_mismatch(ModuleIndex m, std::span<const ParamIndex> need,
                                   std::span<const ParamIndex> got,
                                   std::span<const QueueEntry> popped);
  [[noreturn]] void raise(OutcomeKind kind, std::string message, std::string explanation = {},
                          ModuleIndex module = model::kNone);
  [[nodiscard]] int64_t most_recent(ParamIndex p) const;
  void set_most_recent(ParamIndex p, int64_t s);

  const model::Scenario& scenario_;
  const model::ZeroConfig& config_;
  // The engine sets prefetch_bucket_size to 1 when stage3_allgather_sequential is on (non-MiCS
  // stage 3, engine._configure_zero_optimizer; semantics 8).
  int64_t prefetch_bucket_size_;
  bool fast_sharding_;  ///< stage3_module_granularity_threshold > 0: leaves release fast (4.8)
  ParamState& params_;
  ModuleState& modules_;
  Emitter& emitter_;
  CollectiveLog& collectives_;
  History& history_;
  Discovery discovery_;
  bool nvme_;  ///< offload_param.device == nvme: partitions live on NVMe unless swapped in
  std::vector<uint8_t> nvme_partition_;  ///< per param: its partition is on NVMe (large enough)
  int64_t swap_buffers_used_ = 0;

  TraceMode mode_ = TraceMode::Invalid;
  trace::Phase recorded_phase_ = trace::Phase::None;  ///< the pass the trace was recorded in
  int32_t step_id_ = 0;
  int64_t n_available_ = 0;
  int64_t invalidations_ = 0;
  std::vector<Occurrence> submodule_order_;
  std::vector<int32_t> popped_steps_;  ///< steps_by_current_ids: per occurrence
  std::vector<QueueEntry> param_order_;
  size_t queue_head_ = 0;
  bool queue_valid_ = false;
  std::vector<ModuleIndex> active_backward_;  ///< insertion order; re-insertion keeps position

  // most_recent, reset per pass in O(1) by an epoch stamp.
  std::vector<int64_t> most_recent_;
  std::vector<uint32_t> most_recent_epoch_;
  uint32_t epoch_ = 1;

  // The in-flight registry: params of each gather group, in group order; a group's params are
  // contiguous, group_begin_[i] indexes the first one of the group with id group_ids_[i]. Ids
  // increase (one process-wide counter) but need not be consecutive: another engine's
  // coordinator may have taken some.
  std::vector<ParamIndex> inflight_params_;
  std::vector<uint32_t> group_begin_;
  std::vector<int64_t> group_ids_;
  // group_completed_[i]: group i's handle has completed, so no param is still INFLIGHT by it and
  // a wait on another of its params has nothing left to complete (keeps a group's waits linear).
  std::vector<uint8_t> group_completed_;
  int64_t& next_group_;

  // Memo of params_to_release per (module, step): never invalidated (semantics 4.3, 10.8).
  // Indexed by step first: only a few modules release at any one step, so a short scan beats
  // hashing on this hot path.
  struct MemoEntry {
    ModuleIndex module;
    uint32_t index;
  };
  std::vector<std::vector<MemoEntry>> release_memo_by_step_;
  std::vector<std::vector<ParamIndex>> release_memo_;

  // Scratch buffers reused across calls so the steady state allocates nothing.
  std::vector<ParamIndex> list_scratch_;
  std::vector<ParamIndex> gather_scratch_;
  std::vector<ParamIndex> need_scratch_;
  std::vector<ParamIndex> got_scratch_;
  std::vector<QueueEntry> popped_scratch_;
  std::vector<ParamIndex> release_scratch_;
  std::vector<uint32_t> mark_;  ///< per-param stamp for set membership
  uint32_t mark_epoch_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace zfetch::sim
