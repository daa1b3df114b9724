// The event bound: events pass until the bound, the next one throws and does not pass.
#include "trace/bounded_sink.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace zfetch::trace {
namespace {

class StepRecorder final : public EventSink {
 public:
  void on_event(const Event& event) override { steps.push_back(event.step); }
  std::vector<int32_t> steps;
};

TEST_SUITE("trace") {
  TEST_CASE("bounded sink: passes max_events events on, throws at the next one") {
    StepRecorder next;
    BoundedSink bounded(3, next);
    Event event;
    for (int32_t step = 0; step < 3; ++step) {
      event.step = step;
      bounded.on_event(event);
    }
    CHECK(next.steps == std::vector<int32_t>{0, 1, 2});
    event.step = 3;
    bool thrown = false;
    try {
      bounded.on_event(event);
    } catch (const EventBoundExceeded& e) {
      thrown = true;
      CHECK(e.max_events == 3);
    }
    CHECK(thrown);
    CHECK(next.steps.size() == 3);  // the event past the bound never reached `next`
    CHECK(bounded.events() == 4);
  }

  TEST_CASE("bounded sink: a bound of 0 stops at the first event") {
    NullSink discard;
    BoundedSink bounded(0, discard);
    CHECK_THROWS_AS(bounded.on_event(Event{}), EventBoundExceeded);
  }
}

}  // namespace
}  // namespace zfetch::trace
