// Tests of z3 leaf selection: explicit flags, leaf_module and stage3_module_granularity_threshold
// (DeepSpeedZeRoOffload._get_granularity_recursively / _set_leaf_by_threshold_preorder).
#include "model/leaves.h"

#include <doctest/doctest.h>

#include <string>

#include "model/load.h"

namespace zfetch::model {

namespace {

// A root (no params) over an embedding (800), a ModuleList of two blocks, and a head (80).
// Each block: attn (72), a parameter-less act, and mlp over fc1 and fc2 (256 each).
// Hand-computed granularity (params of the subtree // layers):
//   childless modules (embed, attn, fc1, fc2, head): one layer, no granularity
//   mlp: (256 + 256) // (2 + 1) = 170
//   block: (72 + 512) // (1 + 3 + 1) = 116     act: no params, no layer
//   layers (ModuleList): a container, 10 layers, 1168 params, no granularity
//   root: (800 + 1168 + 80) // (1 + 10 + 1 + 1) = 157
Scenario blocks(const std::string& zero_extra, const std::string& mlp_extra = "") {
  const std::string block = R"({name: 'B', children: [{name: attn, params: {w: [8, 8], b: [8]}},
        {name: act}, {name: mlp, )" +
                            mlp_extra +
                            R"(children: [{name: fc1, params: {w: [32, 8]}},
        {name: fc2, params: {w: [8, 32]}}]}]})";
  std::string b0 = block;
  b0.replace(b0.find("'B'"), 3, "'0'");
  std::string b1 = block;
  b1.replace(b1.find("'B'"), 3, "'1'");
  const std::string text = R"(name: g
deepspeed:
  zero_optimization:
    stage: 3
)" + zero_extra + R"(
model:
  name: m
  children:
    - {name: embed, params: {weight: [100, 8]}}
    - name: layers
      class: ModuleList
      children:
        - )" + b0 + R"(
        - )" + b1 + R"(
    - {name: head, params: {w: [10, 8]}}
schedule: [train: 1]
)";
  LoadResult result = parse_scenario_text("input", text);
  for (const Diagnostic& d : result.diagnostics) {
    FAIL_CHECK(d.message);
  }
  REQUIRE(result.scenario.has_value());
  return std::move(*result.scenario);
}

ModuleIndex by_name(const Scenario& s, const std::string& qualified) {
  for (size_t i = 0; i < s.modules.size(); ++i) {
    if (s.modules[i].qualified_name == qualified) {
      return static_cast<ModuleIndex>(i);
    }
  }
  FAIL("no module " << qualified);
  return kNone;
}

// The qualified names of the leaves, in module order.
std::string leaf_names(const Scenario& s) {
  const std::vector<uint8_t> leaves = z3_leaf_modules(s);
  std::string out;
  for (size_t i = 0; i < s.modules.size(); ++i) {
    if (leaves[i] != 0) {
      out += (out.empty() ? "" : " ") + (s.modules[i].qualified_name.empty()
                                             ? std::string("<root>")
                                             : s.modules[i].qualified_name);
    }
  }
  return out;
}

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("leaves: module granularity as DeepSpeed computes it") {
    const Scenario s = blocks("");
    const std::vector<int64_t> g = module_granularity(s);
    CHECK(g[by_name(s, "")] == 157);
    CHECK(g[by_name(s, "layers.0")] == 116);
    CHECK(g[by_name(s, "layers.1")] == 116);
    CHECK(g[by_name(s, "layers.0.mlp")] == 170);
    for (const char* none :
         {"embed", "layers", "layers.0.attn", "layers.0.act", "layers.0.mlp.fc1", "head"}) {
      CAPTURE(none);
      CHECK(g[by_name(s, none)] == kNoGranularity);
    }
  }

  TEST_CASE("leaves: no threshold, no leaves") {
    CHECK(leaf_names(blocks("")) == "");
  }

  TEST_CASE("leaves: a threshold below every granularity marks nothing") {
    CHECK(leaf_names(blocks("    stage3_module_granularity_threshold: 115\n")) == "");
  }

  TEST_CASE("leaves: parents are chosen first, and a chosen subtree is not searched") {
    // 116 <= 120: both blocks; mlp (170) is below a chosen block.
    CHECK(leaf_names(blocks("    stage3_module_granularity_threshold: 120\n")) ==
          "layers.0 layers.1");
    // 157 <= 160: the root itself becomes the one leaf.
    CHECK(leaf_names(blocks("    stage3_module_granularity_threshold: 160\n")) == "<root>");
  }

  TEST_CASE("leaves: a marked module below a chosen one is never reached") {
    CHECK(leaf_names(blocks("", "leaf: true, ")) == "layers.0.mlp layers.1.mlp");
    CHECK(leaf_names(blocks("    stage3_module_granularity_threshold: 120\n", "leaf: true, ")) ==
          "layers.0 layers.1");
  }

  TEST_CASE("leaves: leaf_module by class, name and suffix") {
    CHECK(leaf_names(blocks("    leaf_module: {names: [layers.1.mlp]}\n")) == "layers.1.mlp");
    CHECK(leaf_names(blocks("    leaf_module: {name_suffixes: [attn]}\n")) ==
          "layers.0.attn layers.1.attn");
    CHECK(leaf_names(blocks("    leaf_module: {classes: [torch.nn.ModuleList]}\n")) == "layers");
  }
}

}  // namespace zfetch::model
