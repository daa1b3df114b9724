// Tests of the key=value event text: exact rendering, parse errors and round trips.
#include "trace/text_format.h"

#include <doctest/doctest.h>

#include "tests/trace/trace_test_util.h"

namespace zfetch::trace {
TEST_SUITE("trace") {
  using testing::OwnedEvent;
  using testing::sample_events;

  namespace {

  std::string parse_error(std::string_view line) {
    std::string scratch;
    std::string error;
    CHECK_FALSE(parse_event(line, scratch, error).has_value());
    return error;
  }

  }  // namespace

  TEST_CASE("text_format: the fixed field order, root as <root>") {
    Event e;
    e.seq = 7;
    e.t_ns = 1200;
    e.engine = 1;
    e.micro_step = 1;
    e.phase = Phase::Recompute;
    e.kind = EventKind::Fetch;
    e.trace_step = 6;
    e.module_id = 5;
    e.module = "adapter";
    CHECK(format_event(e) ==
          "seq=7 t_ns=1200 rank=0 engine=1 step=0 micro_step=1 phase=recompute kind=fetch "
          "trace_step=6 module=adapter module_id=5");
    e.module = "";
    e.module_id = 0;
    e.trace_step = -1;
    e.param_id = 2;
    e.param = "adapter.adapter_A.weight";
    e.status = Status::NotAvailable;
    e.numel = 16;
    e.bytes = 64;
    e.group = 0;
    CHECK(format_event(e) ==
          "seq=7 t_ns=1200 rank=0 engine=1 step=0 micro_step=1 phase=recompute kind=fetch "
          "module=<root> module_id=0 param=adapter.adapter_A.weight param_id=2 status=NA numel=16 "
          "bytes=64 group=0");
  }

  TEST_CASE("text_format: names with spaces or quotes are quoted") {
    Event e;
    e.module_id = 1;
    e.module = "odd \"name\"";
    CHECK(format_event(e) ==
          "seq=0 t_ns=0 rank=0 engine=0 step=0 micro_step=0 phase=none kind=pass_start "
          "module=\"odd \\\"name\\\"\" module_id=1");
  }

  TEST_CASE("text_format: every sample event round-trips") {
    for (const Event& e : sample_events()) {
      const std::string text = format_event(e);
      CAPTURE(text);
      std::string scratch;
      std::string error;
      const auto parsed = parse_event(text, scratch, error);
      REQUIRE(parsed.has_value());
      CHECK(OwnedEvent(*parsed) == OwnedEvent(e));
      CHECK(format_event(*parsed) == text);
    }
  }

  TEST_CASE("text_format: fields in any order, tabs between them") {
    std::string scratch;
    std::string error;
    const auto parsed = parse_event(
        "kind=release\tphase=bwd seq=3 t_ns=9 rank=1 engine=0 step=2 micro_step=0 param=w "
        "param_id=4",
        scratch, error);
    REQUIRE(parsed.has_value());
    CHECK(parsed->kind == EventKind::Release);
    CHECK(parsed->param == "w");
    CHECK(parsed->param_id == 4);
  }

  TEST_CASE("text_format: parse errors") {
    const std::string base = "seq=1 t_ns=0 rank=0 engine=0 step=0 micro_step=0 phase=fwd ";
    CHECK(parse_error(base + "kind=fetch modul=x") ==
          "unknown key 'modul'; did you mean 'module'?");
    CHECK(parse_error(base + "kind=fetc") == "unknown kind 'fetc'");
    CHECK(parse_error(base + "kind=fetch status=XX") == "unknown status 'XX'");
    CHECK(parse_error("seq=1 t_ns=0 rank=0 engine=0 step=0 micro_step=0 phase=up kind=fetch") ==
          "unknown phase 'up'");
    CHECK(parse_error(base) == "missing key 'kind'");
    CHECK(parse_error(base + "kind=fetch seq=2") == "duplicate key 'seq'");
    CHECK(parse_error(base + "kind=fetch numel=1.5") == "expected integer for 'numel', got '1.5'");
    CHECK(parse_error(base + "kind=fetch numel=") == "expected integer for 'numel', got ''");
    CHECK(parse_error(base + "kind=fetch module=a") == "'module' and 'module_id' go together");
    CHECK(parse_error(base + "kind=fetch param_id=1") == "'param' and 'param_id' go together");
    CHECK(parse_error(base + "kind=fetch stray") == "expected key=value, got 'stray'");
    CHECK(parse_error(base + "kind=fetch module=\"abc") ==
          "unterminated quoted value for 'module'");
  }

}  // TEST_SUITE
}  // namespace zfetch::trace
