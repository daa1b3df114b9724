// Simulated time: an EventSink that stamps t_ns on the simulator's events with a stream model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/scenario.h"
#include "sim/timeline/cost_model.h"
#include "sim/timeline/tick.h"
#include "trace/event.h"
#include "trace/sink.h"

namespace zfetch::sim {

/// The GPU streams of one rank. Each runs one operation at a time, in issue order.
enum class Stream : uint8_t {
  Compute,        ///< module computation; "now" of a rank is when this stream is free
  Comm,           ///< all-gathers of parameters (fetch, prefetch, getter, persistent)
  H2d,            ///< host-to-device copies of offloaded partitions, before their gather
  ReduceScatter,  ///< reduce-scatter of gradients after each module's backward ("rs")
};
inline constexpr int kStreamCount = 4;
std::string_view format_as(Stream stream);

/// Totals of one optimizer step (all events whose `step` field is that step) on one rank.
/// Invariant: step_ns == compute_ns + exposed_comm_ns (the compute stream is never idle
/// otherwise: the host is modelled as always ahead of it).
struct StepSummary {
  int32_t rank = 0;
  int32_t step = 0;
  Tick start_ns = 0;         ///< compute-stream time at the step's first event
  Tick step_ns = 0;          ///< end - start; the end waits for every stream to drain
  Tick compute_ns = 0;       ///< sum of Compute durations
  Tick exposed_comm_ns = 0;  ///< compute-stream stalls waiting on comm, h2d or reduce-scatter
  int64_t gathers = 0;       ///< collectives issued (coalesced fetch/prefetch, getter, persistent)
  int64_t gathered_params = 0;
  int64_t gathered_bytes = 0;          ///< full (unpadded) bytes of the gathered params
  int64_t reduce_scattered_bytes = 0;  ///< padded gradient bytes
  int64_t peak_live_bytes = 0;         ///< max of full bytes of resident params during the step
  bool optimizer_step = false;         ///< the step ended with an OptimizerStep event
};

/// The order of TimelineSummary::steps: by step, then rank.
inline bool step_order(const StepSummary& a, const StepSummary& b) {
  return a.step != b.step ? a.step < b.step : a.rank < b.rank;
}

/// Per-module totals over the whole run on one rank (TimelineOptions::per_module).
struct ModuleSummary {
  int64_t fetches = 0;
  Tick compute_ns = 0;
  Tick exposed_comm_ns = 0;    ///< stalls at this module's waits and getter gathers
  int64_t gathered_bytes = 0;  ///< demand gathers issued by this module's fetches
  /// Prefetches made for this module: charged to the module whose fetch waits on the
  /// prefetched parameter (not to the module whose fetch issued the prefetch); a prefetch
  /// released before any wait is charged to the parameter's owner.
  int64_t prefetched_bytes = 0;
};

struct TimelineSummary {
  std::vector<StepSummary> steps;  ///< step_order; empty with TimelineOptions::steps
  /// [i] is the per-module table of ranks[i]; empty unless TimelineOptions::per_module.
  std::vector<int32_t> ranks;
  std::vector<std::vector<ModuleSummary>> modules;
  Tick end_ns = 0;              ///< latest end over ranks
  Tick exposed_comm_ns = 0;     ///< max over ranks of the run's exposed communication
  int64_t peak_live_bytes = 0;  ///< max over ranks and steps
  /// A time or byte sum of the run did not fit in 64 bits (it saturated): the figures are
  /// unreliable, and the tools report the run as too large to time.
  bool overflowed = false;
};

/// What the tools say about a run whose TimelineSummary::overflowed is set.
inline constexpr std::string_view kTimelineOverflowMessage =
    "the simulated times or byte counts exceed 64 bits (2^63 ns is 292 years): the "
    "calibration, compute_us or parameter sizes are too large to time";

/// What the Chrome trace shows: what a RecordingSink receives.
struct Slice {
  enum class Kind : uint8_t {
    Compute,
    Gather,
    Prefetch,
    GetterGather,
    PersistentGather,
    H2d,
    ReduceScatter
  };
  Kind kind = Kind::Compute;
  Stream stream = Stream::Compute;
  trace::Phase phase = trace::Phase::None;
  int32_t rank = 0;
  int32_t step = 0;
  Tick start_ns = 0;
  Tick dur_ns = 0;
  model::ModuleIndex module =
      model::kNone;           ///< Compute, ReduceScatter; the fetching module otherwise
  uint32_t params_begin = 0;  ///< range of Recording::slice_params
  uint32_t params_count = 0;
  int64_t bytes = 0;
  Tick issue_ns = 0;  ///< gathers and h2d copies: when the collective was issued (<= start_ns)
};
struct Flow {
  uint32_t from_slice = 0;  ///< a gather
  uint32_t to_slice = 0;    ///< the compute slice that waited for it
};
struct CounterSample {
  int32_t rank = 0;
  Tick t_ns = 0;
  int64_t live_bytes = 0;
};
/// A point or a span of the training loop on one rank, for people to find their way in the
/// timeline. Spans end at the compute-stream time after their last event.
struct Landmark {
  enum class Kind : uint8_t {
    Step,               ///< span: one optimizer step (the `step` field)
    MicroStep,          ///< span: one micro-step's training events (fwd, bwd, recompute)
    Pass,               ///< span: from a PassStart to the pass's last event
    Phase,              ///< span: consecutive events of one phase within one pass
    OptimizerStep,      ///< point: engine.step() (after its stream drain)
    TraceInvalidation,  ///< point: the coordinator invalidated its trace
    Failure,            ///< point: the fetch-queue mismatch or error that ends the run
    Restart,            ///< point: the engine was destroyed
    CheckpointSave,     ///< point
    CheckpointLoad,     ///< point
  };
  Kind kind = Kind::Step;
  trace::Phase phase = trace::Phase::None;  ///< Phase; Pass: fwd or eval
  int32_t rank = 0;
  int32_t engine = 0;
  int32_t step = 0;
  int32_t micro_step = 0;
  int32_t pass = 0;  ///< passes counted from 0 on the rank
  int32_t trace_step = -1;
  model::ModuleIndex module = model::kNone;  ///< TraceInvalidation, Failure
  Tick start_ns = 0;
  Tick end_ns = 0;  ///< == start_ns for points
};
/// Per rank: what was gathered when live parameter memory first reached its peak.
struct LivePeak {
  Tick t_ns = 0;
  int64_t live_bytes = 0;
  std::vector<model::ParamIndex> params;  ///< resident params at that moment, in index order
};

/// Receives what the Chrome trace shows as the timeline produces it, so that a consumer can
/// write it out without the whole run in memory (sim/export/chrome_trace.h) or keep it
/// (Recording). Slices are numbered from 0 in the order on_slice sees them.
class RecordingSink {
 public:
  virtual ~RecordingSink() = default;
  /// The params of the gather slices that follow (a coalesced gather's h2d copy and its
  /// all-gather), until the next call. `params` is valid only during the call.
  virtual void on_gather_params(std::span<const model::ParamIndex> params) = 0;
  virtual void on_slice(const Slice& slice) = 0;
  /// The compute slice `to` waited for the gather `from` (both seen by on_slice before).
  virtual void on_flow(uint64_t from_index, const Slice& from, uint64_t to_index,
                       const Slice& to) = 0;
  virtual void on_live_bytes(const CounterSample& sample) = 0;
  virtual void on_landmark(const Landmark& landmark) = 0;
  /// At finish(), once per rank in rank order.
  virtual void on_peak(int32_t rank, const LivePeak& peak) = 0;
};

/// The whole recording in memory (TimelineOptions::record), for what needs random access to it:
/// the HTML report and the replay schedule. It grows with the run; the Chrome trace does not need
/// it (ChromeTraceWriter streams).
struct Recording final : RecordingSink {
  std::vector<Slice> slices;  ///< in issue order
  std::vector<model::ParamIndex> slice_params;
  std::vector<Flow> flows;
  std::vector<CounterSample> live_bytes;  ///< one sample per change
  std::vector<Landmark> landmarks;        ///< points in event order, spans as they close
  using Peak = LivePeak;
  std::vector<Peak> peaks;  ///< index = rank; empty entries for ranks not simulated

  void on_gather_params(std::span<const model::ParamIndex> params) override;
  void on_slice(const Slice& slice) override;
  void on_flow(uint64_t from_index, const Slice& from, uint64_t to_index, const Slice& to) override;
  void on_live_bytes(const CounterSample& sample) override { live_bytes.push_back(sample); }
  void on_landmark(const Landmark& landmark) override { landmarks.push_back(landmark); }
  void on_peak(int32_t rank, const LivePeak& peak) override;

 private:
  uint32_t gather_params_begin_ = 0;
};

/// Receives each step's summary as the step closes (in the order ranks move on, not sorted).
class StepSink {
 public:
  virtual ~StepSink() = default;
  virtual void on_step(const StepSummary& step) = 0;
};

struct TimelineOptions {
  bool per_module = false;  ///< keep per-module totals
  bool record = false;      ///< keep the whole Recording in memory (recording())
  /// Also (or instead) send the recording here as it is produced; must outlive the timeline.
  RecordingSink* recorder = nullptr;
  /// Send step summaries here instead of keeping them in TimelineSummary::steps (which then
  /// stays empty; the run's totals are kept either way). Must outlive the timeline.
  StepSink* steps = nullptr;
};

/// A discrete-event model of each rank's GPU streams, run as a stage of the event pipeline:
/// it receives the simulator's events in order, assigns `t_ns`, updates the summaries, and
/// forwards the stamped event to `next`. Integer-ns clock; events at equal times keep their
/// arrival order (the simulator's order), so ties are broken deterministically.
///
/// Rules (docs/timeline.md): a coalesced gather (the Gather or Prefetch events sharing one
/// `group`) is issued at the compute stream's current time, copies offloaded shards on h2d
/// first, then runs on comm when comm is free; `Wait` stalls compute until that gather ends;
/// GetterGather and PersistentGather are synchronous; `Compute` advances compute;
/// BackwardPost issues a reduce-scatter of the module's trainable gradients on the reduce-scatter
/// stream (compute does not wait); OptimizerStep waits for every stream. Other events take the
/// compute time.
///
/// The per-event path allocates nothing (per-param arrays are sized from the scenario when a
/// rank is first seen) except what a recorder keeps: TimelineOptions::record keeps the whole
/// Recording; TimelineOptions::recorder and ::steps receive it as it is produced.
class Timeline final : public trace::EventSink {
 public:
  /// `scenario`, `cost` and `next` must outlive the timeline.
  Timeline(const model::Scenario& scenario, const CostModel& cost, trace::EventSink& next,
           TimelineOptions options = {});
  ~Timeline() override;
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  void on_event(const trace::Event& event) override;

  /// Ends the run: completes open gathers, drains every stream, closes the last step.
  /// Idempotent; summary() and recording() are complete after it.
  void finish();

  [[nodiscard]] const TimelineSummary& summary() const { return summary_; }
  [[nodiscard]] const Recording& recording() const { return recording_; }
  /// Slices given to the recorders so far (the index the next one gets).
  [[nodiscard]] uint64_t slices_recorded() const { return slices_recorded_; }

 private:
  struct RankState;
  RankState& rank_state(int32_t rank);
  [[nodiscard]] bool recording_wanted() const { return !recorders_.empty(); }
  // One event's effect on its rank's streams and totals; each returns the event's time.
  Tick apply(RankState& state, const trace::Event& event, bool joins_group);
  Tick add_to_group(RankState& state, const trace::Event& event, bool joins_group);
  void wait_for_param(RankState& state, const trace::Event& event);
  Tick compute(RankState& state, const trace::Event& event);
  void reduce_scatter(RankState& state, const trace::Event& event);
  void release_param(RankState& state, const trace::Event& event);
  void restart(RankState& state);
  // The coalesced gather and the stream clock.
  void flush_group(RankState& state);
  void open_group(RankState& state, const trace::Event& event, Slice::Kind kind, bool sync);
  void add_live(RankState& state, model::ParamIndex p, int64_t bytes, Tick t);
  void remove_live(RankState& state, model::ParamIndex p, int64_t bytes, Tick t);
  /// Runs `dur` on `stream` from `ready` or when the stream is free, whichever is later;
  /// returns the start (the stream is then busy until start + dur).
  Tick occupy(RankState& state, Stream stream, Tick ready, Tick dur);
  void stall_until(RankState& state, Tick t, model::ModuleIndex module);
  void begin_step(RankState& state, int32_t step);
  void end_step(RankState& state);
  void drain(RankState& state, model::ModuleIndex module);
  void charge_unused_prefetch(RankState& state, model::ParamIndex p);
  /// sum += amount, checked: an overflow saturates `sum` and sets overflowed_.
  void accumulate(int64_t& sum, int64_t amount) {
    overflowed_ = !add_exact(sum, amount) || overflowed_;
  }
  // What the recorders receive.
  void record_landmarks(RankState& state, const trace::Event& event, Tick t);
  void record_landmark(const Landmark& landmark);
  void record_live(const CounterSample& sample);
  void close_spans(RankState& state);
  uint64_t record_slice(const Slice& slice);

  const model::Scenario& scenario_;
  const CostModel& cost_;
  trace::EventSink& next_;
  TimelineOptions options_;
  int64_t world_size_;
  bool offload_;
  std::vector<int64_t> full_bytes_;   ///< per param: numel * dtype bytes
  std::vector<int64_t> shard_bytes_;  ///< per param: ceil(numel / W) * dtype bytes
  std::vector<uint8_t> odd_;          ///< per param: odd_param (rank slices not whole vectors)
  std::vector<int64_t> rs_bytes_;     ///< per module: padded bytes of its trainable gradients
  std::vector<std::unique_ptr<RankState>> ranks_;
  TimelineSummary summary_;
  Recording recording_;
  std::vector<RecordingSink*> recorders_;  ///< &recording_ (record) and options.recorder
  uint64_t slices_recorded_ = 0;
  bool finished_ = false;
  bool overflowed_ = false;  ///< see TimelineSummary::overflowed
};

/// The summary as one JSON object: {"steps":[...], "modules":[...], "end_ns":..., ...}; integers
/// only (ns and bytes), keys in a fixed order. (The text table is the CLI's: tools/summary_text.h.)
std::string format_summary_json(const TimelineSummary& summary, const model::Scenario& scenario);

}  // namespace zfetch::sim
