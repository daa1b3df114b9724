// The consumer side of the simulator's event stream.
#pragma once

#include "trace/event.h"

namespace zfetch::trace {

/// Receives events in simulation order. Implementations must not keep the views of an event
/// beyond the call unless they copy them.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_event(const Event& event) = 0;
};

/// Discards everything (runs without a trace).
class NullSink final : public EventSink {
 public:
  void on_event(const Event&) override {}
};

}  // namespace zfetch::trace
