// Tests of the scenario loader: full rendered error messages (ninja ParserTest.Errors style),
// the seed scenario, qualified names, defaults, ties and the module graph.
#include "model/load.h"

#include <doctest/doctest.h>

#include <string>

#include "tests/model/load_helpers.h"

namespace zfetch::model {

namespace {

using testing::errors_of;
using testing::load_ok;
using testing::warnings_of;

const char* const kTail = R"(model:
  name: m
  children:
    - {name: a, params: {weight: [2, 8]}}
    - {name: b, params: {weight: [8, 2]}}
schedule: [train: 1]
)";

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("load: unknown top-level key with a suggestion") {
    CHECK(errors_of(std::string("name: x\nwrold_size: 2\n") + kTail) ==
          "input:2:1: error: unknown key 'wrold_size' in the scenario\n"
          "wrold_size: 2\n"
          "^~~~~~~~~~\n"
          "input:2:1: note: did you mean 'world_size'?\n");
  }

  TEST_CASE("load: text given directly is checked like a file: invalid UTF-8 in a name") {
    // Found by the scenario fuzzer: a name with byte 0xFF loaded, and the trace it wrote did
    // not read back.
    const std::string bad = "name: x\nmodel:\n  name: m\n  params: {w\xff: [4]}\n";
    const std::string errors = errors_of(bad + "schedule: [train: 1]\n");
    CHECK(errors.find("input:4:13: error: invalid UTF-8 (byte 0xFF") == 0);
  }

  TEST_CASE("load: wrong type says what was expected and what was found") {
    CHECK(errors_of(std::string("name: x\nworld_size: two\n") + kTail) ==
          "input:2:13: error: expected unsigned integer for 'world_size', got 'two'\n"
          "world_size: two\n"
          "            ^~~\n");
  }

  TEST_CASE("load: yaml syntax error has the parser's position") {
    CHECK(errors_of("name: x\nmodel: [a, b\n") ==
          "input:3:1: error: invalid YAML: end of sequence flow not found\n");
  }

  TEST_CASE("load: missing required keys have no location") {
    CHECK(errors_of("name: x\n") ==
          "input: error: missing required key 'model'\n"
          "input: error: missing required key 'schedule'\n");
  }

  TEST_CASE("load: call of a non-child, access of an unknown param") {
    CHECK(errors_of(R"(name: x
model:
  name: m
  children:
    - name: a
      children: [{name: inner, params: {weight: [2]}}]
      forward:
        - call: innr
        - access: inner.wieght
        - access: /a.inner.weight
schedule: [train: 1]
)") == "input:8:17: error: module 'innr' is not a child of 'a'\n"
       "        - call: innr\n"
       "                ^~~~\n"
       "input:8:17: note: did you mean 'inner'?\n"
       "input:9:19: error: unknown parameter 'inner.wieght' in module 'a'\n"
       "        - access: inner.wieght\n"
       "                  ^~~~~~~~~~~~\n"
       "input:9:19: note: did you mean 'inner.weight'?\n");
  }

  TEST_CASE("load: duplicate names quote the previous definition") {
    CHECK(errors_of(R"(name: x
model:
  name: m
  params: {a: [1]}
  children:
    - {name: a}
schedule: [train: 1]
)") == "input:6:14: error: 'a' is both a parameter and a child of module 'm'\n"
       "    - {name: a}\n"
       "             ^\n"
       "input:4:12: note: previous definition here\n"
       "  params: {a: [1]}\n"
       "           ^\n");
  }

  TEST_CASE("load: tied_to mismatches and cycles") {
    CHECK(errors_of(R"(name: x
model:
  name: m
  params:
    p: {shape: [2], tied_to: q}
    q: {shape: [2], tied_to: p}
    r: {shape: [3], tied_to: s}
    s: [2]
    t: {shape: [2], tied_to: t}
schedule: [train: 1]
)") == "input:5:5: error: tied parameters form a cycle: p -> q -> p\n"
       "    p: {shape: [2], tied_to: q}\n"
       "    ^\n"
       "input:7:5: error: tied parameter 'r' has shape [3], but 's' has shape [2]\n"
       "    r: {shape: [3], tied_to: s}\n"
       "    ^\n"
       "input:8:5: note: 's' declared here\n"
       "    s: [2]\n"
       "    ^\n"
       "input:9:30: error: parameter 't' is tied to itself\n"
       "    t: {shape: [2], tied_to: t}\n"
       "                             ^\n");
  }

  TEST_CASE("load: schedule, expectations and ds_config problems are all reported") {
    CHECK(errors_of(R"(name: x
deepspeed:
  zero_optimization: {stage: 2, stage3_prefetch_bucket_size: auto}
model: {name: m}
schedule:
  - load_checkpoint: s
expect:
  resident-skip: {outcome: passed}
)") == "input:3:30: error: zfetch simulates ZeRO stage 3, got stage 2\n"
       "  zero_optimization: {stage: 2, stage3_prefetch_bucket_size: auto}\n"
       "                             ^\n"
       "input:3:62: error: 'auto' for 'zero_optimization.stage3_prefetch_bucket_size': it is "
       "derived from the model's hidden size; give it as 'hf: {hidden_size: N}'\n"
       "  zero_optimization: {stage: 2, stage3_prefetch_bucket_size: auto}\n"
       "                                                             ^~~~\n"
       "input:6:22: error: checkpoint 's' is loaded before it is saved\n"
       "  - load_checkpoint: s\n"
       "                     ^\n"
       "input:8:28: error: unknown outcome 'passed'; valid values are: pass, trace-invalidated, "
       "fetch-queue-mismatch, inflight-params, rank-divergence, hang, not-available, error\n"
       "  resident-skip: {outcome: passed}\n"
       "                           ^~~~~~\n"
       "input:8:28: note: did you mean 'pass'?\n");
  }

  TEST_CASE("load: an expectation may name the optimizer and checkpoint phases") {
    CHECK(errors_of(R"(name: x
model: {name: m, params: {w: [2]}}
schedule: [train: 1, save_checkpoint: a, load_checkpoint: a]
expect:
  resident-skip: {outcome: error, phase: checkpoint}
  residency-independent: {outcome: error, phase: optimizer}
)") == "");
    CHECK(errors_of(R"(name: x
model: {name: m}
schedule: [train: 1]
expect:
  resident-skip: {outcome: error, phase: checkpointing}
)") == "input:5:42: error: unknown phase 'checkpointing'; valid values are: fwd, bwd, recompute, "
       "eval, optimizer, checkpoint\n"
       "  resident-skip: {outcome: error, phase: checkpointing}\n"
       "                                         ^~~~~~~~~~~~~\n"
       "input:5:42: note: did you mean 'checkpoint'?\n");
  }

  TEST_CASE("load: empty schedule and negative sizes") {
    CHECK(errors_of(
              "name: x\nmodel: {name: m, params: {w: [2, -1], v: {numel: -3}}}\nschedule: []\n") ==
          "input:2:34: error: negative size -1 in the shape of parameter 'w'\n"
          "model: {name: m, params: {w: [2, -1], v: {numel: -3}}}\n"
          "                                 ^~\n"
          "input:2:50: error: negative size -3 for 'numel' of parameter 'v'\n"
          "model: {name: m, params: {w: [2, -1], v: {numel: -3}}}\n"
          "                                                 ^~\n"
          "input:3:11: error: the schedule is empty; give at least one 'train' or 'eval'\n"
          "schedule: []\n"
          "          ^\n");
  }

  TEST_CASE("load: parameters of more than 2^40 elements") {
    // 2^20 * 2^20 = 2^40 is the largest accepted; 2^40 + 1 by numel, 2^21 * 2^20 by shape, and a
    // shape whose product overflows int64_t are refused. A zero dimension after a large product
    // gives an empty parameter.
    CHECK(errors_of("name: x\nmodel:\n  name: m\n  params:\n    a: [1048576, 1048576]\n"
                    "    b: {numel: 1099511627777}\n    c: [2097152, 1048576]\n"
                    "    d: [4294967296, 4294967296, 4]\n    e: [4294967296, 4294967296, 0]\n"
                    "schedule: [train: 1]\n") ==
          "input:6:16: error: parameter 'b' has too many elements; at most 1099511627776 (2^40) "
          "are supported\n"
          "    b: {numel: 1099511627777}\n"
          "               ^~~~~~~~~~~~~\n"
          "input:7:8: error: parameter 'c' has too many elements; at most 1099511627776 (2^40) "
          "are supported\n"
          "    c: [2097152, 1048576]\n"
          "       ^\n"
          "input:8:8: error: parameter 'd' has too many elements; at most 1099511627776 (2^40) "
          "are supported\n"
          "    d: [4294967296, 4294967296, 4]\n"
          "       ^\n");
  }

  TEST_CASE("load: the seed scenario") {
    const LoadResult result =
        load_scenario_file(ZFETCH_SOURCE_DIR "/scenarios/seed/resident_adapter_resume.yaml");
    REQUIRE(result.diagnostics.empty());
    const Scenario& s = *result.scenario;
    CHECK(s.name == "resident-adapter-resume");
    CHECK(s.world_size == 2);
    CHECK(s.input_requires_grad);
    CHECK(s.config.train_micro_batch_size_per_gpu == 2);
    CHECK(s.config.gradient_accumulation_steps == 4);
    CHECK(s.config.zero.stage == 3);
    CHECK(s.config.zero.param_persistence_threshold == 16);
    CHECK(s.config.zero.prefetch_bucket_size == 0);
    CHECK(s.config.zero.max_reuse_distance == 0);
    CHECK(s.config.zero.offload_param_set);
    CHECK(s.config.zero.offload_param.device == OffloadDevice::Cpu);

    REQUIRE(s.modules.size() == 5);
    const char* const modules[] = {"", "adapter", "adapter.base", "adapter.adapter_A",
                                   "adapter.adapter_B"};
    for (size_t i = 0; i < 5; ++i) {
      CHECK(s.modules[i].qualified_name == modules[i]);
    }
    CHECK(s.modules[0].name == "model");
    CHECK(s.modules[1].children == std::vector<ModuleIndex>{2, 3, 4});
    CHECK(s.modules[2].parent == 1);

    REQUIRE(s.params.size() == 3);
    CHECK(s.params[0].qualified_name == "adapter.base.weight");
    CHECK(s.params[0].frozen);
    CHECK(s.params[0].numel == 64);
    CHECK(s.params[1].qualified_name == "adapter.adapter_A.weight");
    CHECK(s.params[1].shape == std::vector<int64_t>{2, 8});
    CHECK(s.params[2].numel == 16);

    // Model.forward: checkpoint(reentrant) { call adapter }.
    REQUIRE(s.modules[0].forward.size() == 1);
    const Op& checkpoint = s.modules[0].forward[0];
    CHECK(checkpoint.kind == Op::Kind::Checkpoint);
    CHECK(checkpoint.reentrant);
    REQUIRE(checkpoint.body.size() == 1);
    CHECK(checkpoint.body[0].callee == 1);
    // Adapter.forward: base, metadata access of adapter_A.weight, adapter_A, adapter_B.
    const std::vector<Op>& forward = s.modules[1].forward;
    REQUIRE(forward.size() == 4);
    CHECK(forward[0].callee == 2);
    CHECK(forward[1].kind == Op::Kind::Access);
    CHECK(forward[1].param == 1);
    CHECK(forward[1].access == AccessKind::Metadata);
    CHECK(forward[2].callee == 3);
    CHECK(forward[3].callee == 4);
    CHECK_FALSE(s.modules[2].has_forward);

    REQUIRE(s.schedule.size() == 5);
    CHECK(s.schedule[0].kind == ScheduleItem::Kind::Train);
    CHECK(s.schedule[1].kind == ScheduleItem::Kind::SaveCheckpoint);
    CHECK(s.schedule[1].tag == "seed");
    CHECK(s.schedule[2].kind == ScheduleItem::Kind::Restart);
    CHECK_FALSE(s.schedule[2].reuse_model);
    CHECK(s.schedule[3].kind == ScheduleItem::Kind::LoadCheckpoint);

    REQUIRE(s.expectations.size() == 2);
    const Expectation& skip = s.expectations[0].expect;
    CHECK(s.expectations[0].policy == Discovery::ResidentSkip);
    CHECK(skip.outcome == OutcomeKind::FetchQueueMismatch);
    CHECK(skip.phase == trace::Phase::Recompute);
    CHECK(skip.module == "adapter");
    CHECK(skip.step == 6);
    CHECK(skip.micro_step == 1);
    CHECK(skip.engine == 1);
    CHECK(s.expectations[1].policy == Discovery::ResidencyIndependent);
    CHECK(s.expectations[1].expect.outcome == OutcomeKind::Pass);
    CHECK(boost::num_vertices(s.graph) == 5);
    CHECK(boost::num_edges(s.graph) == 4);
  }

  TEST_CASE("load: defaults of every config key are DeepSpeed's") {
    const Scenario s =
        load_ok(std::string("name: d\ndeepspeed: {zero_optimization: {stage: 3}}\n") + kTail);
    const ZeroConfig& z = s.config.zero;
    CHECK(s.world_size == 1);
    CHECK_FALSE(s.input_requires_grad);
    CHECK_FALSE(s.zenflow);
    CHECK(s.config.train_micro_batch_size_per_gpu == 1);
    CHECK(s.config.gradient_accumulation_steps == 1);
    CHECK_FALSE(s.config.fp16);
    CHECK_FALSE(s.config.bf16);
    CHECK(z.prefetch_bucket_size == 50'000'000);
    CHECK(z.param_persistence_threshold == 100'000);
    CHECK(z.model_persistence_threshold == INT64_MAX);
    CHECK(z.max_live_parameters == 1'000'000'000);
    CHECK(z.max_reuse_distance == 1'000'000'000);
    CHECK(z.module_granularity_threshold == 0);
    CHECK_FALSE(z.use_all_reduce_for_fetch_params);
    CHECK_FALSE(z.allgather_sequential);
    CHECK(z.overlap_comm);
    CHECK_FALSE(z.offload_param_set);
    CHECK(z.offload_param.device == OffloadDevice::None);
    CHECK(z.offload_param.buffer_count == 5);
    CHECK(z.offload_param.buffer_size == 100'000'000);
    CHECK(z.offload_param.max_in_cpu == 1'000'000'000);
    CHECK(z.offload_param.pin_memory);
    CHECK(z.zero_hpz_partition_size == 1);
    CHECK_FALSE(z.zero_quantized_weights);
    CHECK_FALSE(z.zero_quantized_nontrainable_weights);
    CHECK(z.leaf_module.names.empty());
    CHECK_FALSE(z.log_trace_cache_warnings);
    CHECK(z.memory_efficient_linear);
    CHECK_FALSE(z.enable_sanity_checks);
    CHECK_FALSE(z.zenflow);
    CHECK(z.mics_shard_size == -1);
    CHECK(z.override_module_apply);
    CHECK(z.allgather_bucket_size == 500'000'000);
    // A default forward: own params, then children.
    CHECK_FALSE(s.modules[0].has_forward);
    CHECK(s.modules[1].outputs == 1);
    CHECK(s.modules[1].compute_us == -1);
    CHECK(s.params[0].dtype == DType::Fp32);
  }

  TEST_CASE("load: every config key is read, in float form too, and zenflow is presence") {
    const Scenario s = load_ok(std::string(R"(name: d
deepspeed:
  train_micro_batch_size_per_gpu: 4
  gradient_accumulation_steps: 8
  bf16: {enabled: true}
  optimizer: {type: AdamW}
  zero_optimization:
    stage: 3
    stage3_prefetch_bucket_size: 5e7
    stage3_param_persistence_threshold: 1e4
    stage3_model_persistence_threshold: 100000
    stage3_max_live_parameters: 3
    stage3_max_reuse_distance: 4
    stage3_module_granularity_threshold: 5
    stage3_use_all_reduce_for_fetch_params: true
    stage3_allgather_sequential: true
    overlap_comm: false
    reduce_bucket_size: auto
    offload_param: {device: nvme, nvme_path: /nvme, buffer_count: 6, buffer_size: 7,
                    max_in_cpu: 8, pin_memory: false}
    zero_hpz_partition_size: 2
    zero_quantized_weights: true
    zero_quantized_nontrainable_weights: true
    leaf_module: {classes: [Block], names: [layers.1], name_suffixes: [experts]}
    log_trace_cache_warnings: true
    memory_efficient_linear: false
    enable_sanity_checks: true
    zenflow: {topk_ratio: 0.1}
    mics_shard_size: 2
    override_module_apply: false
    allgather_bucket_size: 9
)") + kTail);
    const ZeroConfig& z = s.config.zero;
    CHECK(s.config.train_micro_batch_size_per_gpu == 4);
    CHECK(s.config.gradient_accumulation_steps == 8);
    CHECK(s.config.bf16);
    CHECK(z.prefetch_bucket_size == 50'000'000);
    CHECK(z.param_persistence_threshold == 10'000);
    CHECK(z.model_persistence_threshold == 100'000);
    CHECK(z.max_live_parameters == 3);
    CHECK(z.max_reuse_distance == 4);
    CHECK(z.module_granularity_threshold == 5);
    CHECK(z.use_all_reduce_for_fetch_params);
    CHECK(z.allgather_sequential);
    CHECK_FALSE(z.overlap_comm);
    CHECK(z.offload_param.device == OffloadDevice::Nvme);
    CHECK(z.offload_param.nvme_path == "/nvme");
    CHECK(z.offload_param.buffer_count == 6);
    CHECK(z.offload_param.buffer_size == 7);
    CHECK(z.offload_param.max_in_cpu == 8);
    CHECK_FALSE(z.offload_param.pin_memory);
    CHECK(z.zero_hpz_partition_size == 2);
    CHECK(z.zero_quantized_weights);
    CHECK(z.zero_quantized_nontrainable_weights);
    CHECK(z.leaf_module.classes == std::vector<std::string>{"Block"});
    CHECK(z.leaf_module.names == std::vector<std::string>{"layers.1"});
    CHECK(z.leaf_module.name_suffixes == std::vector<std::string>{"experts"});
    CHECK(z.log_trace_cache_warnings);
    CHECK_FALSE(z.memory_efficient_linear);
    CHECK(z.enable_sanity_checks);
    CHECK(z.zenflow);
    CHECK(s.zenflow);
    CHECK(z.mics_shard_size == 2);
    CHECK_FALSE(z.override_module_apply);
    CHECK(z.allgather_bucket_size == 9);
  }

  TEST_CASE("load: tied params inherit their target and add a Tied edge") {
    const Scenario s = load_ok(R"(name: t
model:
  name: lm
  children:
    - {name: embed, params: {weight: {shape: [4, 8], dtype: bf16, frozen: true}}}
    - name: head
      params: {weight: {tied_to: /embed.weight}}
      forward: [{returns: weight}]
schedule: [train: 1, eval: {passes: 2}, empty_partition_cache, restart: {reuse_model: true}]
)");
    REQUIRE(s.params.size() == 2);
    CHECK(s.params[1].qualified_name == "head.weight");
    CHECK(s.params[1].tied_to == 0);
    CHECK(s.params[1].shape == std::vector<int64_t>{4, 8});
    CHECK(s.params[1].dtype == DType::Bf16);
    CHECK(s.params[1].frozen);
    CHECK(s.modules[2].forward[0].kind == Op::Kind::Return);
    CHECK(s.modules[2].forward[0].param == 1);
    CHECK(s.schedule[1].kind == ScheduleItem::Kind::Eval);
    CHECK(s.schedule[1].steps == 2);
    CHECK(s.schedule[2].kind == ScheduleItem::Kind::EmptyPartitionCache);
    CHECK(s.schedule[3].reuse_model);
    // Edges: two Child edges from the root, then one Tied edge head -> embed.
    int tied = 0;
    for (auto [it, end] = boost::edges(s.graph); it != end; ++it) {
      const ModuleEdge& edge = s.graph[*it];
      if (edge.kind == EdgeKind::Tied) {
        ++tied;
        CHECK(boost::source(*it, s.graph) == 2);
        CHECK(boost::target(*it, s.graph) == 1);
        CHECK(edge.param == 1);
      }
    }
    CHECK(tied == 1);
  }

  TEST_CASE("load: dotted call paths, when guards and repeat") {
    const Scenario s = load_ok(R"(name: w
model:
  name: m
  children:
    - name: layers
      children: [{name: "0", params: {w: [1]}}, {name: "1", params: {w: [1]}}]
  forward:
    - repeat: 3
      body:
        - call: layers.1
          when: {step: [0, 2], micro_step: 1, rank: 0, engine: 1, phase: eval}
schedule: [train: 1]
)");
    const Op& repeat = s.modules[0].forward[0];
    CHECK(repeat.kind == Op::Kind::Repeat);
    CHECK(repeat.count == 3);
    const Op& call = repeat.body[0];
    CHECK(call.callee == 3);
    CHECK(s.modules[3].qualified_name == "layers.1");
    CHECK(call.when.steps == std::vector<int64_t>{0, 2});
    CHECK(call.when.micro_steps == std::vector<int64_t>{1});
    CHECK(call.when.ranks == std::vector<int64_t>{0});
    CHECK(call.when.engines == std::vector<int64_t>{1});
    CHECK(call.when.phase == Condition::Phase::Eval);
  }

  TEST_CASE("load: when: {window_micro_step} is micro_step's documented name; never/always warn") {
    const auto scenario = [](const std::string& when, int gas, int world) {
      return "name: w\nworld_size: " + std::to_string(world) +
             "\ndeepspeed: {gradient_accumulation_steps: " + std::to_string(gas) +
             ", zero_optimization: {stage: 3}}\nmodel:\n  name: m\n  children:\n"
             "    - {name: a, params: {w: [1]}}\n"
             "  forward:\n    - {call: a, when: " +
             when + "}\nschedule: [train: 1]\n";
    };
    const Scenario window = load_ok(scenario("{window_micro_step: [1, 2]}", 4, 1));
    const Scenario old_name = load_ok(scenario("{micro_step: [1, 2]}", 4, 1));
    CHECK(window.modules[0].forward[0].when.micro_steps == std::vector<int64_t>{1, 2});
    CHECK(old_name.modules[0].forward[0].when.micro_steps ==
          window.modules[0].forward[0].when.micro_steps);
    CHECK(warnings_of(scenario("{window_micro_step: [1, 2], rank: 1}", 4, 2)).empty());
    CHECK(errors_of(scenario("{micro_step: 1, window_micro_step: 1}", 4, 1)) ==
          "input:9:39: error: 'micro_step' and 'window_micro_step' are one condition (the index "
          "within the accumulation window); give one of them\n"
          "    - {call: a, when: {micro_step: 1, window_micro_step: 1}}\n"
          "                                      ^~~~~~~~~~~~~~~~~\n"
          "input:9:24: note: the other one is here\n"
          "    - {call: a, when: {micro_step: 1, window_micro_step: 1}}\n"
          "                       ^~~~~~~~~~\n");
    CHECK(warnings_of(scenario("{window_micro_step: [0, 2]}", 2, 1)) ==
          "input:9:47: warning: window_micro_step: 2 can never match ('window_micro_step' is the "
          "micro-step's index within the accumulation window, 0 to 1 with "
          "gradient_accumulation_steps 2)\n"
          "    - {call: a, when: {window_micro_step: [0, 2]}}\n"
          "                                              ^\n");
    CHECK(warnings_of(scenario("{micro_step: 0}", 1, 1)) ==
          "input:9:36: warning: micro_step matches every value it can take, so it always holds "
          "('micro_step' is the micro-step's index within the accumulation window, 0 to 0 with "
          "gradient_accumulation_steps 1 (not the engine-wide micro-step that outcomes, traces "
          "and `expect` count; `window_micro_step` is its unambiguous name))\n"
          "    - {call: a, when: {micro_step: 0}}\n"
          "                                   ^\n");
    CHECK(warnings_of(scenario("{rank: 2}", 1, 2)) ==
          "input:9:30: warning: rank: 2 can never match (ranks are 0 to 1 with world_size 2)\n"
          "    - {call: a, when: {rank: 2}}\n"
          "                             ^\n");
    // A value given twice covers one value: [1, 0, 1] covers both micro-steps of 2.
    CHECK(warnings_of(scenario("{micro_step: [1, 0, 1]}", 2, 1)).find("always holds") !=
          std::string::npos);
    CHECK(warnings_of(scenario("{micro_step: [1, 1]}", 2, 1)).empty());
    // An accumulation of 10^13 is checked without a flag per micro-step (that was 1.25 TB).
    std::string huge = scenario("{micro_step: [0, 2]}", 2, 1);
    huge.replace(huge.find("accumulation_steps: 2"), 21, "accumulation_steps: 1e13");
    CHECK(warnings_of(huge).empty());
  }

  TEST_CASE("load: a ds_config JSON file is read, its errors located in it") {
    const LoadResult good =
        load_scenario_file(ZFETCH_SOURCE_DIR "/tests/cli/scenarios/good_features.yaml");
    REQUIRE(good.diagnostics.empty());
    CHECK(good.scenario->config.gradient_accumulation_steps == 4);
    CHECK(good.scenario->config.zero.param_persistence_threshold == 16);
    CHECK(good.scenario->config.bf16);

    const LoadResult bad =
        load_scenario_file(ZFETCH_SOURCE_DIR "/tests/cli/scenarios/ds_file_unknown_key.yaml");
    REQUIRE(bad.diagnostics.size() == 1);
    CHECK(bad.diagnostics[0].file == ZFETCH_SOURCE_DIR "/tests/cli/scenarios/ds_typo.json");
    CHECK(bad.diagnostics[0].loc.line == 4);
  }

  TEST_CASE("load: an unreadable file is a diagnostic") {
    const LoadResult result = load_scenario_file("/nonexistent/zfetch.yaml");
    REQUIRE(result.diagnostics.size() == 1);
    CHECK(diag::render(result.diagnostics[0]) ==
          "/nonexistent/zfetch.yaml: error: cannot read file: No such file or directory\n");
  }
}

}  // namespace zfetch::model
