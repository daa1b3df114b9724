// What the CLI shows people: human units, colour switches, the summary tables.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>

#include "sim/timeline/timeline.h"
#include "tests/timeline/timeline_test_util.h"
#include "tools/human_units.h"
#include "tools/summary_text.h"
#include "tools/terminal_colour.h"

namespace zfetch::tools {
namespace {

TEST_SUITE("tools") {
  TEST_CASE("human_units: the largest unit >= 1, 2 decimals rounded half up") {
    CHECK(human_duration(0) == "0 ns");
    CHECK(human_duration(999) == "999 ns");
    CHECK(human_duration(1'000) == "1.00 µs");
    CHECK(human_duration(4'072) == "4.07 µs");
    CHECK(human_duration(4'075) == "4.08 µs");       // half up
    CHECK(human_duration(999'995) == "1000.00 µs");  // rounds up within its unit
    CHECK(human_duration(556'497'118) == "556.50 ms");
    CHECK(human_duration(1'115'931'368) == "1.12 s");
    CHECK(human_duration(-4'072) == "-4.07 µs");
    CHECK(human_bytes(64) == "64 B");
    CHECK(human_bytes(4'096) == "4.10 kB");
    CHECK(human_bytes(1'310'720) == "1.31 MB");
    CHECK(human_bytes(13'231'464'448) == "13.23 GB");
    CHECK(human_bytes(INT64_MIN).starts_with("-9223372.04 TB"));
  }

  TEST_CASE("terminal_colour: ANSI only when enabled; NO_COLOR and pipes turn it off") {
    CHECK(paint("pass", Colour::Pass, false) == "pass");
    CHECK(paint("pass", Colour::Pass, true) == "\x1b[1;32mpass\x1b[0m");
    CHECK(paint("x", Colour::Failure, true) == "\x1b[1;31mx\x1b[0m");
    // The test's stdout is a pipe or a file under ctest: never a terminal.
    CHECK_FALSE(colour_wanted(stdout));
    setenv("NO_COLOR", "1", 1);
    CHECK_FALSE(colour_wanted(stdout));
    unsetenv("NO_COLOR");
  }

  TEST_CASE("summary_text: steps in human units; modules by exposed time, top N") {
    using sim::testing::Ev;
    using trace::EventKind;
    sim::testing::ScenarioBuilder b(4);
    const auto ma = b.module("a", 10);
    const auto mb = b.module("b", 10);
    const auto mc = b.module("c", 10);
    const auto pa = b.param(ma, "w", 1'024);
    const auto pb = b.param(mb, "w", 4'096);
    sim::AnalyticalCostModel cost(b.s, sim::testing::round_calibration());
    sim::testing::VectorSink out;
    sim::Timeline tl(b.s, cost, out, {.per_module = true, .record = false});
    // all-gather = 1 us + bytes * (W-1)/W / (1 B/ns): a waits 1'000 + 4'096 * 3/4 = 4'072 ns,
    // b waits 1'000 + 16'384 * 3/4 = 13'288 ns, c on nothing; 3 x 10 us of compute.
    const Ev events[] = {
        Ev(EventKind::Fetch).module(ma),
        Ev(EventKind::Gather).module(ma).param(pa).group(1),
        Ev(EventKind::Wait).module(ma).param(pa).group(1),
        Ev(EventKind::Compute).module(ma),
        Ev(EventKind::Fetch).module(mb),
        Ev(EventKind::Gather).module(mb).param(pb).group(2),
        Ev(EventKind::Wait).module(mb).param(pb).group(2),
        Ev(EventKind::Compute).module(mb),
        Ev(EventKind::Fetch).module(mc),
        Ev(EventKind::Compute).module(mc),
    };
    for (const Ev& e : events) {
      tl.on_event(e);
    }
    tl.finish();
    SummaryTextOptions options;
    options.per_module = true;
    options.module_rows = 2;
    CHECK(summary_text(tl.summary(), b.s, options) ==
          "# step  rank   step_time     compute exposed_comm gathers   gathered  peak_live\n"
          "     0     0    47.36 µs    30.00 µs     17.36 µs       2   20.48 kB   20.48 kB\n"
          "# end 47.36 µs, exposed communication 17.36 µs, peak live parameters 20.48 kB\n"
          "# rank 0 modules by exposed communication\n"
          "# exposed_comm     compute fetches   gathered prefetched  module\n"
          "      13.29 µs    10.00 µs       1   16.38 kB        0 B  b\n"
          "       4.07 µs    10.00 µs       1    4.10 kB        0 B  a\n"
          "# 1 more modules (--all lists them)\n");
    options.module_rows = 0;
    CHECK(summary_text(tl.summary(), b.s, options).ends_with("        0 B  c\n"));
  }
}

}  // namespace
}  // namespace zfetch::tools
