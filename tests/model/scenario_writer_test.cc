// The scenario writer: every scenario of scenarios/ written and read back is the same scenario.
#include "model/scenario_writer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "model/load.h"
#include "sim/explore/event_digest.h"
#include "sim/simulator.h"

namespace zfetch::model {
namespace {

std::vector<std::string> scenario_files() {
  std::vector<std::string> files;
  const std::filesystem::path root = std::filesystem::path(ZFETCH_SOURCE_DIR) / "scenarios";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string path = entry.path().generic_string();
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(path);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

uint64_t digest_of(const Scenario& s, sim::Discovery d) {
  sim::EventDigest digest;
  sim::Options options;
  options.discovery = d;
  sim::simulate(s, options, digest);
  return digest.digest();
}

TEST_SUITE("model") {
  TEST_CASE("scenario writer: every scenario file round-trips to the same simulation") {
    const std::vector<std::string> files = scenario_files();
    CHECK(files.size() > 50);
    for (const std::string& file : files) {
      INFO(file);
      const LoadResult original = load_scenario_file(file);
      REQUIRE(original.scenario.has_value());
      const std::string yaml = write_scenario_yaml(*original.scenario);
      // The written file stands alone: a deepspeed_config: file is written out inline.
      const LoadResult again = parse_scenario_text("written.yaml", yaml, "/nonexistent");
      INFO(yaml);
      REQUIRE(again.scenario.has_value());
      CHECK(write_scenario_yaml(*again.scenario) == yaml);
      CHECK(again.scenario->expectations.size() == original.scenario->expectations.size());
      for (sim::Discovery d :
           {sim::Discovery::ResidentSkip, sim::Discovery::ResidencyIndependent}) {
        CHECK(digest_of(*again.scenario, d) == digest_of(*original.scenario, d));
      }
    }
  }

  TEST_CASE("scenario writer: readable layout, defaults left out, odd names quoted") {
    const LoadResult loaded = parse_scenario_text("input", R"(name: "two words"
world_size: 2
deepspeed:
  zero_optimization: {stage: 3, stage3_prefetch_bucket_size: 0, offload_param: {device: cpu}}
model:
  name: model
  params: {"0": [2, 3]}
  children:
    - name: a
      params: {w: {shape: [4], dtype: bf16, frozen: true}}
      forward:
        - checkpoint: {reentrant: false}
          body: [{access: /0, kind: metadata, when: {step: [1], phase: eval}}]
schedule: [{train: 2}, save_checkpoint: t, {restart: {reuse_model: true}}, load_checkpoint: t]
expect:
  resident-skip: {outcome: pass}
)");
    REQUIRE(loaded.scenario.has_value());
    CHECK(write_scenario_yaml(*loaded.scenario) == R"(name: "two words"
world_size: 2
deepspeed:
  zero_optimization:
    stage: 3
    stage3_prefetch_bucket_size: 0
    offload_param: {device: cpu}
model:
  name: model
  params:
    "0": {shape: [2, 3]}
  children:
    - name: a
      params:
        w: {shape: [4], dtype: bf16, frozen: true}
      forward:
        - checkpoint: {reentrant: false}
          body:
            - access: "/0"
              kind: metadata
              when: {step: [1], phase: eval}
schedule:
  - train: {steps: 2}
  - save_checkpoint: t
  - restart: {reuse_model: true}
  - load_checkpoint: t
expect:
  resident-skip: {outcome: pass}
)");
  }
}

}  // namespace
}  // namespace zfetch::model
