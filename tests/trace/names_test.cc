// Tests of the kind/phase/status name tables and their parsers.
#include "trace/names.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace zfetch::trace {
TEST_SUITE("trace") {
  TEST_CASE("names: every kind round-trips through its name") {
    for (int i = 0; i <= static_cast<int>(EventKind::Compute); ++i) {
      const auto kind = static_cast<EventKind>(i);
      CAPTURE(i);
      CHECK(parse_event_kind(format_as(kind)) == kind);
    }
    CHECK(format_as(EventKind::EngineInit) == "engine_init");
    CHECK(format_as(EventKind::RecomputeAttach) == "recompute_attach");
    CHECK(format_as(EventKind::EmptyPartitionCache) == "empty_partition_cache");
    CHECK(format_as(EventKind::Compute) == "compute");
    CHECK(fmt::format("{}", EventKind::QueuePop) == "queue_pop");
  }

  TEST_CASE("names: phases and statuses round-trip") {
    for (int i = 0; i <= static_cast<int>(Phase::Checkpoint); ++i) {
      CHECK(parse_phase(format_as(static_cast<Phase>(i))) == static_cast<Phase>(i));
    }
    CHECK(fmt::format("{} {}", Phase::Recompute, Phase::None) == "recompute none");
    CHECK(fmt::format("{} {} {}", Status::Available, Status::NotAvailable, Status::Inflight) ==
          "AV NA IF");
    CHECK(parse_status("IF") == Status::Inflight);
    CHECK_FALSE(parse_status("").has_value());  // Status::None has no name
    CHECK_FALSE(parse_event_kind("Fetch").has_value());
    CHECK_FALSE(parse_phase("forward").has_value());
  }
}  // TEST_SUITE
}  // namespace zfetch::trace
