// Tests of Hugging Face "auto" values: filled as the integration fills them, reported, and
// refused where it fills none; and inline `deepspeed:` keys over a ds_config file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "diag/render.h"
#include "model/load.h"

namespace zfetch::model {

namespace {

std::string errors_of(const LoadResult& result) {
  std::string out;
  for (const Diagnostic& diagnostic : result.diagnostics) {
    out += diag::render(diagnostic);
  }
  return out;
}

const char* const kTail = R"(model: {name: m, params: {weight: [4, 4]}}
schedule: [train: 2, train: 3]
)";

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("hf auto: filled from the hidden size, the schedule and TrainingArguments") {
    const LoadResult result = parse_scenario_text("input", std::string(R"(name: t
world_size: 2
hf: {hidden_size: 4096, gradient_accumulation_steps: 8}
deepspeed:
  train_micro_batch_size_per_gpu: auto
  gradient_accumulation_steps: auto
  train_batch_size: auto
  bf16: {enabled: auto}
  zero_optimization:
    stage: 3
    stage3_prefetch_bucket_size: auto
    stage3_param_persistence_threshold: auto
  scheduler: {type: WarmupLR, params: {total_num_steps: auto}}
)") + kTail);
    INFO(errors_of(result));
    REQUIRE(result.scenario.has_value());
    const DeepSpeedConfig& config = result.scenario->config;
    CHECK(config.train_micro_batch_size_per_gpu == 8);
    CHECK(config.gradient_accumulation_steps == 8);
    CHECK_FALSE(config.bf16);
    CHECK(config.zero.prefetch_bucket_size == 15099494);  // 0.9 * 4096^2 = 15099494.4
    CHECK(config.zero.param_persistence_threshold == 40960);
    REQUIRE(config.resolved_auto.size() == 7);
    CHECK(config.resolved_auto[2].key == "train_batch_size");
    CHECK(config.resolved_auto[2].value == "128");
    CHECK(config.resolved_auto[4].key == "zero_optimization.stage3_prefetch_bucket_size");
    CHECK(config.resolved_auto[4].rule == "0.9 * hidden_size^2 rounded down, hidden_size 4096");
    CHECK(config.resolved_auto[6].key == "scheduler.params.total_num_steps");
    CHECK(config.resolved_auto[6].value == "5");
  }

  TEST_CASE("hf auto: a hidden-size key without the hidden size, and a key HF never fills") {
    const LoadResult result = parse_scenario_text("input", std::string(R"(name: t
deepspeed:
  zero_optimization:
    stage: 3
    stage3_prefetch_bucket_size: auto
    stage3_max_live_parameters: auto
)") + kTail);
    CHECK(errors_of(result) ==
          "input:5:34: error: 'auto' for 'zero_optimization.stage3_prefetch_bucket_size': it is "
          "derived from the model's hidden size; give it as 'hf: {hidden_size: N}'\n"
          "    stage3_prefetch_bucket_size: auto\n"
          "                                 ^~~~\n"
          "input:6:33: error: 'auto' for 'zero_optimization.stage3_max_live_parameters': the HF "
          "integration does not fill this key\n"
          "    stage3_max_live_parameters: auto\n"
          "                                ^~~~\n");
  }

  TEST_CASE("deepspeed_config file with inline deepspeed keys over it") {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / "zfetch_hf_auto_test";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "ds.json")
        << R"({"gradient_accumulation_steps": 4, "zero_optimization": {"stage": 3,)"
        << R"( "stage3_max_reuse_distance": 7, "stage3_prefetch_bucket_size": 100}})";
    const LoadResult result = parse_scenario_text("input", std::string(R"(name: t
deepspeed_config: ds.json
deepspeed:
  gradient_accumulation_steps: 2
  zero_optimization: {stage3_prefetch_bucket_size: 0}
)") + kTail,
                                                  dir.string());
    INFO(errors_of(result));
    REQUIRE(result.scenario.has_value());
    CHECK(result.scenario->config.gradient_accumulation_steps == 2);
    CHECK(result.scenario->config.zero.prefetch_bucket_size == 0);
    CHECK(result.scenario->config.zero.max_reuse_distance == 7);
    std::filesystem::remove_all(dir);
  }
}

}  // namespace zfetch::model
