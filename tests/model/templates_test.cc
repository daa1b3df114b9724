// Tests of module templates, `count` instances with overrides, `call_each`, and YAML merge
// keys: the loaded tree, its programs, and the full messages for misuse.
#include <doctest/doctest.h>

#include <string>

#include "diag/render.h"
#include "model/load.h"

namespace zfetch::model {

namespace {

LoadResult parse(const std::string& text) {
  return parse_scenario_text("input", text);
}

std::string errors_of(const std::string& text) {
  std::string out;
  for (const Diagnostic& diagnostic : parse(text).diagnostics) {
    out += diag::render(diagnostic);
  }
  return out;
}

Scenario load_ok(const std::string& text) {
  LoadResult result = parse(text);
  INFO(errors_of(text));
  REQUIRE(result.diagnostics.empty());
  return std::move(*result.scenario);
}

const char* const kLayers = R"(name: t
templates:
  layer:
    class: Block
    children:
      - {name: q, params: {weight: [4, 4]}}
      - {name: v, params: {weight: [4, 2]}}
    forward: [{call: q}, {call: v}]
model:
  name: m
  children:
    - name: layers
      children:
        - template: layer
          count: 3
          overrides:
            1: {leaf: true, forward: [{call: v}]}
  forward:
    - call_each: layers
schedule: [train: 1]
)";

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("templates: count instances are named as a ModuleList's, with overrides") {
    const Scenario scenario = load_ok(kLayers);
    REQUIRE(scenario.modules.size() == 11);  // m, layers, 3 x (block, q, v)
    CHECK(scenario.modules[2].qualified_name == "layers.0");
    CHECK(scenario.modules[2].class_name == "Block");
    CHECK(scenario.modules[3].qualified_name == "layers.0.q");
    CHECK(scenario.modules[5].qualified_name == "layers.1");
    CHECK(scenario.modules[10].qualified_name == "layers.2.v");
    CHECK_FALSE(scenario.modules[2].leaf);
    CHECK(scenario.modules[5].leaf);
    // Instance 1's forward is its override; the others keep the template's.
    REQUIRE(scenario.modules[5].forward.size() == 1);
    CHECK(scenario.modules[5].forward[0].callee == 7);
    REQUIRE(scenario.modules[8].forward.size() == 2);
    CHECK(scenario.modules[8].forward[0].callee == 9);
    REQUIRE(scenario.params.size() == 6);
    CHECK(scenario.params[5].qualified_name == "layers.2.v.weight");
    CHECK(scenario.params[5].numel == 8);
  }

  TEST_CASE("templates: call_each calls every child in order, with the op's condition") {
    std::string text = kLayers;
    text.replace(text.find("- call_each: layers"), 19,
                 "- {call_each: layers, when: {phase: train}}");
    const Scenario scenario = load_ok(text);
    const std::vector<Op>& ops = scenario.modules[0].forward;
    REQUIRE(ops.size() == 3);
    CHECK(ops[0].callee == 2);
    CHECK(ops[1].callee == 5);
    CHECK(ops[2].callee == 8);
    CHECK(ops[2].when.phase == Condition::Phase::Train);
  }

  TEST_CASE("templates: one named instance takes the entry's keys over the template's") {
    const Scenario scenario = load_ok(R"(name: t
templates:
  linear: {class: Linear, params: {weight: [4, 4]}}
model:
  name: m
  children:
    - {template: linear, name: a}
    - {template: linear, name: b, class: Other}
schedule: [train: 1]
)");
    REQUIRE(scenario.modules.size() == 3);
    CHECK(scenario.modules[1].qualified_name == "a");
    CHECK(scenario.modules[1].class_name == "Linear");
    CHECK(scenario.modules[2].class_name == "Other");
    CHECK(scenario.params[1].qualified_name == "b.weight");
  }

  TEST_CASE("templates: misuse is reported at the entry") {
    CHECK(errors_of(R"(name: t
templates:
  loop: {children: [{template: loop, name: again}]}
model: {name: m, children: [{template: lopo, name: x}, {template: loop, name: y}]}
schedule: [train: 1]
)") == "input:3:32: error: template 'loop' contains itself\n"
       "  loop: {children: [{template: loop, name: again}]}\n"
       "                               ^~~~\n"
       "input:4:40: error: unknown template 'lopo'\n"
       "model: {name: m, children: [{template: lopo, name: x}, {template: loop, name: y}]}\n"
       "                                       ^~~~\n"
       "input:4:40: note: did you mean 'loop'?\n");
    CHECK(errors_of(R"(name: t
templates:
  linear: {params: {weight: [4]}}
model: {name: m, children: [{template: linear, count: 2, name: x, overrides: {2: {}}}]}
schedule: [train: 1]
)") == "input:4:58: error: instances of 'count' are named 0, 1, ... as a ModuleList's are; "
       "remove 'name'\n"
       "model: {name: m, children: [{template: linear, count: 2, name: x, overrides: {2: {}}}]}\n"
       "                                                         ^~~~\n"
       "input:4:79: error: instance 2 is out of range; 'count' is 2\n"
       "model: {name: m, children: [{template: linear, count: 2, name: x, overrides: {2: {}}}]}\n"
       "                                                                              ^\n");
  }

  TEST_CASE("merge keys: a mapping takes the keys it lacks from an anchor") {
    const Scenario scenario = load_ok(R"(name: t
x-linear: &linear {class: Linear, params: {weight: [4, 4]}, outputs: 2}
model:
  name: m
  children:
    - {name: a, <<: *linear}
    - {name: b, <<: *linear, params: {weight: [2]}}
    - {name: c, <<: [{outputs: 3}, *linear]}
schedule: [train: 1]
)");
    REQUIRE(scenario.modules.size() == 4);
    CHECK(scenario.modules[1].class_name == "Linear");
    CHECK(scenario.modules[1].outputs == 2);
    CHECK(scenario.params[0].numel == 16);
    CHECK(scenario.params[1].numel == 2);
    CHECK(scenario.modules[3].outputs == 3);  // the earlier mapping of a list wins
  }

  TEST_CASE("merge keys: a merge of a non-mapping is an error") {
    CHECK(errors_of("name: t\nmodel: {name: m, <<: 3}\nschedule: [train: 1]\n") ==
          "input:2:22: error: the value of a merge key '<<' must be a mapping or a list of "
          "mappings, got '3'\n"
          "model: {name: m, <<: 3}\n"
          "                     ^\n");
  }
}

}  // namespace zfetch::model
