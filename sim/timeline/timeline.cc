// The stream model behind simulated time; see timeline.h and docs/timeline.md.
#include "sim/timeline/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "base/enum_names.h"
#include "model/leaves.h"
#include "model/partition.h"
#include "sim/timeline/timeline_json.h"

namespace zfetch::sim {

namespace {

constexpr size_t index_of(Stream s) {
  return static_cast<size_t>(s);
}

}  // namespace

std::string_view format_as(Stream stream) {
  static constexpr base::EnumNames<Stream::ReduceScatter> kNames("compute", "comm", "h2d", "rs");
  return kNames[stream];
}

// Everything the model keeps for one rank. Sized from the scenario when the rank is first
// seen; nothing grows afterwards except the summaries.
struct Timeline::RankState {
  int32_t rank = 0;
  std::array<Tick, kStreamCount> free{};  ///< when each stream is next free; free[Compute] = now
  std::vector<Tick> ready;                ///< per param: end of the gather that last moved it
  /// A slice given to the recorders, kept for the flows that end at a later compute slice.
  static constexpr uint64_t kNoSlice = UINT64_MAX;
  struct RecordedSlice {
    uint64_t index = kNoSlice;
    Slice slice;
  };
  std::vector<RecordedSlice> gather_slice;  ///< per param: that gather's slice (recording only)
  std::vector<uint8_t> resident;            ///< per param: counted in `live`
  int64_t live = 0;
  Tick run_exposed = 0;
  model::ModuleIndex current_module = model::kNone;  ///< of the latest Fetch
  bool in_step = false;
  StepSummary step;

  // The open coalesced gather: events of one group arrive back to back and are costed as one
  // collective when the first event of anything else arrives.
  struct Group {
    bool open = false;
    bool sync = false;
    trace::EventKind kind = trace::EventKind::Gather;
    Slice::Kind slice_kind = Slice::Kind::Gather;
    int64_t id = -1;
    Tick issue = 0;
    int64_t shard_bytes = 0;
    int64_t odd_shard_bytes = 0;  ///< of odd params (odd_param), costed by the odd curve
    int64_t full_bytes = 0;
    model::ModuleIndex module = model::kNone;
    trace::Phase phase = trace::Phase::None;
    std::vector<model::ParamIndex> params;  ///< capacity = number of params
  } group;

  std::vector<RecordedSlice> waited_slices;  ///< gathers waited on since the last Compute
  std::vector<ModuleSummary> modules;
  std::vector<int64_t> prefetch_pending;  ///< per param: prefetched bytes not yet waited on

  // The open landmark spans (recording only): a span closes when an event of its kind with
  // another key arrives, or at finish().
  struct Span {
    bool open = false;
    std::array<int32_t, 3> key{};
    Landmark mark;
  };
  std::array<Span, 3> spans;  ///< micro-step, pass, phase
  int32_t passes = 0;         ///< PassStart events seen
  int64_t peak_live = 0;      ///< recording: the highest `live` so far, when, and who held it
  Tick peak_t = 0;
  std::vector<uint8_t> peak_resident;
};

Timeline::Timeline(const model::Scenario& scenario, const CostModel& cost, trace::EventSink& next,
                   TimelineOptions options)
    : scenario_(scenario),
      cost_(cost),
      next_(next),
      options_(options),
      world_size_(std::max<int64_t>(1, scenario.world_size)),
      offload_(scenario.config.zero.offload_param.device != model::OffloadDevice::None),
      full_bytes_(scenario.params.size()),
      shard_bytes_(scenario.params.size()),
      odd_(scenario.params.size(), 0),
      rs_bytes_(scenario.modules.size(), 0) {
  if (options_.record) {
    recorders_.push_back(&recording_);
  }
  if (options_.recorder != nullptr) {
    recorders_.push_back(options_.recorder);
  }
  for (size_t p = 0; p < scenario.params.size(); ++p) {
    const model::ParamSpec& spec = scenario.params[p];
    const int64_t elem = model::dtype_bytes(spec.dtype);
    full_bytes_[p] = spec.numel * elem;
    shard_bytes_[p] = model::partition_numel<int64_t>(spec.numel, world_size_) * elem;
    odd_[p] = odd_param(spec.numel, elem, world_size_) ? 1 : 0;
  }
  // Gradients reduced after a module's backward: its trainable own params (the whole subtree
  // for a z3 leaf), each Parameter object once (a tied entry shares its target's gradient).
  const std::vector<uint8_t> leaves = model::z3_leaf_modules(scenario);
  for (size_t m = 0; m < scenario.modules.size(); ++m) {
    std::vector<model::ModuleIndex> todo{static_cast<model::ModuleIndex>(m)};
    int64_t shard = 0;
    while (!todo.empty()) {
      const model::ModuleSpec& spec = scenario.modules[todo.back()];
      todo.pop_back();
      for (model::ParamIndex p : spec.params) {
        if (!scenario.params[p].frozen && scenario.params[p].tied_to == model::kNone) {
          shard += shard_bytes_[p];
        }
      }
      if (leaves[m] != 0) {
        todo.insert(todo.end(), spec.children.begin(), spec.children.end());
      }
    }
    rs_bytes_[m] = shard * world_size_;
  }
}

Timeline::~Timeline() = default;

Timeline::RankState& Timeline::rank_state(int32_t rank) {
  const size_t r = rank < 0 ? 0 : static_cast<size_t>(rank);
  if (r >= ranks_.size()) {
    // Only the ranks that send events get a slot: a world of 10^9 ranks costs nothing here.
    ranks_.resize(r + 1);
  }
  if (!ranks_[r]) {
    auto state = std::make_unique<RankState>();
    state->rank = static_cast<int32_t>(r);
    const size_t params = scenario_.params.size();
    state->ready.assign(params, 0);
    state->resident.assign(params, 0);
    state->group.params.reserve(params);
    if (recording_wanted()) {
      state->gather_slice.assign(params, RankState::RecordedSlice{});
      state->waited_slices.reserve(16);
    }
    if (options_.per_module) {
      state->modules.assign(scenario_.modules.size(), ModuleSummary{});
      state->prefetch_pending.assign(params, 0);
    }
    ranks_[r] = std::move(state);
  }
  return *ranks_[r];
}

uint64_t Timeline::record_slice(const Slice& slice) {
  for (RecordingSink* r : recorders_) {
    r->on_slice(slice);
  }
  return slices_recorded_++;
}

void Timeline::record_landmark(const Landmark& landmark) {
  for (RecordingSink* r : recorders_) {
    r->on_landmark(landmark);
  }
}

void Timeline::record_live(const CounterSample& sample) {
  for (RecordingSink* r : recorders_) {
    r->on_live_bytes(sample);
  }
}

void Timeline::add_live(RankState& state, model::ParamIndex p, int64_t bytes, Tick t) {
  if (p < state.resident.size()) {
    if (state.resident[p] != 0) {
      return;
    }
    state.resident[p] = 1;
  }
  accumulate(state.live, bytes);
  state.step.peak_live_bytes = std::max(state.step.peak_live_bytes, state.live);
  if (recording_wanted()) {
    record_live({state.rank, t, state.live});
    if (state.live > state.peak_live) {
      // A new peak: remember who holds it (the flags are copied into a buffer sized once).
      state.peak_live = state.live;
      state.peak_t = t;
      state.peak_resident = state.resident;
    }
  }
}

void Timeline::remove_live(RankState& state, model::ParamIndex p, int64_t bytes, Tick t) {
  if (p < state.resident.size()) {
    if (state.resident[p] == 0) {
      return;
    }
    state.resident[p] = 0;
  }
  state.live -= bytes;
  if (recording_wanted()) {
    record_live({state.rank, t, state.live});
  }
}

Tick Timeline::occupy(RankState& state, Stream stream, Tick ready, Tick dur) {
  Tick& free = state.free[index_of(stream)];
  const Tick start = std::max(ready, free);
  free = start;
  accumulate(free, dur);
  return start;
}

void Timeline::stall_until(RankState& state, Tick t, model::ModuleIndex module) {
  Tick& now = state.free[index_of(Stream::Compute)];
  if (t <= now) {
    return;
  }
  const Tick stall = t - now;
  now = t;
  accumulate(state.step.exposed_comm_ns, stall);
  accumulate(state.run_exposed, stall);
  if (options_.per_module && module < state.modules.size()) {
    accumulate(state.modules[module].exposed_comm_ns, stall);
  }
}

void Timeline::drain(RankState& state, model::ModuleIndex module) {
  Tick end = state.free[index_of(Stream::Compute)];
  for (Tick t : state.free) {
    end = std::max(end, t);
  }
  stall_until(state, end, module);
}

void Timeline::begin_step(RankState& state, int32_t step) {
  state.step = StepSummary{};
  state.step.rank = state.rank;
  state.step.step = step;
  state.step.start_ns = state.free[index_of(Stream::Compute)];
  state.step.peak_live_bytes = state.live;
  state.in_step = true;
  // The step's fixed cost (calibration step.fixed_ns) keeps compute busy; counted as compute,
  // so that step_ns == compute_ns + exposed_comm_ns still holds.
  if (const Tick fixed = cost_.step_fixed(); fixed > 0) {
    occupy(state, Stream::Compute, state.free[index_of(Stream::Compute)], fixed);
    accumulate(state.step.compute_ns, fixed);
  }
}

void Timeline::end_step(RankState& state) {
  if (!state.in_step) {
    return;
  }
  state.step.step_ns = state.free[index_of(Stream::Compute)] - state.step.start_ns;
  summary_.peak_live_bytes = std::max(summary_.peak_live_bytes, state.step.peak_live_bytes);
  if (options_.steps != nullptr) {
    options_.steps->on_step(state.step);
  } else {
    summary_.steps.push_back(state.step);
  }
  if (recording_wanted()) {
    Landmark step;
    step.kind = Landmark::Kind::Step;
    step.rank = state.rank;
    step.step = state.step.step;
    step.start_ns = state.step.start_ns;
    step.end_ns = state.step.start_ns + state.step.step_ns;
    record_landmark(step);
  }
  state.in_step = false;
}

void Timeline::open_group(RankState& state, const trace::Event& event, Slice::Kind kind,
                          bool sync) {
  RankState::Group& g = state.group;
  g.open = true;
  g.sync = sync;
  g.kind = event.kind;
  g.slice_kind = kind;
  g.id = event.group;
  g.issue = state.free[index_of(Stream::Compute)];
  g.shard_bytes = 0;
  g.odd_shard_bytes = 0;
  g.full_bytes = 0;
  g.module =
      event.module_index != trace::Event::kNoIndex ? event.module_index : state.current_module;
  g.phase = event.phase;
  g.params.clear();
}

// Costs the open group as one collective:
//   h2d (offload only): [max(issue, h2d free), + shard bytes / h2d bandwidth)
//   comm:               [max(h2d end or issue, comm free), + all_gather(W * shard bytes))
// With W == 1 the all-gather costs nothing and takes no comm slot (DeepSpeed skips it).
void Timeline::flush_group(RankState& state) {
  RankState::Group& g = state.group;
  if (!g.open) {
    return;
  }
  g.open = false;
  Tick ready = g.issue;
  for (RecordingSink* r : recorders_) {
    r->on_gather_params(g.params);
  }
  const auto params_count = static_cast<uint32_t>(g.params.size());
  RankState::RecordedSlice recorded;
  if (offload_) {
    const Tick dur = cost_.h2d_copy(g.shard_bytes);
    const Tick start = occupy(state, Stream::H2d, ready, dur);
    ready = state.free[index_of(Stream::H2d)];
    if (recording_wanted() && dur > 0) {
      recorded.slice = {
          Slice::Kind::H2d, Stream::H2d, g.phase,      state.rank,    state.step.step, start, dur,
          g.module,         0,           params_count, g.shard_bytes, g.issue};
      recorded.index = record_slice(recorded.slice);
    }
  }
  int64_t gathered_bytes = 0;
  if (__builtin_mul_overflow(g.shard_bytes, world_size_, &gathered_bytes)) {
    overflowed_ = true;
    gathered_bytes = std::numeric_limits<int64_t>::max();
  }
  int64_t odd_gathered_bytes = 0;
  if (__builtin_mul_overflow(g.odd_shard_bytes, world_size_, &odd_gathered_bytes)) {
    odd_gathered_bytes = gathered_bytes;
  }
  const Tick comm_dur = cost_.all_gather(gathered_bytes, odd_gathered_bytes, world_size_);
  if (comm_dur > 0) {
    const Tick start = occupy(state, Stream::Comm, ready, comm_dur);
    ready = state.free[index_of(Stream::Comm)];
    if (recording_wanted()) {
      recorded.slice = {g.slice_kind, Stream::Comm, g.phase,  state.rank, state.step.step,
                        start,        comm_dur,     g.module, 0,          params_count,
                        g.full_bytes, g.issue};
      recorded.index = record_slice(recorded.slice);
    }
  }
  for (model::ParamIndex p : g.params) {
    state.ready[p] = ready;
    if (recording_wanted()) {
      state.gather_slice[p] = recorded;
    }
  }
  if (g.sync) {
    stall_until(state, ready, g.module);
    if (recording_wanted() && recorded.index != RankState::kNoSlice) {
      state.waited_slices.push_back(recorded);
    }
  }
}

void Timeline::on_event(const trace::Event& event) {
  RankState& state = rank_state(event.rank);
  // A coalesced gather's events arrive back to back; anything else costs the open one.
  const bool joins_group = state.group.open && event.kind == state.group.kind && event.group >= 0 &&
                           event.group == state.group.id;
  if (!joins_group) {
    flush_group(state);
  }
  if (!state.in_step || state.step.step != event.step) {
    end_step(state);
    begin_step(state, event.step);
  }
  const Tick t = apply(state, event, joins_group);
  if (recording_wanted()) {
    record_landmarks(state, event, t);
  }
  trace::Event stamped = event;
  stamped.t_ns = t;
  next_.on_event(stamped);
}

Tick Timeline::apply(RankState& state, const trace::Event& event, bool joins_group) {
  using trace::EventKind;
  const Tick& now = state.free[index_of(Stream::Compute)];
  switch (event.kind) {
  case EventKind::Fetch:
    state.current_module = event.module_index;
    if (options_.per_module && event.module_index < state.modules.size()) {
      ++state.modules[event.module_index].fetches;
    }
    return now;
  case EventKind::Gather:
  case EventKind::Prefetch:
  case EventKind::GetterGather:
  case EventKind::PersistentGather:
    return add_to_group(state, event, joins_group);
  case EventKind::Wait:
    wait_for_param(state, event);
    return now;
  case EventKind::Compute:
    return compute(state, event);
  case EventKind::BackwardPost:
    reduce_scatter(state, event);
    return now;
  case EventKind::Release:
  case EventKind::PartitionAll:
    release_param(state, event);
    return now;
  case EventKind::OptimizerStep:
    // The optimizer needs every reduced gradient; DeepSpeed synchronizes its streams here.
    drain(state, model::kNone);
    state.step.optimizer_step = true;
    return now;
  case EventKind::Restart:
    restart(state);
    return now;
  default:
    return now;
  }
}

// A gather event joins the open coalesced gather (or opens one); it is costed by flush_group.
Tick Timeline::add_to_group(RankState& state, const trace::Event& event, bool joins_group) {
  using trace::EventKind;
  const model::ParamIndex p = event.param_index;
  const bool known_param = p < full_bytes_.size();
  if (!joins_group) {
    const Slice::Kind kind = event.kind == EventKind::Gather     ? Slice::Kind::Gather
                             : event.kind == EventKind::Prefetch ? Slice::Kind::Prefetch
                             : event.kind == EventKind::GetterGather
                                 ? Slice::Kind::GetterGather
                                 : Slice::Kind::PersistentGather;
    const bool sync =
        event.kind == EventKind::GetterGather || event.kind == EventKind::PersistentGather;
    open_group(state, event, kind, sync);
    ++state.step.gathers;
  }
  RankState::Group& g = state.group;
  int64_t full = event.bytes > 0 ? event.bytes : 0;
  int64_t shard = full;
  if (known_param) {
    full = full_bytes_[p];
    shard = shard_bytes_[p];
    if (odd_[p] != 0) {
      accumulate(g.odd_shard_bytes, shard);
    }
    if (g.params.size() < g.params.capacity()) {
      g.params.push_back(p);
    }
  } else if (event.numel > 0) {
    shard = model::partition_numel<int64_t>(event.numel, world_size_) * (full / event.numel);
  }
  accumulate(g.shard_bytes, shard);
  accumulate(g.full_bytes, full);
  ++state.step.gathered_params;
  accumulate(state.step.gathered_bytes, full);
  if (options_.per_module && !g.sync) {
    if (g.slice_kind == Slice::Kind::Prefetch && known_param) {
      // Charged when the module it was prefetched for waits on it.
      accumulate(state.prefetch_pending[p], full);
    } else if (g.module < state.modules.size()) {
      accumulate(state.modules[g.module].gathered_bytes, full);
    }
  }
  add_live(state, known_param ? p : model::kNone, full, g.issue);
  return g.issue;
}

void Timeline::wait_for_param(RankState& state, const trace::Event& event) {
  const model::ParamIndex p = event.param_index;
  if (p >= full_bytes_.size()) {
    return;
  }
  const model::ModuleIndex m =
      event.module_index != trace::Event::kNoIndex ? event.module_index : state.current_module;
  stall_until(state, state.ready[p], m);
  if (options_.per_module && state.prefetch_pending[p] > 0 && m < state.modules.size()) {
    accumulate(state.modules[m].prefetched_bytes, state.prefetch_pending[p]);
    state.prefetch_pending[p] = 0;
  }
  // The next compute slice waited for this gather (once, however many of its params it waits on).
  if (recording_wanted()) {
    const RankState::RecordedSlice& gather = state.gather_slice[p];
    const bool seen =
        std::any_of(state.waited_slices.begin(), state.waited_slices.end(),
                    [&](const RankState::RecordedSlice& w) { return w.index == gather.index; });
    if (gather.index != RankState::kNoSlice && !seen) {
      state.waited_slices.push_back(gather);
    }
  }
}

Tick Timeline::compute(RankState& state, const trace::Event& event) {
  Tick& now = state.free[index_of(Stream::Compute)];
  const Tick dur = cost_.compute(event.module_index, event.phase);
  const Tick t = now;
  accumulate(now, dur);
  accumulate(state.step.compute_ns, dur);
  if (options_.per_module && event.module_index < state.modules.size()) {
    accumulate(state.modules[event.module_index].compute_ns, dur);
  }
  if (recording_wanted()) {
    const Slice slice{Slice::Kind::Compute,
                      Stream::Compute,
                      event.phase,
                      state.rank,
                      event.step,
                      t,
                      dur,
                      event.module_index,
                      0,
                      0,
                      0};
    const uint64_t to = record_slice(slice);
    for (const RankState::RecordedSlice& from : state.waited_slices) {
      for (RecordingSink* r : recorders_) {
        r->on_flow(from.index, from.slice, to, slice);
      }
    }
    state.waited_slices.clear();
  }
  return t;
}

// The module's gradients are reduced on the reduce-scatter stream; compute does not wait for it.
void Timeline::reduce_scatter(RankState& state, const trace::Event& event) {
  const model::ModuleIndex m = event.module_index;
  const int64_t bytes = m < rs_bytes_.size() ? rs_bytes_[m] : 0;
  const Tick dur = cost_.reduce_scatter(bytes, world_size_);
  if (dur <= 0) {
    return;
  }
  const Tick start =
      occupy(state, Stream::ReduceScatter, state.free[index_of(Stream::Compute)], dur);
  accumulate(state.step.reduce_scattered_bytes, bytes);
  if (recording_wanted()) {
    record_slice({Slice::Kind::ReduceScatter, Stream::ReduceScatter, event.phase, state.rank,
                  event.step, start, dur, m, 0, 0, bytes});
  }
}

void Timeline::release_param(RankState& state, const trace::Event& event) {
  const model::ParamIndex p = event.param_index;
  const bool known_param = p < full_bytes_.size();
  if (options_.per_module && known_param) {
    charge_unused_prefetch(state, p);
  }
  remove_live(state, known_param ? p : model::kNone,
              known_param ? full_bytes_[p] : std::max<int64_t>(0, event.bytes),
              state.free[index_of(Stream::Compute)]);
}

// The engine is destroyed: every gathered parameter is freed.
void Timeline::restart(RankState& state) {
  std::fill(state.resident.begin(), state.resident.end(), uint8_t{0});
  state.live = 0;
  if (recording_wanted()) {
    record_live({state.rank, state.free[index_of(Stream::Compute)], 0});
  }
}

void Timeline::charge_unused_prefetch(RankState& state, model::ParamIndex p) {
  const model::ModuleIndex owner = scenario_.params[p].owner;
  if (state.prefetch_pending[p] > 0 && owner < state.modules.size()) {
    accumulate(state.modules[owner].prefetched_bytes, state.prefetch_pending[p]);
  }
  state.prefetch_pending[p] = 0;
}

void Timeline::record_landmarks(RankState& state, const trace::Event& event, Tick t) {
  using trace::EventKind;
  using trace::Phase;
  if (event.kind == EventKind::PassStart) {
    ++state.passes;
  }
  const Tick now = state.free[index_of(Stream::Compute)];
  Landmark mark;
  mark.phase = event.phase;
  mark.rank = state.rank;
  mark.engine = event.engine;
  mark.step = event.step;
  mark.micro_step = event.micro_step;
  mark.pass = state.passes - 1;
  mark.trace_step = event.trace_step;
  mark.module = event.module_index;
  mark.start_ns = t;
  mark.end_ns = t;

  const bool training =
      event.phase == Phase::Fwd || event.phase == Phase::Bwd || event.phase == Phase::Recompute;
  const bool in_pass = state.passes > 0 && (training || event.phase == Phase::Eval);
  const auto extend = [&](RankState::Span& span, bool belongs, std::array<int32_t, 3> key,
                          Landmark::Kind kind) {
    if (!belongs) {
      return;
    }
    if (span.open && span.key != key) {
      record_landmark(span.mark);
      span.open = false;
    }
    if (!span.open) {
      span.open = true;
      span.key = key;
      span.mark = mark;
      span.mark.kind = kind;
    }
    span.mark.end_ns = std::max(span.mark.end_ns, now);
  };
  extend(state.spans[0], training, {event.engine, event.step, event.micro_step},
         Landmark::Kind::MicroStep);
  extend(state.spans[1], in_pass, {state.passes, 0, 0}, Landmark::Kind::Pass);
  extend(state.spans[2], event.phase != Phase::None,
         {static_cast<int32_t>(event.phase), state.passes, 0}, Landmark::Kind::Phase);

  std::optional<Landmark::Kind> point;
  switch (event.kind) {
  case EventKind::OptimizerStep:
    point = Landmark::Kind::OptimizerStep;
    mark.start_ns = mark.end_ns = now;  // after the drain: when engine.step() runs
    break;
  case EventKind::TraceInvalidate:
    point = Landmark::Kind::TraceInvalidation;
    break;
  case EventKind::Mismatch:
  case EventKind::Error:
    point = Landmark::Kind::Failure;
    break;
  case EventKind::Restart:
    point = Landmark::Kind::Restart;
    break;
  case EventKind::CheckpointSave:
    point = Landmark::Kind::CheckpointSave;
    break;
  case EventKind::CheckpointLoad:
    point = Landmark::Kind::CheckpointLoad;
    break;
  default:
    break;
  }
  if (point) {
    mark.kind = *point;
    record_landmark(mark);
  }
}

void Timeline::close_spans(RankState& state) {
  for (RankState::Span& span : state.spans) {
    if (span.open) {
      record_landmark(span.mark);
      span.open = false;
    }
  }
}

void Timeline::finish() {
  if (finished_) {
    return;
  }
  finished_ = true;
  for (const std::unique_ptr<RankState>& state : ranks_) {
    if (!state) {
      continue;
    }
    flush_group(*state);
    if (state->in_step) {
      drain(*state, model::kNone);
    }
    end_step(*state);
    if (recording_wanted()) {
      close_spans(*state);
      LivePeak peak;
      peak.t_ns = state->peak_t;
      peak.live_bytes = state->peak_live;
      for (model::ParamIndex p = 0; p < state->peak_resident.size(); ++p) {
        if (state->peak_resident[p] != 0) {
          peak.params.push_back(p);
        }
      }
      for (RecordingSink* r : recorders_) {
        r->on_peak(state->rank, peak);
      }
    }
    if (options_.per_module) {
      for (model::ParamIndex p = 0; p < state->prefetch_pending.size(); ++p) {
        charge_unused_prefetch(*state, p);
      }
    }
    summary_.end_ns = std::max(summary_.end_ns, state->free[index_of(Stream::Compute)]);
    summary_.overflowed = overflowed_;
    summary_.exposed_comm_ns = std::max(summary_.exposed_comm_ns, state->run_exposed);
    if (options_.per_module) {
      summary_.ranks.push_back(state->rank);
      summary_.modules.push_back(state->modules);
    }
  }
  // Steps were appended as each rank moved on; report them by (step, rank).
  std::stable_sort(summary_.steps.begin(), summary_.steps.end(), step_order);
}

void Recording::on_gather_params(std::span<const model::ParamIndex> params) {
  gather_params_begin_ = static_cast<uint32_t>(slice_params.size());
  slice_params.insert(slice_params.end(), params.begin(), params.end());
}

void Recording::on_slice(const Slice& slice) {
  slices.push_back(slice);
  if (slice.kind != Slice::Kind::Compute && slice.kind != Slice::Kind::ReduceScatter) {
    slices.back().params_begin = gather_params_begin_;
  }
}

void Recording::on_flow(uint64_t from_index, const Slice& /*from*/, uint64_t to_index,
                        const Slice& /*to*/) {
  flows.push_back({static_cast<uint32_t>(from_index), static_cast<uint32_t>(to_index)});
}

void Recording::on_peak(int32_t rank, const LivePeak& peak) {
  if (peaks.size() <= static_cast<size_t>(rank)) {
    peaks.resize(static_cast<size_t>(rank) + 1);
  }
  peaks[static_cast<size_t>(rank)] = peak;
}

std::string format_summary_json(const TimelineSummary& summary, const model::Scenario& scenario) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"end_ns\":{},\"exposed_comm_ns\":{},\"peak_live_bytes\":{},\"steps\":[",
                 summary.end_ns, summary.exposed_comm_ns, summary.peak_live_bytes);
  for (size_t i = 0; i < summary.steps.size(); ++i) {
    const StepSummary& s = summary.steps[i];
    fmt::format_to(it,
                   "{}{{\"step\":{},\"rank\":{},\"start_ns\":{},\"step_ns\":{},\"compute_ns\":{},"
                   "\"exposed_comm_ns\":{},\"gathers\":{},\"gathered_params\":{},"
                   "\"gathered_bytes\":{},\"reduce_scattered_bytes\":{},\"peak_live_bytes\":{},"
                   "\"optimizer_step\":{}}}",
                   i == 0 ? "" : ",", s.step, s.rank, s.start_ns, s.step_ns, s.compute_ns,
                   s.exposed_comm_ns, s.gathers, s.gathered_params, s.gathered_bytes,
                   s.reduce_scattered_bytes, s.peak_live_bytes, s.optimizer_step);
  }
  fmt::format_to(it, "],\"modules\":[");
  bool first = true;
  for (size_t r = 0; r < summary.modules.size(); ++r) {
    for (size_t m = 0; m < summary.modules[r].size(); ++m) {
      const ModuleSummary& s = summary.modules[r][m];
      if (s.fetches == 0 && s.compute_ns == 0) {
        continue;
      }
      fmt::format_to(it, "{}{{\"rank\":{},\"module\":", first ? "" : ",", summary.ranks[r]);
      detail::append_json_string(out, scenario.modules[m].qualified_name);
      fmt::format_to(it,
                     ",\"fetches\":{},\"compute_ns\":{},\"exposed_comm_ns\":{},"
                     "\"gathered_bytes\":{},\"prefetched_bytes\":{}}}",
                     s.fetches, s.compute_ns, s.exposed_comm_ns, s.gathered_bytes,
                     s.prefetched_bytes);
      first = false;
    }
  }
  fmt::format_to(it, "]}}");
  return fmt::to_string(out);
}

}  // namespace zfetch::sim
