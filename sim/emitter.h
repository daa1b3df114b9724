// Builds trace events from the simulation context and hands them to the sink.
#pragma once

#include <cstdint>

#include "model/scenario.h"
#include "sim/simulator.h"
#include "sim/state.h"
#include "trace/event.h"
#include "trace/names.h"
#include "trace/sink.h"

namespace zfetch::sim {

/// Where the simulation is: stamped on every event.
struct Context {
  int32_t rank = 0;
  int32_t engine = 0;
  int32_t step = 0;        ///< optimizer step over the whole schedule
  int32_t micro_step = 0;  ///< micro-step within the engine's training
  trace::Phase phase = trace::Phase::None;

  /// Copies where the simulation is onto `out`: an event, or a failure that stops the run.
  template <typename Stamped>
  void stamp(Stamped& out) const {
    out.rank = rank;
    out.engine = engine;
    out.step = step;
    out.micro_step = micro_step;
    out.phase = phase;
  }
};

/// Emits events; holds nothing per event (names are views into the scenario).
class Emitter {
 public:
  /// `first_seq`: events of one trace are numbered across ranks, so a later rank continues
  /// where the previous one stopped.
  Emitter(const model::Scenario& scenario, const ParamState& params, const ModuleState& modules,
          trace::EventSink& sink, uint64_t first_seq)
      : scenario_(scenario), params_(params), modules_(modules), sink_(sink), seq_(first_seq) {}

  Context context;
  RunStats stats;

  /// The seq the next event gets.
  [[nodiscard]] uint64_t next_seq() const { return seq_; }
  /// Continues the numbering of another engine of the same process.
  void set_next_seq(uint64_t seq) { seq_ = seq; }

  void emit(trace::EventKind kind, ModuleIndex m = model::kNone, ParamIndex p = model::kNone,
            int32_t trace_step = -1, int64_t group = -1, Status status = Status::None) {
    trace::Event e = stamped(kind);
    e.trace_step = trace_step;
    if (m != model::kNone) {
      e.module_index = m;
      e.module_id = modules_.ds_id[m];
      // Every output names the root `<root>`, traces included (its named_modules() name is "").
      e.module = trace::display_module_name(scenario_.modules[m].qualified_name);
    }
    if (p != model::kNone) {
      e.param_index = p;
      e.param_id = params_.ds_id[p];
      e.param = scenario_.params[p].qualified_name;
      if (kind != trace::EventKind::QueuePop) {
        e.numel = params_.numel[p];
        e.bytes = params_.bytes[p];
      }
    }
    e.status = status;
    e.group = group;
    ++stats.events;
    sink_.on_event(e);
  }

  /// An event with an explicit element count (trace_complete: number of queue entries).
  void emit_count(trace::EventKind kind, int64_t numel) {
    trace::Event e = stamped(kind);
    e.numel = numel;
    ++stats.events;
    sink_.on_event(e);
  }

 private:
  // A new event of `kind` with the next seq and the context.
  trace::Event stamped(trace::EventKind kind) {
    trace::Event e;
    e.seq = seq_++;
    context.stamp(e);
    e.kind = kind;
    return e;
  }

  const model::Scenario& scenario_;
  const ParamState& params_;
  const ModuleState& modules_;
  trace::EventSink& sink_;
  uint64_t seq_;
};

}  // namespace zfetch::sim
