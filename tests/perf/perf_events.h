// A realistic mix of trace events for the writer and reader perftests.
#pragma once

#include <string>
#include <vector>

#include "trace/event.h"

namespace zfetch::perf {

/// Names that the events view; they must outlive the events.
struct EventNames {
  std::vector<std::string> modules;
  std::vector<std::string> params;
};

/// `count` events shaped like a simulator's fetch loop: module hooks with ids and names, and
/// gather/wait/release of params with status, numel and bytes; seq and t_ns increase.
inline std::vector<trace::Event> make_events(size_t count, EventNames& names) {
  using trace::EventKind;
  constexpr size_t kLayers = 48;
  for (size_t i = 0; i < kLayers; ++i) {
    names.modules.push_back("model.layers." + std::to_string(i) + ".self_attn.q_proj");
    names.params.push_back(names.modules.back() + ".weight");
  }
  static constexpr EventKind kKinds[] = {EventKind::ModulePre,  EventKind::Fetch,
                                         EventKind::Gather,     EventKind::Wait,
                                         EventKind::ModulePost, EventKind::Release};
  std::vector<trace::Event> events(count);
  for (size_t i = 0; i < count; ++i) {
    trace::Event& e = events[i];
    const size_t layer = (i / 6) % kLayers;
    e.seq = i;
    e.t_ns = static_cast<int64_t>(i) * 1'250;
    e.rank = static_cast<int32_t>(i % 2);
    e.step = static_cast<int32_t>(i / 100'000);
    e.micro_step = static_cast<int32_t>((i / 10'000) % 4);
    e.phase = trace::Phase::Fwd;
    e.kind = kKinds[i % 6];
    e.trace_step = static_cast<int32_t>(i % 1'000);
    e.module_id = static_cast<int64_t>(layer + 1);
    e.module = names.modules[layer];
    if (e.kind == EventKind::Gather || e.kind == EventKind::Wait || e.kind == EventKind::Release) {
      e.param_id = static_cast<int64_t>(layer);
      e.param = names.params[layer];
      e.status = trace::Status::Inflight;
      e.numel = 4096 * 4096;
      e.bytes = 2 * e.numel;
      e.group = static_cast<int64_t>(i / 6);
    }
  }
  return events;
}

}  // namespace zfetch::perf
