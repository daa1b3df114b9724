// `output: leaf` on a call (docs/scenario-format.md): the model detaches a frozen embedding's
// output and makes it a leaf that requires grad (`x = self.embed(ids).detach().requires_grad_()`)
// so that the reentrant checkpoints after it recompute. What zfetch makes of it, its round trip
// through the writer, and its located error.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "model/load.h"
#include "model/scenario_writer.h"
#include "sim/simulator.h"
#include "tests/model/load_helpers.h"
#include "trace/sink.h"

namespace zfetch::model {

namespace {

// Token ids (the root's input needs no grad) into a frozen embedding, then one trainable layer
// in a reentrant checkpoint. OUTPUT is replaced by the embedding call's keys.
const char* const kDetached = R"(name: detached
deepspeed: {zero_optimization: {stage: 3, stage3_param_persistence_threshold: 0}}
model:
  name: model
  children:
    - {name: embed, params: {weight: {shape: [16, 4], frozen: true}}}
    - {name: layer, params: {w: [4, 4]}}
  forward:
    - {call: embed OUTPUT}
    - {checkpoint: {reentrant: true}, body: [{call: layer}]}
schedule: [{train: 1}]
)";

std::string detached(const std::string& output) {
  std::string text = kDetached;
  return text.replace(text.find(" OUTPUT"), 7, output);
}

// The backward hooks that fired, as (kind, module id), in simulation order.
struct BackwardSink : trace::EventSink {
  std::vector<std::pair<trace::EventKind, int64_t>> hooks;
  void on_event(const trace::Event& e) override {
    if (e.kind == trace::EventKind::BackwardPre || e.kind == trace::EventKind::BackwardPost) {
      hooks.emplace_back(e.kind, e.module_id);
    }
  }
};

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("call output leaf: what reads it requires grad; the frozen producer has no backward") {
    using trace::EventKind;
    BackwardSink sink;
    const sim::Outcome outcome =
        sim::simulate(testing::load_ok(detached(", output: leaf")), {}, sink);
    CHECK(outcome.kind == sim::OutcomeKind::Pass);
    // module ids: model 0, embed 1, layer 2. The layer's recompute and backward run; the embed,
    // fed token ids and frozen, gets neither hook; the root's input needs no grad: no
    // post-backward of the root (DeepSpeed fires none either).
    const std::vector<std::pair<EventKind, int64_t>> expected = {
        {EventKind::BackwardPre, 0}, {EventKind::BackwardPre, 2}, {EventKind::BackwardPost, 2}};
    CHECK(sink.hooks == expected);

    // Without it the checkpoint's input needs no grad, nor does the loss: DeepSpeed's own check
    // in engine.backward fails (docs/backward-order.md 6).
    BackwardSink plain;
    const sim::Outcome without = sim::simulate(testing::load_ok(detached("")), {}, plain);
    CHECK(without.kind != sim::OutcomeKind::Pass);
    CHECK(plain.hooks.empty());
  }

  TEST_CASE("call output leaf: written back, and a bad value located") {
    const Scenario s = testing::load_ok(detached(", output: leaf"));
    CHECK(s.modules[0].forward[0].output_leaf);
    CHECK_FALSE(s.modules[0].forward[1].output_leaf);
    CHECK(testing::load_ok(write_scenario_yaml(s)).modules[0].forward[0].output_leaf);
    CHECK(testing::errors_of(detached(", output: detached")) ==
          "input:9:29: error: unknown call output 'detached'; valid values are: leaf\n"
          "    - {call: embed, output: detached}\n"
          "                            ^~~~~~~~\n");
    CHECK(
        testing::errors_of(detached("}\n    - {checkpoint: {reentrant: true}, output: leaf, body: "
                                    "[{call: layer}]")) != "");
  }
}

}  // namespace zfetch::model
