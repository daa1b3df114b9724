// Tests of the key=value event text: the exact rendering.
#include "trace/text_format.h"

#include <doctest/doctest.h>

#include "tests/trace/trace_test_util.h"

namespace zfetch::trace {
TEST_SUITE("trace") {
  TEST_CASE("text_format: the fixed field order, root as <root>") {
    Event e = testing::every_field_event();
    CHECK(format_event(e) ==
          "seq=7 t_ns=1500 rank=1 engine=1 step=0 micro_step=1 phase=recompute kind=gather "
          "trace_step=6 module=adapter module_id=5 param=adapter.adapter_A.weight param_id=3 "
          "status=IF numel=16 bytes=64 group=2");
    e.module = "";
    e.module_id = 0;
    e.trace_step = -1;
    e.status = Status::None;
    e.group = -1;
    CHECK(format_event(e) ==
          "seq=7 t_ns=1500 rank=1 engine=1 step=0 micro_step=1 phase=recompute kind=gather "
          "module=<root> module_id=0 param=adapter.adapter_A.weight param_id=3 numel=16 "
          "bytes=64");
    e.module = "<root>";  // as the simulator and the trace reader name it
    CHECK(format_event(e).find(" module=<root> module_id=0 ") != std::string::npos);
  }

  TEST_CASE("text_format: names with spaces or quotes are quoted") {
    Event e;
    e.module_id = 1;
    e.module = "odd \"name\"";
    CHECK(format_event(e) ==
          "seq=0 t_ns=0 rank=0 engine=0 step=0 micro_step=0 phase=none kind=pass_start "
          "module=\"odd \\\"name\\\"\" module_id=1");
  }

}  // TEST_SUITE
}  // namespace zfetch::trace
