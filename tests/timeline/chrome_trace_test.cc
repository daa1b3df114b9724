// The Chrome trace is well-formed Trace Event Format, with exact timestamps and paired flows.
#include "sim/export/chrome_trace.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/timeline/timeline_test_util.h"

namespace zfetch::sim {
namespace {

using testing::Ev;
using trace::EventKind;

// The structural rules of the Trace Event Format that Perfetto and chrome://tracing rely on;
// returns "" or the first violation.
std::string validate_chrome_trace(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    return "no traceEvents array";
  }
  if (doc.value("displayTimeUnit", "") != "ns") {
    return "displayTimeUnit is not ns";
  }
  std::map<uint64_t, int> flow_balance;
  for (const nlohmann::json& e : doc["traceEvents"]) {
    if (!e.contains("ph") || !e["ph"].is_string() || !e.contains("pid") || !e.contains("tid") ||
        !e["pid"].is_number_integer() || !e["tid"].is_number_integer()) {
      return "event without ph/pid/tid: " + e.dump();
    }
    const std::string ph = e["ph"];
    if (ph != "M" && (!e.contains("ts") || !e["ts"].is_number() || e["ts"].get<double>() < 0)) {
      return "event without ts: " + e.dump();
    }
    if (!e.contains("name") || !e["name"].is_string()) {
      return "event without name: " + e.dump();
    }
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
        return "X without dur >= 0: " + e.dump();
      }
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id")) {
        return "flow without id: " + e.dump();
      }
      flow_balance[e["id"].get<uint64_t>()] += ph == "s" ? 1 : -1;
      if (ph == "f" && e.value("bp", "") != "e") {
        return "flow end not bound to the enclosing slice: " + e.dump();
      }
    } else if (ph == "C") {
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
        return "counter without values: " + e.dump();
      }
    } else if (ph == "i") {
      const std::string scope = e.value("s", "");
      if (scope != "g" && scope != "p" && scope != "t") {
        return "instant without scope g/p/t: " + e.dump();
      }
    } else if (ph != "M") {
      return "unexpected ph " + ph;
    }
  }
  for (const auto& [id, balance] : flow_balance) {
    if (balance != 0) {
      return "unpaired flow " + std::to_string(id);
    }
  }
  return "";
}

// Two modules on 4 ranks with offloading: a with one param, b with two.
struct TwoModules {
  testing::ScenarioBuilder b{4};
  struct Ids {
    model::ModuleIndex ma, mb;
    model::ParamIndex pa, pb, pb2;
  } ids = make();
  AnalyticalCostModel cost{b.s, testing::round_calibration()};
  testing::VectorSink out;
  Ids make() {
    b.s.config.zero.offload_param.device = model::OffloadDevice::Cpu;
    const auto ma = b.module("a", 10);
    const auto mb = b.module("b", 10);
    return {ma, mb, b.param(ma, "w", 1'024), b.param(mb, "w", 1'024), b.param(mb, "b", 1'024)};
  }
  // a fetches pa and prefetches b's two params, which b then waits on.
  [[nodiscard]] std::vector<Ev> step_events(int32_t step) const {
    const auto [ma, mb, pa, pb, pb2] = ids;
    return {
        Ev(EventKind::Fetch).module(ma).step(step),
        Ev(EventKind::Gather).module(ma).param(pa).group(1).step(step),
        Ev(EventKind::Wait).module(ma).param(pa).group(1).step(step),
        Ev(EventKind::Prefetch).module(ma).param(pb).group(2).step(step),
        Ev(EventKind::Prefetch).module(ma).param(pb2).group(2).step(step),
        Ev(EventKind::Compute).module(ma).step(step),
        Ev(EventKind::Release).module(ma).param(pa).step(step),
        Ev(EventKind::Fetch).module(mb).step(step),
        Ev(EventKind::Wait).module(mb).param(pb).group(2).step(step),
        Ev(EventKind::Wait).module(mb).param(pb2).group(2).step(step),
        Ev(EventKind::Compute).module(mb).step(step),
        Ev(EventKind::BackwardPost, trace::Phase::Bwd).module(mb).step(step),
    };
  }
};

TEST_SUITE("timeline") {
  TEST_CASE("chrome_trace: streams, slices, flows and counters of a small run") {
    TwoModules two;
    const testing::ScenarioBuilder& b = two.b;
    Timeline tl(b.s, two.cost, two.out, {.per_module = false, .record = true});
    const std::vector<Ev> events = two.step_events(0);
    for (const Ev& e : events) {
      tl.on_event(e);
    }
    tl.finish();
    const std::string text = chrome_trace_json(tl.recording(), b.s);
    const nlohmann::json doc = nlohmann::json::parse(text);
    CHECK(validate_chrome_trace(doc) == "");

    int slices = 0;
    int flows = 0;
    int live_counters = 0;
    int thread_names = 0;
    for (const nlohmann::json& e : doc["traceEvents"]) {
      const std::string ph = e["ph"];
      slices += ph == "X" && e["cat"] != "landmark" ? 1 : 0;
      flows += ph == "s" ? 1 : 0;
      live_counters += ph == "C" && e["name"] == "live gathered bytes" ? 1 : 0;
      thread_names += ph == "M" && e["name"] == "thread_name" ? 1 : 0;
    }
    // h2d + gather for pa, h2d + prefetch for pb/pb2, compute a, compute b, reduce-scatter b.
    CHECK(slices == 7);
    // compute a waited on the gather of pa, compute b on the prefetch (once for both params).
    CHECK(flows == 2);
    CHECK(live_counters == 4);  // +pa, +pb, +pb2, -pa
    CHECK(thread_names == 9);   // 4 streams, steps, micro-steps, passes, phases, events
    // Timestamps are exact: h2d of pa [0, 2.048) us, its gather [2.048, 6.120) us.
    CHECK(text.find(R"({"ph":"X","pid":0,"tid":1,"ts":2.048,"dur":4.072,"name":"a.w",)"
                    R"("cat":"gather","args":{"step":0,"phase":"fwd","module":"a","bytes":4096,)"
                    R"("params":["a.w"]}})") != std::string::npos);
    CHECK(text.find(R"("name":"b.w +1 more","cat":"prefetch")") != std::string::npos);
    CHECK(text.find(R"({"ph":"f","pid":0,"tid":0,"ts":6.120,"name":"wait","cat":"wait","id":1,)"
                    R"("bp":"e"})") != std::string::npos);
  }

  TEST_CASE("chrome_trace: the streaming writer's text is the in-memory renderer's") {
    TwoModules two;
    const testing::ScenarioBuilder& b = two.b;
    const auto [ma, mb, pa, pb, pb2] = two.ids;
    // Enough steps that every part outgrows its buffer and is read back from disk.
    for (const int steps : {1, 3000}) {
      CAPTURE(steps);
      ChromeTraceWriter writer(b.s, "");
      Timeline tl(b.s, two.cost, two.out,
                  {.per_module = false, .record = true, .recorder = &writer});
      for (int step = 0; step < steps; ++step) {
        std::vector<Ev> events = two.step_events(step);
        events.push_back(Ev(EventKind::Release).module(mb).param(pb).step(step));
        events.push_back(Ev(EventKind::Release).module(mb).param(pb2).step(step));
        events.push_back(Ev(EventKind::OptimizerStep).step(step));
        for (const Ev& e : events) {
          tl.on_event(e);
        }
      }
      tl.finish();
      const ChromeTraceNotes notes{"a title", "a message"};
      std::FILE* file = std::tmpfile();
      REQUIRE(file != nullptr);
      CHECK(writer.write(file, notes));
      CHECK(writer.error() == "");
      std::string streamed(static_cast<size_t>(std::ftell(file)), '\0');
      std::rewind(file);
      CHECK(std::fread(streamed.data(), 1, streamed.size(), file) == streamed.size());
      std::fclose(file);
      const std::string whole = chrome_trace_json(tl.recording(), b.s, notes);
      CHECK(streamed.size() > (steps > 1 ? size_t{1} << 20 : 0));
      CHECK(streamed == whole);
    }
  }

  TEST_CASE(
      "chrome_trace: a spill directory that cannot hold files is an error, not a short trace") {
    TwoModules two;
    const testing::ScenarioBuilder& b = two.b;
    ChromeTraceWriter writer(b.s, "/nonexistent-directory");
    Timeline tl(b.s, two.cost, two.out, {.recorder = &writer});
    for (int32_t step = 0; step < 3'000; ++step) {
      for (const Ev& e : two.step_events(step)) {
        tl.on_event(e);
      }
    }
    tl.finish();
    std::FILE* file = std::tmpfile();
    REQUIRE(file != nullptr);
    CHECK_FALSE(writer.write(file));
    std::fclose(file);
    CHECK(writer.error().starts_with(
        "cannot create a temporary file in /nonexistent-directory: No such file or directory"));
  }

  TEST_CASE("chrome_trace: an empty recording is still a valid document") {
    testing::ScenarioBuilder b(1);
    const std::string text = chrome_trace_json(Recording{}, b.s);
    CHECK(text == "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n]}\n");
    CHECK(validate_chrome_trace(nlohmann::json::parse(text)) == "");
  }
}

}  // namespace
}  // namespace zfetch::sim
