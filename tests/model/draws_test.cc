// Tests of the seeded draws `route` and `layerdrop` (docs/scenario-format.md, "Seeded draws"):
// the documented stream, what each draw picks, their located errors and the writer's form.
#include <doctest/doctest.h>

#include <string>

#include "model/draw.h"
#include "model/load.h"
#include "model/scenario_writer.h"
#include "tests/model/load_helpers.h"
#include "tests/model/simulate_helpers.h"

namespace zfetch::model {

namespace {

using testing::digest_of;
using testing::errors_of;
using testing::load_ok;

// A router over four experts and a stack of three layers with LayerDrop.
const char* const kModel = R"(name: draws
templates:
  unit: {params: {w: [4, 4]}}
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0, log_trace_cache_warnings: true}
model:
  name: m
  children:
    - {name: experts, children: [{template: unit, count: 4}]}
    - {name: layers, children: [{template: unit, count: 3}]}
  forward:
    - {call_each: experts, route: {top_k: 2, seed: 4808}}
    - {call_each: layers, layerdrop: {p: 0.3, seed: 16688}}
)";

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("draws: the stream is the documented one") {
    // Values computed with the Python of docs/scenario-format.md, an independent
    // implementation of the stream.
    CHECK(draw_value(4808, {0, 0, 0}, 0) == 0x2647fd046ea9433dULL);
    CHECK(draw_value(7, {3, 1, 2}, 2) == 0x541b847319938daeULL);
  }

  TEST_CASE("draws: a route picks exactly top_k candidates, differently from step to step") {
    Draw route;
    route.kind = Draw::Kind::Route;
    route.seed = 4808;
    route.of = 4;
    route.top_k = 2;
    int changes = 0;
    std::vector<bool> previous;
    for (int64_t step = 0; step < 64; ++step) {
      std::vector<bool> picked;
      int count = 0;
      for (int64_t i = 0; i < route.of; ++i) {
        route.index = i;
        picked.push_back(draw_picks(route, {step, 0, 0}, true));
        count += picked.back() ? 1 : 0;
        // Deterministic, and the same whether the model trains or not.
        CHECK(draw_picks(route, {step, 0, 0}, false) == picked.back());
      }
      CHECK(count == 2);
      changes += !previous.empty() && picked != previous ? 1 : 0;
      previous = picked;
    }
    CHECK(changes > 32);
  }

  TEST_CASE("draws: layerdrop drops about p of the layers, only in training") {
    Draw drop;
    drop.kind = Draw::Kind::LayerDrop;
    drop.seed = 16688;
    drop.p = 0.3;
    int dropped = 0;
    const int n = 4000;
    for (int k = 0; k < n; ++k) {
      drop.index = k % 4;
      const DrawAt at{k / 4, 0, 0};
      dropped += draw_picks(drop, at, true) ? 0 : 1;
      CHECK(draw_picks(drop, at, false));
    }
    CHECK(dropped > n * 27 / 100);
    CHECK(dropped < n * 33 / 100);
    drop.p = 0;
    CHECK(draw_picks(drop, {0, 0, 0}, true));
    drop.p = 1;
    CHECK_FALSE(draw_picks(drop, {0, 0, 0}, true));
  }

  TEST_CASE("draws: call_each gives each child its candidate number; the writer keeps them") {
    const Scenario s = load_ok(std::string(kModel) + "schedule: [{train: 6}, {eval: 1}]\n");
    const std::vector<Op>& forward = s.modules[0].forward;
    REQUIRE(forward.size() == 7);
    CHECK(forward[1].when.draw.kind == Draw::Kind::Route);
    CHECK(forward[1].when.draw.index == 1);
    CHECK(forward[1].when.draw.of == 4);
    CHECK(forward[6].when.draw.kind == Draw::Kind::LayerDrop);
    CHECK(forward[6].when.draw.index == 2);
    CHECK(forward[6].when.draw.p == 0.3);
    const Scenario again = load_ok(write_scenario_yaml(s));
    CHECK(digest_of(again) == digest_of(s));
    // The draws change the module order: the run is not the one without them.
    const Scenario plain = load_ok(R"(name: draws
templates:
  unit: {params: {w: [4, 4]}}
deepspeed:
  zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0}
model:
  name: m
  children:
    - {name: experts, children: [{template: unit, count: 4}]}
    - {name: layers, children: [{template: unit, count: 3}]}
  forward: [{call_each: experts}, {call_each: layers}]
schedule: [{train: 6}, {eval: 1}]
)");
    CHECK(digest_of(plain) != digest_of(s));
  }

  TEST_CASE("draws: bad draws are located") {
    CHECK(errors_of(R"(name: bad
templates:
  unit: {params: {w: [4, 4]}}
model:
  name: m
  children:
    - {name: experts, children: [{template: unit, count: 2}]}
  forward:
    - {call_each: experts, route: {top_k: 3, seed: 1}}
    - {call_each: experts, layerdrop: {p: 1.5, seed: 1}}
    - {call_each: experts, layerdrop: {p: 0.5}}
    - {call_each: experts, route: {top_k: 1, seed: 1}, layerdrop: {p: 0.1, seed: 1}}
    - {call: experts.0, when: {route: {seed: 1, top_k: 1, of: 2, index: 2}}}
schedule: [train]
)") == "input:9:28: error: 'route' picks top_k 3 of the 2 children of 'experts'\n"
       "    - {call_each: experts, route: {top_k: 3, seed: 1}}\n"
       "                           ^~~~~\n"
       "input:10:43: error: 'p' is a probability from 0 to 1, got '1.5'\n"
       "    - {call_each: experts, layerdrop: {p: 1.5, seed: 1}}\n"
       "                                          ^~~\n"
       "input:11:28: error: 'layerdrop' needs a 'seed'\n"
       "    - {call_each: experts, layerdrop: {p: 0.5}}\n"
       "                           ^~~~~~~~~\n"
       "input:12:56: error: give one of 'route' and 'layerdrop', not both\n"
       "    - {call_each: experts, route: {top_k: 1, seed: 1}, layerdrop: {p: 0.1, seed: 1}}\n"
       "                                                       ^~~~~~~~~\n"
       "input:13:32: error: 'route' needs top_k <= of and index < of; got top_k 1, of 2, index "
       "2\n"
       "    - {call: experts.0, when: {route: {seed: 1, top_k: 1, of: 2, index: 2}}}\n"
       "                               ^~~~~\n");
  }
}

}  // namespace zfetch::model
