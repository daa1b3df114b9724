// Tests of diff_traces and the projection: written traces compared in memory.
#include "trace/diff.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/trace/trace_test_util.h"
#include "trace/project.h"

namespace zfetch::trace {
TEST_SUITE("trace") {
  namespace {

  // A forward event of `kind` in micro-step `micro`.
  Event forward(EventKind kind, int micro) {
    Event e;
    e.kind = kind;
    e.phase = Phase::Fwd;
    e.micro_step = micro;
    return e;
  }

  Event fetch(int micro, const char* module, int64_t id) {
    Event e = forward(EventKind::Fetch, micro);
    e.module = module;
    e.module_id = id;
    e.trace_step = 0;
    return e;
  }

  Event gather(int micro, const char* param, int64_t id, int64_t group) {
    Event e = forward(EventKind::Gather, micro);
    e.param = param;
    e.param_id = id;
    e.group = group;
    e.numel = 4;
    e.bytes = 16;
    return e;
  }

  std::string trace_text(std::vector<Event> events) {
    for (size_t i = 0; i < events.size(); ++i) {
      events[i].seq = i;
    }
    return testing::write_trace({1, "t", 1, "resident-skip"}, events);
  }

  DiffReport diff(const std::vector<Event>& recorded, const std::vector<Event>& expected,
                  DiffOptions options = {}) {
    std::istringstream a(trace_text(recorded));
    std::istringstream b(trace_text(expected));
    TraceReader ra(a, "recorded.jsonl");
    TraceReader rb(b, "expected.jsonl");
    REQUIRE(ra.read_header());
    REQUIRE(rb.read_header());
    return diff_traces(ra, rb, options);
  }

  // A report's divergence counts, compared at once.
  struct Counts {
    uint64_t missing = 0;
    uint64_t extra = 0;
    uint64_t changed = 0;
    bool operator==(const Counts&) const = default;
  };
  Counts counts(const DiffReport& r) {
    return {r.missing, r.extra, r.changed};
  }

  const std::vector<Event> kBase = {
      fetch(0, "a", 1),       gather(0, "a.w", 1, 0), gather(0, "a.b", 2, 0),
      fetch(0, "b", 2),       gather(0, "b.w", 3, 1), fetch(1, "a", 1),
      gather(1, "a.w", 1, 2), gather(1, "a.b", 2, 2), fetch(1, "b", 2),
  };

  }  // namespace

  TEST_CASE("diff: equal traces, and a trace with itself") {
    const DiffReport r = diff(kBase, kBase);
    CHECK(r.equal());
    CHECK(r.recorded_events == kBase.size());
    CHECK(r.expected_events == kBase.size());
  }

  TEST_CASE("diff: one missing event is one divergence, with its lines") {
    std::vector<Event> recorded = kBase;
    recorded.erase(recorded.begin() + 3);  // fetch of b, micro-step 0
    const DiffReport r = diff(recorded, kBase);
    REQUIRE(r.divergence_count() == 1);
    CHECK(r.missing == 1);
    const Divergence& d = r.divergences[0];
    CHECK(d.type == Divergence::Type::Missing);
    REQUIRE(d.expected.has_value());
    CHECK(d.expected->module == "b");
    CHECK(d.expected->line == 5);  // header, then events from line 2
    REQUIRE(d.recorded.has_value());
    CHECK(d.recorded->param == "b.w");  // what the recorded trace has in its place
    CHECK(d.recorded_line == 5);
  }

  TEST_CASE("diff: an extra and a changed event") {
    std::vector<Event> recorded = kBase;
    recorded.insert(recorded.begin() + 1, fetch(0, "a", 1));
    recorded[7].param = "a.scale";  // gather of a.w in micro-step 1, now one later
    CHECK(counts(diff(recorded, kBase)) == Counts{.missing = 0, .extra = 1, .changed = 1});
  }

  TEST_CASE("diff: a coalesced gather compares as a set; across gathers it does not") {
    std::vector<Event> within = kBase;
    std::swap(within[1], within[2]);
    CHECK(diff(within, kBase).equal());
    std::vector<Event> across = kBase;
    std::swap(across[2].param, across[4].param);  // a.b and b.w trade gathers
    std::swap(across[2].param_id, across[4].param_id);
    // Sorted, gather 0 is {a.b, a.w} expected and {a.w, b.w} recorded: a.b missing, b.w extra,
    // and the other way round in gather 1.
    CHECK(counts(diff(across, kBase)) == Counts{.missing = 2, .extra = 2, .changed = 0});
  }

  TEST_CASE("diff: ids that differ by an offset line up with ignore_ids") {
    std::vector<Event> recorded = kBase;
    for (Event& e : recorded) {
      e.module_id = e.module_id >= 0 ? e.module_id + 10 : -1;
      e.param_id = e.param_id >= 0 ? e.param_id + 20 : -1;
    }
    CHECK_FALSE(diff(recorded, kBase).equal());
    DiffOptions options;
    options.projection.ignore_ids = true;
    CHECK(diff(recorded, kBase, options).equal());
  }

  TEST_CASE("diff: kinds and fields narrow what is compared") {
    std::vector<Event> recorded = kBase;
    recorded[4].numel = 99;
    DiffOptions options;
    CHECK(diff(recorded, kBase, options).equal());  // numel is not a default field
    std::string error;
    options.projection.fields =
        *parse_fields("engine,step,micro_step,phase,kind,param,numel", error);
    CHECK(diff(recorded, kBase, options).changed == 1);
    bool skip_own = false;
    options.projection.kinds = *parse_kinds("fetch", skip_own, error);
    CHECK(diff(recorded, kBase, options).equal());
    CHECK_FALSE(parse_fields("engine,modul", error).has_value());
    CHECK(error == "unknown field 'modul'; did you mean 'module'?");
    CHECK_FALSE(parse_kinds("fetch,relase", skip_own, error).has_value());
    CHECK(error == "unknown kind 'relase'; did you mean 'release'?");
  }

  TEST_CASE("diff: a truncated recorded trace stops the comparison with a located error") {
    std::string text = trace_text(kBase);
    text.resize(text.size() - 10);
    std::istringstream a(text);
    std::istringstream b(trace_text(kBase));
    TraceReader ra(a, "recorded.jsonl");
    TraceReader rb(b, "expected.jsonl");
    REQUIRE(ra.read_header());
    REQUIRE(rb.read_header());
    const DiffReport r = diff_traces(ra, rb, {});
    REQUIRE(r.error.has_value());
    CHECK(r.error->loc.line == kBase.size() + 1);
    CHECK(r.divergence_count() == 0);
    CHECK_FALSE(r.equal());
  }
}
}  // namespace zfetch::trace
