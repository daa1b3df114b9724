// A bound on the events of one run: the one counting sink that stops a simulation that asks for
// more work than its caller allows.
#pragma once

#include <cstdint>

#include "trace/event.h"
#include "trace/sink.h"

namespace zfetch::trace {

/// Thrown by BoundedSink out of the code that emits the events (sim::simulate()) when the bound
/// is passed; whoever installed the sink catches it.
struct EventBoundExceeded {
  uint64_t max_events;
};

/// Passes events on to `next`, counting them; the event after the first `max_events` throws
/// EventBoundExceeded instead of passing on. Throwing stops the emitter at once, wherever it is
/// (a run with `repeat` counts in the millions need not return to a loop that checks a flag).
class BoundedSink final : public EventSink {
 public:
  BoundedSink(uint64_t max_events, EventSink& next) : max_events_(max_events), next_(next) {}

  void on_event(const Event& event) override {
    if (++events_ > max_events_) {
      throw EventBoundExceeded{max_events_};
    }
    next_.on_event(event);
  }

  /// Events counted so far (the one that passed the bound included).
  [[nodiscard]] uint64_t events() const { return events_; }

 private:
  uint64_t max_events_;
  uint64_t events_ = 0;
  EventSink& next_;
};

}  // namespace zfetch::trace
