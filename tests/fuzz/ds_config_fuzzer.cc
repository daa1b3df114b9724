// libFuzzer target: a ds_config file read as `deepspeed_config:` reads it (hjson, rewritten as
// YAML, then read with positions). The bytes are the file's text; a fixed scenario uses it.
// Reading must never crash; a config that loads must survive the scenario writer (the config
// written inline loads back to the same config) and simulate without throwing.
//
// The fixed scenario is parsed once, and each input goes through model::read_ds_config_text,
// the function `deepspeed_config:` hands the file's text to: parsing the scenario and writing a
// file per input took two thirds of every execution. One input in 64 (by its hash) is also
// written to a file and loaded the whole way, through a scenario that names the file; the two
// ways must agree.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "io/input_file.h"
#include "model/load.h"
#include "model/scenario_writer.h"
#include "sim/simulator.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/input_hash.h"

namespace {

using zfetch::model::DiagnosticList;
using zfetch::model::Scenario;

constexpr std::string_view kModelAndSchedule = R"(model:
  name: model
  params: {w: [4, 4]}
  children:
    - {name: a, params: {w: [16], v: {shape: [2], frozen: true}}}
schedule: [{train: 1}]
)";

// A private folder made at start-up for the inputs loaded the whole way (nothing else on the
// host is read); in memory where the host has /dev/shm.
std::string g_dir;
std::string g_config_path;
// The fixed scenario without a ds_config, and the HF arguments its loader derives (what
// "auto" values are filled from): world_size 1, one training step.
const Scenario* g_base = nullptr;
zfetch::model::HfTrainingArgs g_hf;

void remove_scratch() {
  (void)std::remove(g_config_path.c_str());
  (void)rmdir(g_dir.c_str());
}

struct Loaded {
  std::optional<Scenario> scenario;
  DiagnosticList errors;
};

// The scenario with the input as its ds_config, as the loader builds it: the config read from
// DeepSpeed's defaults, ZenFlow on when the config turns it on; warnings never stop a load.
Loaded load_with_config(std::string_view text) {
  Loaded loaded;
  zfetch::model::DeepSpeedConfig config;
  DiagnosticList diagnostics;
  zfetch::model::read_ds_config_text(g_config_path, text, g_hf, config, diagnostics);
  for (zfetch::model::Diagnostic& d : diagnostics) {
    if (d.severity != zfetch::diag::Severity::Warning) {
      loaded.errors.push_back(std::move(d));
    }
  }
  if (loaded.errors.empty()) {
    loaded.scenario = *g_base;
    loaded.scenario->config = std::move(config);
    loaded.scenario->zenflow = loaded.scenario->zenflow || loaded.scenario->config.zero.zenflow;
  }
  return loaded;
}

// The same input written to the file and loaded through a scenario that names it must give
// the same scenario, or the same errors (the loader sorts them by position); `loaded` is empty
// for an input that is not text, which the whole load must refuse.
void check_same_as_file_load(std::string_view text, std::optional<Loaded>& loaded) {
  std::FILE* f = std::fopen(g_config_path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr);
  FUZZ_CHECK(std::fwrite(text.data(), 1, text.size(), f) == text.size());
  FUZZ_CHECK(std::fclose(f) == 0);
  const std::string scenario_text =
      "name: fuzz\ndeepspeed_config: ds_config.json\n" + std::string(kModelAndSchedule);
  const zfetch::model::LoadResult whole =
      zfetch::model::parse_scenario_text("fuzz.yaml", scenario_text, g_dir);
  FUZZ_CHECK(whole.scenario.has_value() == whole.diagnostics.empty());
  if (!loaded) {
    FUZZ_CHECK(!whole.scenario);
    return;
  }
  FUZZ_CHECK(whole.scenario.has_value() == loaded->scenario.has_value());
  if (whole.scenario) {
    FUZZ_CHECK(zfetch::model::write_scenario_yaml(*whole.scenario) ==
               zfetch::model::write_scenario_yaml(*loaded->scenario));
    return;
  }
  const auto by_position = [](const zfetch::model::Diagnostic& a,
                              const zfetch::model::Diagnostic& b) {
    return std::tie(a.loc.line, a.loc.col, a.message) < std::tie(b.loc.line, b.loc.col, b.message);
  };
  const auto same = [](const zfetch::model::Diagnostic& a, const zfetch::model::Diagnostic& b) {
    return a.file == b.file && a.loc.line == b.loc.line && a.loc.col == b.loc.col &&
           a.message == b.message;
  };
  const auto sorted = [&](DiagnosticList list) {
    std::stable_sort(list.begin(), list.end(), by_position);
    list.erase(std::unique(list.begin(), list.end(), same), list.end());
    return list;
  };
  const DiagnosticList expected = sorted(whole.diagnostics);
  const DiagnosticList got = sorted(loaded->errors);
  FUZZ_CHECK(std::equal(expected.begin(), expected.end(), got.begin(), got.end(), same));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char shm_pattern[] = "/dev/shm/zfetch-ds-config-fuzz-XXXXXX";
  char tmp_pattern[] = "/tmp/zfetch-ds-config-fuzz-XXXXXX";
  const char* dir = mkdtemp(shm_pattern);
  if (dir == nullptr) {
    dir = mkdtemp(tmp_pattern);
  }
  FUZZ_CHECK(dir != nullptr);
  g_dir = dir;
  g_config_path = g_dir + "/ds_config.json";
  std::atexit(remove_scratch);
  static const zfetch::model::LoadResult base = zfetch::model::parse_scenario_text(
      "base.yaml", "name: fuzz\n" + std::string(kModelAndSchedule));
  FUZZ_CHECK(base.scenario.has_value());
  g_base = &*base.scenario;
  g_hf.world_size = g_base->world_size;
  g_hf.training_steps = 1;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // What is not text (a NUL byte, invalid UTF-8) the file reader refuses before any parsing.
  std::optional<Loaded> loaded;
  if (!zfetch::io::check_text(text)) {
    loaded = load_with_config(text);
  }
  if (input_hash(data, size) % 64 == 0) {
    check_same_as_file_load(text, loaded);
  }
  if (!loaded || !loaded->scenario) {
    return 0;
  }
  const Scenario& s = *loaded->scenario;
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
