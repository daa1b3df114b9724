// Oracle 4's residency replay on hand-written event streams.
#include "sim/explore/invariants.h"

#include <doctest/doctest.h>

#include "model/load.h"

namespace zfetch::sim {
namespace {

using trace::Event;
using trace::EventKind;
using trace::Phase;
using trace::Status;

// Root `model` with child `a` owning `a.w` (param 0) and `a.v` (param 1).
model::Scenario two_params() {
  model::LoadResult loaded = model::parse_scenario_text("input", R"(name: t
model:
  name: model
  children:
    - name: a
      params: {w: [4], v: [4]}
schedule: [{train: 1}]
)");
  REQUIRE(loaded.scenario.has_value());
  return std::move(*loaded.scenario);
}

Event event(EventKind kind, uint32_t module, uint32_t param, int64_t group = -1,
            Status status = Status::None) {
  Event e;
  e.kind = kind;
  e.phase = Phase::Fwd;
  e.module_index = module;
  e.param_index = param;
  e.group = group;
  e.status = status;
  return e;
}

constexpr uint32_t kNo = Event::kNoIndex;

TEST_SUITE("explore") {
  TEST_CASE("invariants: a gather of a param already in flight is a violation") {
    const model::Scenario s = two_params();
    InvariantChecker check(s);
    check.on_event(event(EventKind::EngineInit, 0, kNo));
    check.on_event(event(EventKind::Gather, kNo, 0, 1));
    CHECK(check.violation().empty());
    check.on_event(event(EventKind::Prefetch, kNo, 0, 2));
    CHECK(check.violation().find("a gather started on a parameter that is not NOT_AVAILABLE") !=
          std::string::npos);
  }

  TEST_CASE("invariants: computing before the wait is a violation, after it is not") {
    const model::Scenario s = two_params();
    InvariantChecker early(s);
    early.on_event(event(EventKind::Gather, kNo, 0, 1));
    early.on_event(event(EventKind::Gather, kNo, 1, 1));
    early.on_event(event(EventKind::Compute, 1, kNo));
    CHECK(early.violation().find("computes with 'a.w' while it is INFLIGHT") != std::string::npos);

    // One wait completes the whole coalesced gather (both params of group 1).
    InvariantChecker waited(s);
    waited.on_event(event(EventKind::Gather, kNo, 0, 1));
    waited.on_event(event(EventKind::Gather, kNo, 1, 1));
    waited.on_event(event(EventKind::Wait, kNo, 0, 1));
    waited.on_event(event(EventKind::Compute, 1, kNo));
    waited.on_event(event(EventKind::Access, 1, 1, -1, Status::Available));
    CHECK(waited.violation().empty());
  }

  TEST_CASE("invariants: an access must report the residency the events imply") {
    const model::Scenario s = two_params();
    InvariantChecker check(s);
    check.on_event(event(EventKind::Gather, kNo, 0, 1));
    check.on_event(event(EventKind::Wait, kNo, 0, 1));
    check.on_event(event(EventKind::Release, kNo, 0));
    check.on_event(event(EventKind::Access, 0, 0, -1, Status::Available));
    CHECK(check.violation().find("reports a residency") != std::string::npos);
  }

  TEST_CASE("invariants: no release while the module holding the param is in its forward") {
    const model::Scenario s = two_params();
    InvariantChecker check(s);
    check.on_event(event(EventKind::ModulePre, 1, kNo));
    check.on_event(event(EventKind::Release, kNo, 0));  // before a's fetch: not yet a consumer
    CHECK(check.violation().empty());
    check.on_event(event(EventKind::Fetch, 1, kNo));
    check.on_event(event(EventKind::Gather, kNo, 0, 1));
    check.on_event(event(EventKind::Wait, kNo, 0, 1));
    Event release = event(EventKind::Release, 0, 0);  // released by another module (the root)
    check.on_event(release);
    CHECK(check.violation().find("released while 'a', which uses it, is still in its forward") !=
          std::string::npos);
  }
}

}  // namespace
}  // namespace zfetch::sim
