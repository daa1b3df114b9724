// libFuzzer target: a ds_config file read through `deepspeed_config:` (JSON checked by
// nlohmann-json, then read with positions). The bytes are the file; a fixed scenario names it.
// Loading must never crash; a loaded scenario must survive the scenario writer (the config
// written inline loads back to the same config) and simulate without throwing.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "model/load.h"
#include "model/scenario_writer.h"
#include "sim/simulator.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// The loader reads the config by path, so the input goes into one file of a private folder
// made at start-up (rewritten per input; nothing else on the host is read).
std::string g_dir;

void remove_scratch() {
  (void)std::remove((g_dir + "/ds_config.json").c_str());
  (void)rmdir(g_dir.c_str());
}

constexpr std::string_view kScenario = R"(name: fuzz
deepspeed_config: ds_config.json
model:
  name: model
  params: {w: [4, 4]}
  children:
    - {name: a, params: {w: [16], v: {shape: [2], frozen: true}}}
schedule: [{train: 1}]
)";

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // In memory where the host has /dev/shm: rewriting a file on a disk's file system (truncate,
  // journal) took a sixth of every execution.
  char shm_pattern[] = "/dev/shm/zfetch-ds-config-fuzz-XXXXXX";
  char tmp_pattern[] = "/tmp/zfetch-ds-config-fuzz-XXXXXX";
  const char* dir = mkdtemp(shm_pattern);
  if (dir == nullptr) {
    dir = mkdtemp(tmp_pattern);
  }
  FUZZ_CHECK(dir != nullptr);
  g_dir = dir;
  std::atexit(remove_scratch);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = g_dir + "/ds_config.json";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr);
  FUZZ_CHECK(std::fwrite(data, 1, size, f) == size);
  FUZZ_CHECK(std::fclose(f) == 0);
  const zfetch::model::LoadResult loaded =
      zfetch::model::parse_scenario_text("fuzz.yaml", kScenario, g_dir);
  FUZZ_CHECK(loaded.scenario.has_value() == loaded.diagnostics.empty());
  if (!loaded.scenario) {
    return 0;
  }
  const zfetch::model::Scenario& s = *loaded.scenario;
  // Keep each input to milliseconds: long accumulation is the simulator's business elsewhere.
  if (s.config.gradient_accumulation_steps > 64) {
    return 0;
  }
  const std::string yaml = zfetch::model::write_scenario_yaml(s);
  const zfetch::model::LoadResult again = zfetch::model::parse_scenario_text("again.yaml", yaml);
  if (!again.scenario) {
    std::fprintf(stderr, "%s\n%s:%u:%u: %s\n", yaml.c_str(), again.diagnostics[0].file.c_str(),
                 again.diagnostics[0].loc.line, again.diagnostics[0].loc.col,
                 again.diagnostics[0].message.c_str());
    FUZZ_FAIL("the config written inline does not load back");
  }
  FUZZ_CHECK(zfetch::model::write_scenario_yaml(*again.scenario) == yaml);
  zfetch::trace::NullSink sink;
  (void)zfetch::sim::simulate(s, {}, sink);
  return 0;
}
