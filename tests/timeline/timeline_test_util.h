// Helpers for the timeline tests: a scenario builder, an event builder, a recording sink.
#pragma once

#include <string>
#include <vector>

#include "model/scenario.h"
#include "sim/timeline/calibration.h"
#include "trace/event.h"
#include "trace/sink.h"

namespace zfetch::sim::testing {

/// Calibration with round numbers so that every time is a short closed form:
///   all-gather / reduce-scatter: alpha = 1'000 ns, busbw = 1 GB/s = 1 B/ns
///   h2d: 0.5 GB/s = 2 ns/B; compute: 1e12 flop/s
inline Calibration round_calibration() {
  Calibration c;
  c.machine = "test";
  c.allgather = {1'000, 1'000'000'000};
  c.reduce_scatter = {1'000, 1'000'000'000};
  c.h2d_bytes_per_s = 500'000'000;
  c.flops_per_s = 1'000'000'000'000;
  return c;
}

/// Builds a scenario: a root module (index 0) and children with fp32 params.
struct ScenarioBuilder {
  model::Scenario s;

  explicit ScenarioBuilder(int64_t world_size) {
    s.world_size = world_size;
    s.name = "test";
    model::ModuleSpec root;
    root.name = "model";
    root.compute_us = 0;
    s.modules.push_back(root);
  }
  model::ModuleIndex module(const std::string& name, int64_t compute_us) {
    model::ModuleSpec m;
    m.name = name;
    m.qualified_name = name;
    m.parent = 0;
    m.compute_us = compute_us;
    s.modules.push_back(m);
    const auto index = static_cast<model::ModuleIndex>(s.modules.size() - 1);
    s.modules[0].children.push_back(index);
    return index;
  }
  model::ParamIndex param(model::ModuleIndex owner, const std::string& name, int64_t numel,
                          bool frozen = false) {
    model::ParamSpec p;
    p.name = name;
    p.qualified_name = s.modules[owner].qualified_name + "." + name;
    p.owner = owner;
    p.numel = numel;
    p.shape = {numel};
    p.frozen = frozen;
    s.params.push_back(p);
    const auto index = static_cast<model::ParamIndex>(s.params.size() - 1);
    s.modules[owner].params.push_back(index);
    return index;
  }
  /// A module with one weight "w" of `numel` elements.
  struct Weighted {
    model::ModuleIndex module;
    model::ParamIndex weight;
  };
  Weighted weighted_module(const std::string& name, int64_t compute_us, int64_t numel) {
    const model::ModuleIndex m = module(name, compute_us);
    return {m, param(m, "w", numel)};
  }
};

/// Builds events field by field: ev(kind).module(m).param(p).group(g)...
struct Ev {
  trace::Event e;
  explicit Ev(trace::EventKind kind, trace::Phase phase = trace::Phase::Fwd) {
    e.kind = kind;
    e.phase = phase;
  }
  Ev& module(uint32_t m) {
    e.module_index = m;
    e.module_id = m;
    return *this;
  }
  Ev& param(uint32_t p) {
    e.param_index = p;
    e.param_id = p;
    return *this;
  }
  Ev& group(int64_t g) {
    e.group = g;
    return *this;
  }
  Ev& step(int32_t s) {
    e.step = s;
    return *this;
  }
  Ev& rank(int32_t r) {
    e.rank = r;
    return *this;
  }
  operator const trace::Event&() const { return e; }  // NOLINT: builder convenience
};

/// Keeps a copy of every event it receives (the tests use no names, so views stay valid).
class VectorSink final : public trace::EventSink {
 public:
  void on_event(const trace::Event& event) override { events.push_back(event); }
  std::vector<trace::Event> events;
};

}  // namespace zfetch::sim::testing
