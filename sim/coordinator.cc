// The coordinator's trace, fetch, prefetch and release rules (semantics 2.9-2.11, 3, 4).
#include "sim/coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "sim/ds_format.h"
#include "sim/explain.h"
#include "trace/names.h"

namespace zfetch::sim {
namespace {

using trace::EventKind;

// most_recent's default for params not popped in this pass (partitioned_param_coordinator.py).
constexpr int64_t kNeverFetched = -10'000'000'000;
// The smallest partition the NVMe swapper takes: max(MIN_AIO_BYTES, aio.block_size), both 1 MiB
// by default (deepspeed/runtime/swap_tensor/utils.py, constants.py); aio is not read.
constexpr int64_t kMinAioBytes = 1 << 20;

}  // namespace

Coordinator::Coordinator(const model::Scenario& scenario, ParamState& params, ModuleState& modules,
                         Emitter& emitter, CollectiveLog& collectives, History& history,
                         Discovery discovery, int64_t& gather_groups)
    : scenario_(scenario),
      config_(scenario.config.zero),
      prefetch_bucket_size_(config_.allgather_sequential && config_.mics_shard_size <= 0
                                ? 1
                                : config_.prefetch_bucket_size),
      fast_sharding_(config_.module_granularity_threshold > 0),
      params_(params),
      modules_(modules),
      emitter_(emitter),
      collectives_(collectives),
      history_(history),
      discovery_(discovery),
      nvme_(scenario.config.zero.offload_param.device == model::OffloadDevice::Nvme),
      next_group_(gather_groups) {
  const size_t n = scenario.params.size();
  // Init._partition_param puts a partition on NVMe only when the swapper can take it
  // (swappable_tensor: at least MIN_AIO_BYTES, 1 MiB, with the default aio block size); a
  // smaller one stays in CPU memory and is never swapped (4.7).
  nvme_partition_.assign(n, 0);
  for (size_t i = 0; nvme_ && i < n; ++i) {
    const int64_t element = model::dtype_bytes(scenario.params[i].dtype);
    nvme_partition_[i] = params_.partition_numel[i] * element >= kMinAioBytes ? 1 : 0;
  }
  most_recent_.assign(n, kNeverFetched);
  most_recent_epoch_.assign(n, 0);
  mark_.assign(n, 0);
  list_scratch_.reserve(n);
  gather_scratch_.reserve(n);
  need_scratch_.reserve(n);
  got_scratch_.reserve(n);
  popped_scratch_.reserve(n);
  release_scratch_.reserve(n);
  inflight_params_.reserve(n);
  group_begin_.reserve(n);
  group_ids_.reserve(n);
  group_completed_.reserve(n);
  active_backward_.reserve(scenario.modules.size());
}

std::span<const ParamIndex> Coordinator::param_list(ModuleIndex m) {
  list_scratch_.clear();
  ++mark_epoch_;
  auto add = [&](ParamIndex p) {
    if (mark_[p] != mark_epoch_) {
      mark_[p] = mark_epoch_;
      list_scratch_.push_back(p);
    }
  };
  for (ParamIndex p : modules_.own_params[m]) {
    add(p);
  }
  for (ParamIndex p : modules_.externals[m]) {
    add(p);
  }
  return list_scratch_;
}

int64_t Coordinator::most_recent(ParamIndex p) const {
  return most_recent_epoch_[p] == epoch_ ? most_recent_[p] : kNeverFetched;
}

void Coordinator::set_most_recent(ParamIndex p, int64_t s) {
  most_recent_epoch_[p] = epoch_;
  most_recent_[p] = s;
}

void Coordinator::raise(OutcomeKind kind, std::string message, std::string explanation,
                        ModuleIndex module) {
  Failure failure =
      failure_at(emitter_.context, step_id_, module, std::move(message), std::move(explanation));
  throw Raised{kind, std::move(failure)};
}

// ---- pass boundaries and the trace (2.10, 3.1, 3.2) ----

void Coordinator::agree(CollectiveKind kind, std::vector<int64_t> values,
                        std::vector<ModuleIndex> modules) {
  collectives_.add(kind, std::move(values), emitter_.context, step_id_, std::move(modules));
}

void Coordinator::reset_step() {
  emitter_.emit(EventKind::PassStart);
  clean_inflight_registry();
  if (mode_ != TraceMode::Complete) {
    if (collectives_.enabled()) {
      std::vector<int64_t> ids;
      std::vector<ModuleIndex> modules;
      for (const Occurrence& o : submodule_order_) {
        ids.push_back(modules_.ds_id[o.module]);
        modules.push_back(o.module);
      }
      agree(CollectiveKind::AgreeModules, std::move(ids), std::move(modules));
    }
    if (mode_ == TraceMode::Record) {
      // Build the param trace from the occurrences, with each module's params as they are
      // now: externals discovered late in the RECORD pass apply to every occurrence (3.2).
      param_order_.clear();
      steps_by_current_ids();
      for (size_t k = 0; k < submodule_order_.size(); ++k) {
        const Occurrence& o = submodule_order_[k];
        std::span<const ParamIndex> list = param_list(o.module);
        gather_scratch_.assign(list.begin(), list.end());
        std::sort(gather_scratch_.begin(), gather_scratch_.end(),
                  [&](ParamIndex a, ParamIndex b) { return params_.ds_id[a] < params_.ds_id[b]; });
        for (ParamIndex p : gather_scratch_) {
          param_order_.push_back({p, popped_steps_[k]});
        }
      }
      if (collectives_.enabled()) {
        std::vector<int64_t> ids;
        std::vector<int64_t> steps;
        for (const QueueEntry& e : param_order_) {
          ids.push_back(params_.ds_id[e.param]);
          steps.push_back(e.step);
        }
        agree(CollectiveKind::AgreeParams, std::move(ids));
        agree(CollectiveKind::AgreeSteps, std::move(steps));
      }
      mode_ = TraceMode::Complete;
      emitter_.emit_count(EventKind::TraceComplete, static_cast<int64_t>(param_order_.size()));
    } else {
      mode_ = TraceMode::Record;
      emitter_.emit(EventKind::TraceRecord);
    }
  }
  queue_head_ = 0;
  queue_valid_ = mode_ == TraceMode::Complete;
  ++epoch_;  // most_recent cleared
  step_id_ = 0;
  n_available_ = 0;
}

void Coordinator::steps_by_current_ids() {
  popped_steps_.clear();
  bool renumbered = false;
  for (const Occurrence& o : submodule_order_) {
    popped_steps_.push_back(o.step);
    renumbered = renumbered || o.recorded_ds_id != modules_.ds_id[o.module];
  }
  if (!renumbered) {
    return;  // each module pops its own steps, in order: the recorded ones
  }
  // __step_id_module_fetched_for: one deque of steps per ds_id at record time, each popped from
  // the left by the module whose ds_id it is now.
  std::unordered_map<int64_t, std::deque<int32_t>> queued;
  for (const Occurrence& o : submodule_order_) {
    queued[o.recorded_ds_id].push_back(o.step);
  }
  for (size_t k = 0; k < submodule_order_.size(); ++k) {
    const ModuleIndex m = submodule_order_[k].module;
    std::deque<int32_t>& steps = queued[modules_.ds_id[m]];
    if (steps.empty()) {
      emitter_.emit(EventKind::Error, m);
      raise(OutcomeKind::Error, "pop from an empty deque",
            fmt::format(
                "IndexError in record_parameters, when the root's forward starts: the trace "
                "was being recorded when the ZeRO-3 hooks were registered again (the end of "
                "unwrap_model_for_generation), and registering them renumbers every module "
                "(the ds_id counter is never reset), so the steps recorded for {} under its old "
                "id ({}) are looked up under its new one ({}) and none are there. DeepSpeed "
                "with PR #8043 (and trl with PR #4693) invalidates the trace when the hooks "
                "are re-registered, so it is recorded again under the new ids.",
                trace::display_module_name(scenario_.modules[m].qualified_name),
                submodule_order_[k].recorded_ds_id, modules_.ds_id[m]),
            m);
    }
    popped_steps_[k] = steps.front();
    steps.pop_front();
  }
}

void Coordinator::invalidate_on_rehook() {
  if (mode_ != TraceMode::Invalid) {
    note_invalidation(InvalidationCause::HooksRegisteredAgain, model::kNone, model::kNone);
    // No module caused it (the real trace names none).
    emitter_.emit(EventKind::TraceInvalidate, model::kNone, model::kNone, step_id_);
    invalidate({});
  }
}

void Coordinator::invalidate(std::string warning) {
  mode_ = TraceMode::Invalid;
  submodule_order_.clear();
  param_order_.clear();
  ++epoch_;
  queue_valid_ = false;
  queue_head_ = 0;
  clean_inflight_registry();
  ++invalidations_;
  if (!warning.empty() && config_.log_trace_cache_warnings && emitter_.context.rank == 0 &&
      warnings_.size() < 100) {
    warnings_.push_back(std::move(warning));
  }
}

void Coordinator::prologue_and_record(ModuleIndex m) {
  if (mode_ == TraceMode::Complete) {
    const auto order_size = static_cast<int32_t>(submodule_order_.size());
    if (step_id_ >= order_size) {
      note_invalidation(InvalidationCause::TraceTooShort, m, model::kNone);
      emitter_.emit(EventKind::TraceInvalidate, m, model::kNone, step_id_);
      invalidate(
          fmt::format("Invalidate trace cache @ step {} and module {}: cache has only {} "
                      "modules",
                      step_id_, modules_.ds_id[m], order_size));
    } else if (submodule_order_[static_cast<size_t>(step_id_)].module != m) {
      const ModuleIndex expected = submodule_order_[static_cast<size_t>(step_id_)].module;
      note_invalidation(InvalidationCause::ModuleMismatch, m, expected);
      emitter_.emit(EventKind::TraceInvalidate, m, model::kNone, step_id_);
      invalidate(
          fmt::format("Invalidate trace cache @ step {}: expected module {}, but got "
                      "module {}",
                      step_id_, modules_.ds_id[expected], modules_.ds_id[m]));
    }
  }
  if (mode_ == TraceMode::Record) {
    if (submodule_order_.empty()) {
      recorded_phase_ = emitter_.context.phase;
    }
    submodule_order_.push_back({m, step_id_, modules_.ds_id[m]});
  }
}

void Coordinator::note_invalidation(InvalidationCause cause, ModuleIndex found,
                                    ModuleIndex expected) {
  if (history_.invalidations.size() < Outcome::kMaxInvalidationDetails) {
    const Context& at = emitter_.context;
    history_.invalidations.push_back(
        {cause, at.phase, at.rank, at.engine, at.step, at.micro_step, step_id_, found, expected,
         static_cast<int32_t>(submodule_order_.size()), recorded_phase_});
  }
}

// ---- gathers, waits, partitions (1.1, 4.5, 4.6) ----

void Coordinator::gather(std::span<const ParamIndex> ps, EventKind kind, ModuleIndex for_module) {
  const int64_t group = next_group_++;
  group_begin_.push_back(static_cast<uint32_t>(inflight_params_.size()));
  group_ids_.push_back(group);
  group_completed_.push_back(0);
  ++emitter_.stats.gathers;
  std::vector<int64_t> ids;  // partition sizes, for the cross-rank comparison
  // all_gather_coalesced gathers one param (or, with allgather_sequential, each param) alone and
  // points its data at the output buffer at launch; at world size 1 no gather runs (the
  // NoGatherHandle sets the data at once). A coalesced gather fills the data at its wait.
  const bool shaped_at_launch =
      ps.size() == 1 || config_.allgather_sequential || scenario_.world_size == 1;
  // A param partitioned while its registry entry stayed (waited through another param's handle,
  // then partitioned by a GatheredParameters exit) is refused when the gather registers it again.
  ParamIndex registered = model::kNone;
  for (ParamIndex p : ps) {
    if (registered == model::kNone && in_registry(p)) {
      registered = p;
    }
  }
  for (ParamIndex p : ps) {
    params_.inflight_shaped[p] = static_cast<uint8_t>(shaped_at_launch);
    if (nvme_ && params_.swapped_in[p]) {
      --swap_buffers_used_;  // the gather consumes the swapped-in partition's buffer
    }
    params_.swapped_in[p] = 1;  // a gather first swaps an NVMe partition in synchronously
    params_.status[p] = Status::Inflight;
    params_.fast_sharded[p] = 0;
    params_.inflight_group[p] = group;
    inflight_params_.push_back(p);
    n_available_ += params_.numel[p];
    emitter_.emit(kind, model::kNone, p, -1, group);
    ++emitter_.stats.gathered_params;
    emitter_.stats.gathered_bytes += params_.bytes[p];
    if (collectives_.enabled()) {
      ids.push_back(params_.partition_numel[p]);
    }
  }
  // An all-gather matches its peers by size only: different params of the same size pass.
  if (collectives_.enabled()) {
    std::vector<ModuleIndex> modules;
    if (for_module != model::kNone) {
      modules.push_back(for_module);
    }
    collectives_.add(CollectiveKind::Gather, std::move(ids), emitter_.context, step_id_,
                     std::move(modules));
  }
  if (registered != model::kNone) {
    // InflightParamRegistry.__setitem__'s RuntimeError (3.4 #10), after the gather launched.
    raise(OutcomeKind::InflightParams,
          fmt::format("{} already in registry", ds_summary(scenario_, params_, registered, false)),
          fmt::format("{} was gathered again while the coordinator's in-flight registry still "
                      "held it: an earlier coalesced gather registered it, another param's "
                      "fetch waited that gather's handle (which made it AVAILABLE without "
                      "removing its entry), and it was partitioned before its own fetch popped "
                      "the entry (a GatheredParameters block's exit partitions the params it "
                      "lists; semantics 11.2). Keep the block from listing params that the "
                      "coordinator prefetches, or give them their own gather (a smaller "
                      "stage3_prefetch_bucket_size).",
                      scenario_.params[registered].qualified_name),
          for_module);
  }
}

bool Coordinator::in_registry(ParamIndex p) const {
  // Another engine's coordinator's group is in that coordinator's registry, not this one's.
  const int64_t group = params_.inflight_group[p];
  return group >= 0 && std::binary_search(group_ids_.begin(), group_ids_.end(), group);
}

void Coordinator::wait(ParamIndex p, bool emit_event) {
  const int64_t group = params_.inflight_group[p];
  params_.inflight_group[p] = -1;
  if (emit_event) {
    emitter_.emit(EventKind::Wait, model::kNone, p, -1, group);
  }
  // One handle completes every param of its coalesced gather (AllGatherCoalescedHandle.wait).
  const auto at = std::lower_bound(group_ids_.begin(), group_ids_.end(), group);
  if (at == group_ids_.end() || *at != group) {
    // Gathered by another engine's coordinator (a re-used model): that handle completes it.
    if (params_.status[p] == Status::Inflight) {
      params_.status[p] = Status::Available;
    }
    return;
  }
  const auto index = static_cast<size_t>(at - group_ids_.begin());
  const size_t end =
      index + 1 < group_begin_.size() ? group_begin_[index + 1] : inflight_params_.size();
  // A param of the group that was released and gathered again since belongs to its new
  // gather's handle: completing an old handle (a no-op in DeepSpeed once it completed) must not
  // mark it AVAILABLE (found by the fuzzer's residency invariants, scenarios/findings/).
  if (params_.status[p] == Status::Inflight) {
    params_.status[p] = Status::Available;
  }
  if (group_completed_[index] != 0) {
    return;
  }
  group_completed_[index] = 1;
  for (size_t i = group_begin_[index]; i < end; ++i) {
    const ParamIndex q = inflight_params_[i];
    if (params_.status[q] == Status::Inflight && params_.inflight_group[q] == group) {
      params_.status[q] = Status::Available;
    }
  }
}

void Coordinator::partition(ParamIndex p, EventKind kind, PartitionCause cause) {
  history_.last_partitioned[p] = {cause, emitter_.context};
  // The next gather rebuilds the param in its stored shape (1.4): storage layout again (6).
  params_.compute_layout[p] = 0;
  params_.swapped_in[p] = 0;    // with NVMe offload the partition goes back to NVMe
  params_.fast_sharded[p] = 0;  // partition() frees the data: shape [0]
  params_.status[p] = Status::NotAvailable;
  emitter_.emit(kind, model::kNone, p);
  ++emitter_.stats.releases;
}

void Coordinator::release_param(ParamIndex p) {
  if (params_.status[p] == Status::Available && params_.consumers[p].empty()) {
    partition(
        p, EventKind::Release,
        mode_ == TraceMode::Complete ? PartitionCause::Release : PartitionCause::RecordingRelease);
    n_available_ -= params_.numel[p];
  }
}

void Coordinator::clean_inflight_registry() {
  // _clean_inflight_param_registry waits on each handle directly, not through a registry pop
  // as the fetch loop and partition-all do: no wait event (what real DeepSpeed traces show,
  // scenarios/validation/v18_trace_change), then releases the param.
  for (ParamIndex p : inflight_params_) {
    if (params_.inflight_group[p] >= 0) {
      wait(p, false);
      release_param(p);
    }
  }
  inflight_params_.clear();
  group_begin_.clear();
  group_ids_.clear();
  group_completed_.clear();
}

void Coordinator::gather_sync(ParamIndex p, EventKind kind) {
  params_.status[p] = Status::Available;
  params_.fast_sharded[p] = 0;
  emitter_.emit(kind, model::kNone, p);
  ++(kind == EventKind::PersistentGather ? emitter_.stats.persistent_gathers
                                         : emitter_.stats.getter_gathers);
  emitter_.stats.gathered_bytes += params_.bytes[p];
  if (collectives_.enabled()) {  // the payload vector is built only when ranks are compared
    collectives_.add(kind == EventKind::PersistentGather ? CollectiveKind::PersistentGather
                                                         : CollectiveKind::GetterGather,
                     {params_.partition_numel[p]}, emitter_.context, step_id_);
  }
}

// ---- fetch (4.1) ----

void Coordinator::fetch(ModuleIndex m, bool forward, bool in_graph_task) {
  emitter_.emit(EventKind::Fetch, m, model::kNone, step_id_);
  ++emitter_.stats.fetches;
  if (!forward &&
      std::find(active_backward_.begin(), active_backward_.end(), m) == active_backward_.end()) {
    active_backward_.push_back(m);
  }
  const std::span<const ParamIndex> list = param_list(m);

  gather_scratch_.clear();
  int64_t partition_total = 0;
  for (ParamIndex p : list) {
    if (params_.status[p] == Status::NotAvailable) {
      gather_scratch_.push_back(p);
      partition_total += params_.partition_numel[p];
    }
  }
  if (partition_total > 0) {
    // Coalesced gathers list their params sorted by ds_id (4.6).
    std::sort(gather_scratch_.begin(), gather_scratch_.end(),
              [&](ParamIndex a, ParamIndex b) { return params_.ds_id[a] < params_.ds_id[b]; });
    gather(gather_scratch_, EventKind::Gather, m);
  }

  const int64_t module_id = modules_.ds_id[m];
  const bool attribute = forward && in_graph_task && !active_backward_.empty();
  for (ParamIndex p : list) {
    params_.consumers[p].insert(module_id);
    if (attribute && params_.frozen[p]) {
      // Recompute attribution to the most recently inserted active-backward module (2.8).
      const ModuleIndex owner = active_backward_.back();
      std::vector<ParamIndex>& recompute = modules_.recompute[owner];
      if (std::find(recompute.begin(), recompute.end(), p) == recompute.end()) {
        recompute.push_back(p);
      }
      params_.consumers[p].insert(modules_.ds_id[owner]);
      params_.attributed_owner[p] = modules_.ds_id[owner];
      emitter_.emit(EventKind::RecomputeAttach, owner, p);
    }
    if (params_.inflight_group[p] >= 0) {
      wait(p);
    }
    if (params_.status[p] != Status::Available) {
      // The fetch wait loop's assertion: its text is the param's ds_summary() (3.4 #9).
      raise(OutcomeKind::InflightParams, ds_summary(scenario_, params_, p, false),
            fmt::format("{} was not available after the fetch of module '{}': a NOT_AVAILABLE "
                        "parameter with no elements to gather is never gathered (4.1 step 4).",
                        scenario_.params[p].qualified_name, scenario_.modules[m].qualified_name),
            m);
    }
  }

  if (mode_ == TraceMode::Complete) {
    queue_check(m, list);
    if (prefetch_bucket_size_ > 0) {
      prefetch();
    }
  }
  ++step_id_;
}

// ---- the fetch-time queue check (3.3 b) ----

void Coordinator::queue_check(ModuleIndex m, std::span<const ParamIndex> list) {
  need_scratch_.clear();
  for (ParamIndex p : list) {
    if (most_recent(p) < step_id_) {
      need_scratch_.push_back(p);
    }
  }
  got_scratch_.clear();
  popped_scratch_.clear();
  ++mark_epoch_;
  while (queue_valid_ && queue_head_ < param_order_.size() &&
         got_scratch_.size() < need_scratch_.size()) {
    const QueueEntry entry = param_order_[queue_head_++];
    set_most_recent(entry.param, entry.step);
    popped_scratch_.push_back(entry);
    emitter_.emit(EventKind::QueuePop, model::kNone, entry.param, entry.step);
    if (mark_[entry.param] != mark_epoch_) {
      mark_[entry.param] = mark_epoch_;
      got_scratch_.push_back(entry.param);
    }
  }
  // got != need as sets: equal sizes and every needed param was popped.
  bool same = got_scratch_.size() == need_scratch_.size();
  for (size_t i = 0; same && i < need_scratch_.size(); ++i) {
    same = mark_[need_scratch_[i]] == mark_epoch_;
  }
  if (!same) {
    raise_mismatch(m, need_scratch_, got_scratch_, popped_scratch_);
  }
}

void Coordinator::raise_mismatch(ModuleIndex m, std::span<const ParamIndex> need_in,
                                 std::span<const ParamIndex> got_in,
                                 std::span<const QueueEntry> popped) {
  // Python sets of params iterate in id(param) hash order, which no run can reproduce; zfetch
  // lists them by ds_id (single-element sets, as in issue #8874, print identically).
  auto by_id = [&](ParamIndex a, ParamIndex b) { return params_.ds_id[a] < params_.ds_id[b]; };
  std::vector<ParamIndex> need(need_in.begin(), need_in.end());
  std::vector<ParamIndex> got(got_in.begin(), got_in.end());
  std::sort(need.begin(), need.end(), by_id);
  std::sort(got.begin(), got.end(), by_id);
  std::string message = tracing_error_message(
      step_id_, modules_.ds_id[m], emitter_.context.phase != trace::Phase::Eval,
      ds_summary_tuple(scenario_, params_, need), need.size(),
      ds_summary_tuple(scenario_, params_, got));
  MismatchFacts facts{m, step_id_, need, got, {popped.begin(), popped.end()}, submodule_order_};
  std::string explanation =
      explain_mismatch(scenario_, params_, modules_, history_, discovery_, emitter_.context, facts);
  emitter_.emit(EventKind::Mismatch, m, model::kNone, step_id_);
  Failure failure =
      failure_at(emitter_.context, step_id_, m, std::move(message), std::move(explanation));
  for (ParamIndex p : need) {
    if (std::find(got.begin(), got.end(), p) == got.end()) {
      failure.missing.push_back(p);
    }
  }
  throw Raised{OutcomeKind::FetchQueueMismatch, std::move(failure)};
}

// ---- prefetch (4.2) ----

void Coordinator::prefetch() {
  const int64_t budget =
      std::min(config_.max_live_parameters - n_available_, prefetch_bucket_size_);
  gather_scratch_.clear();
  ++mark_epoch_;
  int64_t numel = 0;
  while (queue_valid_ && queue_head_ < param_order_.size() && numel < budget) {
    const QueueEntry entry = param_order_[queue_head_];
    const ParamIndex p = entry.param;
    // Every popleft is a queue_pop, the prefetch round's as well as the check's (DeepSpeed pops
    // an NVMe entry too and puts it back with appendleft).
    emitter_.emit(EventKind::QueuePop, model::kNone, p, entry.step);
    if (on_nvme(p)) {
      break;  // its partition is still on NVMe: prefetch stops, the read-ahead fetches it (4.2)
    }
    ++queue_head_;
    set_most_recent(p, std::max(most_recent(p), static_cast<int64_t>(entry.step)));
    if (params_.status[p] == Status::NotAvailable && mark_[p] != mark_epoch_) {
      mark_[p] = mark_epoch_;
      gather_scratch_.push_back(p);
      numel += params_.numel[p];
    }
  }
  if (numel > 0) {
    std::sort(gather_scratch_.begin(), gather_scratch_.end(),
              [&](ParamIndex a, ParamIndex b) { return params_.ds_id[a] < params_.ds_id[b]; });
    gather(gather_scratch_, EventKind::Prefetch, model::kNone);
  }
  if (nvme_) {
    nvme_read_ahead();
  }
}

bool Coordinator::on_nvme(ParamIndex p) const {
  return nvme_ && nvme_partition_[p] && params_.status[p] == Status::NotAvailable &&
         !params_.swapped_in[p];
}

void Coordinator::nvme_read_ahead() {
  // __prefetch_nvme_param_partitions: an asynchronous swap-in of the next queue entries whose
  // partitions are on NVMe. Every entry counts towards the elements considered (all params have
  // the swapper), and the walk stops once they exceed twice the registry's elements or this
  // round's swap-ins reach the free swap buffers (4.7).
  int64_t registered = 0;
  for (ParamIndex p : inflight_params_) {
    if (params_.inflight_group[p] >= 0) {
      registered += params_.numel[p];
    }
  }
  int64_t considered = 0;
  for (size_t i = queue_head_; i < param_order_.size(); ++i) {
    if (considered > 2 * registered || swap_buffers_used_ >= config_.offload_param.buffer_count) {
      break;
    }
    const ParamIndex p = param_order_[i].param;
    if (on_nvme(p)) {
      params_.swapped_in[p] = 1;
      ++swap_buffers_used_;
    }
    considered += params_.numel[p];
  }
}

// ---- release (4.3, 2.9, 2.11) ----

std::vector<ParamIndex>& Coordinator::params_to_release(ModuleIndex m, int32_t s) {
  const auto step = static_cast<size_t>(s);
  if (step >= release_memo_by_step_.size()) {
    release_memo_by_step_.resize(step + 1);
  }
  for (const MemoEntry& entry : release_memo_by_step_[step]) {
    if (entry.module == m) {
      return release_memo_[entry.index];
    }
  }
  std::vector<ParamIndex> candidates;
  for (ParamIndex p : param_list(m)) {
    // Skipped-reuse rule: a later use was already popped by prefetch while resident.
    if (!params_.persist[p] && most_recent(p) <= s) {
      candidates.push_back(p);
    }
  }
  // Reuse-distance rule. The walked modules' lists use the recursion flag of m (a quirk, 4.3).
  const bool recurse = modules_.leaf[m] != 0;
  int64_t seen = 0;
  std::vector<ParamIndex> walked;
  for (size_t i = static_cast<size_t>(s); i < submodule_order_.size() && !candidates.empty(); ++i) {
    if (seen >= config_.max_reuse_distance) {
      break;
    }
    const ModuleIndex w = submodule_order_[i].module;
    walked = recurse ? modules_.recursive_params[w] : modules_.direct_params[w];
    for (ParamIndex p : modules_.externals[w]) {
      walked.push_back(p);
    }
    for (ParamIndex p : walked) {
      candidates.erase(std::remove(candidates.begin(), candidates.end(), p), candidates.end());
      seen += params_.numel[p];
    }
  }
  release_memo_by_step_[step].push_back({m, static_cast<uint32_t>(release_memo_.size())});
  release_memo_.push_back(std::move(candidates));
  return release_memo_.back();
}

void Coordinator::release(ModuleIndex m, bool forward) {
  ++mark_epoch_;
  const uint32_t in_release_set = mark_epoch_;
  if (mode_ == TraceMode::Complete) {
    std::vector<ParamIndex>& memo = params_to_release(m, step_id_);
    if (!forward) {
      // release_sub_module adds the recompute params to the set __params_to_release returned,
      // and that set is the lru_cache's own: later releases of (m, step) see them too (4.3).
      for (ParamIndex p : modules_.recompute[m]) {
        if (!params_.persist[p] && std::find(memo.begin(), memo.end(), p) == memo.end()) {
          memo.push_back(p);
        }
      }
    }
    for (ParamIndex p : memo) {
      mark_[p] = in_release_set;
    }
  } else {
    for (ParamIndex p : modules_.own_params[m]) {
      mark_[p] = in_release_set;
    }
    for (ParamIndex p : modules_.externals[m]) {
      mark_[p] = in_release_set;
    }
  }
  release_scratch_.clear();
  for (ParamIndex p : modules_.own_params[m]) {
    release_scratch_.push_back(p);
  }
  for (ParamIndex p : modules_.externals[m]) {
    release_scratch_.push_back(p);
  }
  if (!forward) {
    if (active_backward_.empty()) {
      raise(OutcomeKind::Error, "active_backward_submodules is empty during backward pass");
    }
    for (ParamIndex p : modules_.recompute[m]) {
      if (!params_.persist[p]) {
        mark_[p] = in_release_set;
      }
      release_scratch_.push_back(p);
    }
    modules_.recompute[m].clear();
    active_backward_.erase(std::remove(active_backward_.begin(), active_backward_.end(), m),
                           active_backward_.end());
  }
  const int64_t module_id = modules_.ds_id[m];
  for (ParamIndex p : release_scratch_) {
    params_.consumers[p].erase(module_id);
    if (params_.attributed_owner[p] == module_id) {
      params_.attributed_owner[p] = -1;
    }
    if (mark_[p] == in_release_set && !params_.is_external[p]) {
      release_param(p);
      // Fast sharding: release_sub_module then sets the param's data to a shared 1-element
      // buffer (empty_buffer), which a module state_dict saves as shape [1] (4.8).
      if (fast_sharding_ && modules_.leaf[m]) {
        params_.fast_sharded[p] = 1;
      }
    }
  }
}

void Coordinator::release_backward_leftovers() {
  while (!active_backward_.empty()) {
    const ModuleIndex m = active_backward_.back();  // popitem(): LIFO
    // Its params are iter_params(): own (recursive if leaf) and its externals, plus its
    // recompute params, as a set; is_external_param (dangling returns) and persistent ones stay.
    // Real DeepSpeed releases a getter-registered external here (tools/recorder corpus,
    // ext_param_getattr).
    active_backward_.pop_back();
    const int64_t module_id = modules_.ds_id[m];
    const std::span<const ParamIndex> list = param_list(m);  // marks its params
    release_scratch_.assign(list.begin(), list.end());
    for (ParamIndex p : modules_.recompute[m]) {
      if (mark_[p] != mark_epoch_) {
        mark_[p] = mark_epoch_;
        release_scratch_.push_back(p);
      }
    }
    modules_.recompute[m].clear();
    for (ParamIndex p : release_scratch_) {
      params_.consumers[p].erase(module_id);
      if (params_.attributed_owner[p] == module_id) {
        params_.attributed_owner[p] = -1;
      }
      if (!params_.persist[p] && !params_.is_external[p]) {
        release_param(p);
      }
    }
  }
}

void Coordinator::release_and_reset_all(PartitionCause cause) {
  for (ParamIndex p : inflight_params_) {
    if (params_.inflight_group[p] >= 0) {
      wait(p);
    }
  }
  inflight_params_.clear();
  group_begin_.clear();
  group_ids_.clear();
  group_completed_.clear();
  for (ParamIndex p : params_.by_id) {
    params_.consumers[p].clear();
    params_.attributed_owner[p] = -1;
  }
  for (ParamIndex p : params_.by_id) {
    if (params_.status[p] == Status::Available) {
      partition(p, EventKind::PartitionAll, cause);
    }
  }
}

void Coordinator::partition_outside(PartitionCause cause) {
  for (ParamIndex p : params_.by_id) {
    if (params_.status[p] == Status::Available) {
      history_.last_partitioned[p] = {cause, emitter_.context};
      params_.compute_layout[p] = 0;
      params_.swapped_in[p] = 0;
      params_.fast_sharded[p] = 0;
      params_.status[p] = Status::NotAvailable;
    }
  }
}

}  // namespace zfetch::sim
