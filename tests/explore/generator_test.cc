// The fuzzer's generator: counter-based, valid, and inside its profile.
#include "sim/explore/generator.h"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/load.h"
#include "model/scenario_writer.h"
#include "sim/explore/event_digest.h"
#include "sim/simulator.h"
#include "trace/sink.h"

namespace zfetch::sim {
namespace {

uint64_t digest_of(const model::Scenario& s, Discovery d) {
  EventDigest digest;
  Options options;
  options.discovery = d;
  simulate(s, options, digest);
  return digest.digest();
}

bool names_a_rank(const std::vector<model::Op>& ops) {
  for (const model::Op& op : ops) {
    if (!op.when.ranks.empty() || names_a_rank(op.body)) {
      return true;
    }
  }
  return false;
}

// Per op in program order: its call input, and whether a later `input_from` reads its output.
void collect_call_inputs(const std::vector<model::Op>& ops,
                         std::vector<std::pair<model::CallInput, bool>>& out) {
  for (const model::Op& op : ops) {
    out.emplace_back(op.input, op.output_read);
    collect_call_inputs(op.body, out);
  }
}

std::vector<std::pair<model::CallInput, bool>> call_inputs(const model::Scenario& s) {
  std::vector<std::pair<model::CallInput, bool>> out;
  for (const model::ModuleSpec& m : s.modules) {
    collect_call_inputs(m.forward, out);
  }
  return out;
}

// Calls marked `output: leaf` in `ops`, and how often each module is called there, nested
// calls included.
void collect_calls(const std::vector<model::Op>& ops, std::vector<model::ModuleIndex>& leaves,
                   std::map<model::ModuleIndex, int>& calls) {
  for (const model::Op& op : ops) {
    if (op.kind == model::Op::Kind::Call) {
      ++calls[op.callee];
      if (op.output_leaf) {
        leaves.push_back(op.callee);
      }
    }
    collect_calls(op.body, leaves, calls);
  }
}

// Pre-backward hooks by module (index into the scenario's modules).
struct BackwardPreCount final : trace::EventSink {
  std::map<uint32_t, int> by_module;
  void on_event(const trace::Event& e) override {
    if (e.kind == trace::EventKind::BackwardPre) {
      ++by_module[e.module_index];
    }
  }
};

TEST_SUITE("explore") {
  TEST_CASE("generator: scenario i of seed s does not depend on what was drawn before") {
    const std::string alone =
        model::write_scenario_yaml(generate_scenario(7, 41, GeneratorProfile::Full));
    for (uint64_t i = 0; i < 41; ++i) {
      (void)generate_scenario(7, i, GeneratorProfile::Full);
    }
    CHECK(model::write_scenario_yaml(generate_scenario(7, 41, GeneratorProfile::Full)) == alone);
    // Another seed or index gives another scenario.
    CHECK(model::write_scenario_yaml(generate_scenario(8, 41, GeneratorProfile::Full)) != alone);
    std::set<std::string> distinct;
    for (uint64_t i = 0; i < 50; ++i) {
      std::string yaml =
          model::write_scenario_yaml(generate_scenario(7, i, GeneratorProfile::Full));
      yaml.erase(0, yaml.find('\n', yaml.find("source:")));  // the name says the index
      distinct.insert(yaml);
    }
    CHECK(distinct.size() >= 45);
  }

  TEST_CASE("generator: every scenario loads back from its YAML and simulates identically") {
    for (GeneratorProfile profile : {GeneratorProfile::Full, GeneratorProfile::Runner}) {
      for (uint64_t i = 0; i < 300; ++i) {
        const model::Scenario s = generate_scenario(3, i, profile);
        const std::string yaml = model::write_scenario_yaml(s);
        const model::LoadResult loaded = model::parse_scenario_text("generated.yaml", yaml);
        INFO(yaml);
        REQUIRE(loaded.scenario.has_value());
        CHECK(model::write_scenario_yaml(*loaded.scenario) == yaml);
        for (Discovery d : {Discovery::ResidentSkip, Discovery::ResidencyIndependent}) {
          CHECK(digest_of(*loaded.scenario, d) == digest_of(s, d));
        }
      }
    }
  }

  TEST_CASE("generator: calls fed no_grad, forward_input and an earlier output load back") {
    std::map<model::CallInput, int> seen;
    for (uint64_t i = 0; i < 300; ++i) {
      const model::Scenario s = generate_scenario(3, i, GeneratorProfile::Full);
      const std::string yaml = model::write_scenario_yaml(s);
      const model::LoadResult loaded = model::parse_scenario_text("generated.yaml", yaml);
      INFO(yaml);
      REQUIRE(loaded.scenario.has_value());
      // The loader links each `input_from` to the latest earlier call: the generator marked
      // the same one.
      const auto inputs = call_inputs(s);
      CHECK(call_inputs(*loaded.scenario) == inputs);
      for (const auto& [input, output_read] : inputs) {
        ++seen[input];
      }
    }
    CHECK(seen[model::CallInput::NoGrad] >= 5);
    CHECK(seen[model::CallInput::ForwardInput] >= 5);
    CHECK(seen[model::CallInput::OutputOf] >= 5);
    for (uint64_t i = 0; i < 300; ++i) {  // the runner profile's scenarios are as before
      for (const auto& [input, output_read] :
           call_inputs(generate_scenario(3, i, GeneratorProfile::Runner))) {
        CHECK(input == model::CallInput::Running);
      }
    }
  }

  TEST_CASE("generator: `output: leaf` only on a call whose output would need no grad") {
    // The format gives `output: leaf` a meaning only there (zfetch does not cut a backward the
    // output would have had). Without the marks, a callee that only this call runs then gets
    // no pre-backward hook: its output never required grad.
    int scenarios_with_leaves = 0;
    int checked = 0;
    for (uint64_t i = 0; i < 3000; ++i) {
      model::Scenario s = generate_scenario(5, i, GeneratorProfile::Full);
      std::vector<model::ModuleIndex> leaves;
      std::map<model::ModuleIndex, int> calls;
      for (const model::ModuleSpec& m : s.modules) {
        collect_calls(m.forward, leaves, calls);
      }
      if (leaves.empty()) {
        continue;
      }
      ++scenarios_with_leaves;
      INFO(model::write_scenario_yaml(s));
      for (model::ModuleSpec& m : s.modules) {
        for (model::Op& op : m.forward) {
          op.output_leaf = false;  // the generator marks only a forward's top-level calls
        }
      }
      BackwardPreCount hooks;
      simulate(s, Options{}, hooks);
      for (const model::ModuleIndex callee : leaves) {
        // Called by no other op, nor by its parent's default forward (each child in turn).
        if (calls[callee] == 1 && s.modules[s.modules[callee].parent].has_forward) {
          CHECK(hooks.by_module[callee] == 0);
          ++checked;
        }
      }
    }
    CHECK(scenarios_with_leaves >= 40);
    CHECK(checked >= 25);
    for (uint64_t i = 0; i < 300; ++i) {  // the runner profile's scenarios are as before
      std::vector<model::ModuleIndex> leaves;
      std::map<model::ModuleIndex, int> calls;
      const model::Scenario s = generate_scenario(3, i, GeneratorProfile::Runner);
      for (const model::ModuleSpec& m : s.modules) {
        collect_calls(m.forward, leaves, calls);
      }
      CHECK(leaves.empty());
    }
  }

  TEST_CASE("generator: the runner profile stays within what the real-DeepSpeed runner builds") {
    for (uint64_t i = 0; i < 500; ++i) {
      const model::Scenario s = generate_scenario(11, i, GeneratorProfile::Runner);
      INFO(model::write_scenario_yaml(s));
      CHECK(s.world_size >= 1);
      CHECK(s.world_size <= 2);
      CHECK_FALSE(s.config.fp16);
      CHECK(s.config.zero.offload_param.device != model::OffloadDevice::Nvme);
      bool trainable = false;
      for (const model::ParamSpec& p : s.params) {
        trainable = trainable || !p.frozen;
        CHECK(p.dtype != model::DType::Fp16);
      }
      CHECK(trainable);
      for (const model::ModuleSpec& m : s.modules) {
        CHECK_FALSE(names_a_rank(m.forward));
      }
      for (const model::ScheduleItem& item : s.schedule) {
        CHECK(item.overflow_steps.empty());
      }
    }
  }
}

}  // namespace
}  // namespace zfetch::sim
