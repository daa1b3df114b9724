// Tests of order files: validation with located errors, and each directive on a small stream.
#include "trace/order_file.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "diag/render.h"

namespace zfetch::trace {
TEST_SUITE("trace") {
  namespace {

  Event event(EventKind kind, const char* module) {
    Event e;
    e.kind = kind;
    e.phase = Phase::Fwd;
    e.module = module;
    e.module_id = 1;
    return e;
  }

  // The first error of checking the stream fetch a, fetch b, release a, fetch c against `text`.
  std::string check(const std::string& text) {
    const OrderParseResult parsed = parse_order_file("o.order", text);
    if (!parsed.order) {
      return diag::render(parsed.diagnostics);
    }
    OrderChecker checker(*parsed.order, "t.jsonl");
    const std::vector<Event> events = {event(EventKind::Fetch, "a"), event(EventKind::Fetch, "b"),
                                       event(EventKind::Release, "a"),
                                       event(EventKind::Fetch, "c")};
    for (size_t i = 0; i < events.size(); ++i) {
      checker.on_event(events[i], i + 2);
    }
    const auto failure = checker.finish();
    return failure ? diag::render(*failure) : "";
  }

  }  // namespace

  TEST_CASE("order file: each directive passes and fails") {
    CHECK(check("CHECK: kind=fetch module=b\nCHECK: kind=fetch module=c\n") == "");
    CHECK(check("CHECK: kind=fetch module=c\nCHECK: kind=fetch module=b\n")
              .starts_with("o.order:2:8: error: CHECK: expected kind=fetch module=b not found"));
    CHECK(check("CHECK: kind=fetch module=a\nCHECK-NEXT: kind=fetch module=b\n") == "");
    CHECK(check("CHECK: kind=fetch module=a\nCHECK-NEXT: kind=release\n")
              .starts_with("o.order:2:13: error: CHECK-NEXT: expected kind=release on the event"));
    CHECK(
        check(
            "CHECK: kind=fetch module=a\nCHECK-NOT: kind=release\nCHECK: kind=fetch module=b\n") ==
        "");
    CHECK(
        check(
            "CHECK: kind=fetch module=b\nCHECK-NOT: kind=release\nCHECK: kind=fetch module=c\n") ==
        "o.order:2:12: error: CHECK-NOT: excluded event kind=release found\n"
        "CHECK-NOT: kind=release\n"
        "           ^~~~~~~~~~~~\n"
        "t.jsonl:4: note: found here: seq=0 t_ns=0 rank=0 engine=0 step=0 micro_step=0 "
        "phase=fwd kind=release module=a module_id=1\n");
    CHECK(check("CHECK-DAG: module=b\nCHECK-DAG: module=a kind=fetch\nCHECK: kind=release\n") ==
          "");
    CHECK(check("CHECK-DAG: module=b\nCHECK-DAG: module=d\n")
              .starts_with("o.order:2:12: error: CHECK-DAG: expected module=d not found"));
    CHECK(check("CHECK-LABEL: kind=fetch module=a\nCHECK: module=b\nCHECK-LABEL: module=c\n") ==
          "");
    CHECK(check("CHECK-LABEL: kind=fetch module=a\nCHECK: module=d\nCHECK-LABEL: module=c\n")
              .starts_with(
                  "o.order:2:8: error: CHECK: expected module=d before the event of line 3"));
  }

  TEST_CASE("order file: a UTF-8 byte order mark before the first directive is skipped") {
    const std::string mark = "\xEF\xBB\xBF";
    CHECK(check(mark + "CHECK: kind=fetch module=b\n") == "");
    // Columns count from the text after the mark, as an editor shows them.
    CHECK(check(mark + "CHECK: kind=fetch module=d\n")
              .starts_with("o.order:1:8: error: CHECK: expected kind=fetch module=d not found"));
  }

  TEST_CASE("order file: fields match whole, never a substring") {
    CHECK(check("CHECK: module=b\n") == "");
    CHECK_FALSE(check("CHECK: module=\n").empty());
    CHECK(check("CHECK: modu=b\n").starts_with("o.order:1:8: error: unknown key 'modu'"));
    CHECK(check("CHECK: kind=fet\n").starts_with("o.order:1:13: error: unknown kind 'fet'"));
  }

  TEST_CASE("order file: the root is module=<root>, and module=\"\" (its old name) names it too") {
    for (const char* root : {"<root>", ""}) {
      CAPTURE(root);
      for (const char* pattern :
           {"CHECK: kind=fetch module=<root>\n", "CHECK: kind=fetch module=\"\"\n"}) {
        CAPTURE(pattern);
        const OrderParseResult parsed = parse_order_file("o.order", pattern);
        REQUIRE(parsed.order);
        OrderChecker checker(*parsed.order, "t.jsonl");
        checker.on_event(event(EventKind::Fetch, "a"), 2);
        checker.on_event(event(EventKind::Fetch, root), 3);
        CHECK_FALSE(checker.finish());
      }
    }
  }

  TEST_CASE("order file: malformed files are rejected before any check") {
    CHECK(check("CHECK-NXT: kind=fetch\n") ==
          "o.order:1:1: error: misspelled directive 'CHECK-NXT:'; did you mean 'CHECK-NEXT:'?\n"
          "CHECK-NXT: kind=fetch\n"
          "^~~~~~~~~~\n");
    CHECK(check("CHECK-NEXT: kind=fetch\n")
              .starts_with("o.order:1:1: error: found 'CHECK-NEXT:' without a previous 'CHECK:'"));
    CHECK(check("# nothing\n") ==
          "o.order: error: no directive found (expected lines such as 'CHECK: kind=fetch "
          "module=adapter')\n");
    CHECK(check("CHECK: trace_step=x\n")
              .starts_with("o.order:1:19: error: expected an integer for 'trace_step', got 'x'"));
    CHECK(check("CHECK: kind=fetch kind=release\n")
              .starts_with("o.order:1:19: error: duplicate key 'kind'"));
  }
}
}  // namespace zfetch::trace
