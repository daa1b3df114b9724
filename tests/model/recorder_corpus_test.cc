// The recorder's corpus (tools/recorder/corpus/*.json) is written by scenario_to_json.py, a
// second reader of the scenario files. Each committed JSON must say what zfetch's own loader
// reads from its YAML: the module tree, the parameters, the leaf and hook flags, the world size
// and the schedule. A JSON that disagrees (a stale file, or a converter that reads the format
// differently) fails here, not silently on the machine that runs DeepSpeed.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/enum_names.h"
#include "model/leaves.h"
#include "model/load.h"
#include "model/scenario.h"

namespace zfetch::model {
namespace {

using nlohmann::json;

const std::string kCorpus = std::string(ZFETCH_SOURCE_DIR) + "/tools/recorder/corpus/";

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), path << " cannot be read");
  return json::parse(in);
}

// The converter's `op` names, in ScheduleItem::Kind's order.
constexpr base::EnumNames<ScheduleItem::Kind::EmptyPartitionCache> kOpNames(
    "train", "eval", "save_checkpoint", "restart", "load_checkpoint", "empty_partition_cache");

std::string qualified_or_none(const Scenario& s, ParamIndex p) {
  return p == kNone ? std::string() : s.params[p].qualified_name;
}

void check_modules(const Scenario& s, const json& modules) {
  REQUIRE(modules.size() == s.modules.size());
  const std::vector<uint8_t> leaves = z3_leaf_modules(s);
  // The converter leaves out the leaves that the granularity threshold makes, and so hooks their
  // descendants (its note says so): those flags are DeepSpeed's to decide at run time.
  const bool leaves_comparable = s.config.zero.module_granularity_threshold == 0;
  std::vector<bool> hooked(s.modules.size(), false);
  for (size_t m = 0; m < s.modules.size(); ++m) {
    const ModuleSpec& spec = s.modules[m];
    const json& j = modules[m];
    CAPTURE(spec.qualified_name);
    CHECK(j["qualified"] == spec.qualified_name);
    CHECK(j["class"] == spec.class_name);
    CHECK(j["outputs"] == spec.outputs);
    CHECK(j["parent"] == (spec.parent == kNone ? json(nullptr) : json(spec.parent)));
    CHECK(j["children"] == json(spec.children));
    // DeepSpeed hooks a module when it reaches it: below the root, through hooked non-leaves.
    hooked[m] = spec.parent == kNone || (hooked[spec.parent] && leaves[spec.parent] == 0);
    if (leaves_comparable) {
      CHECK(j["hooked"] == hooked[m]);
      CHECK(j["leaf"] == (leaves[m] != 0));
    }
    const json& params = j["params"];
    REQUIRE(params.size() == spec.params.size());
    for (size_t i = 0; i < spec.params.size(); ++i) {
      const ParamSpec& p = s.params[spec.params[i]];
      CAPTURE(p.qualified_name);
      CHECK(params[i]["qualified"] == p.qualified_name);
      CHECK(params[i]["shape"] == json(p.shape));
      CHECK(params[i]["numel"] == p.numel);
      CHECK(params[i]["dtype"] == dtype_name(p.dtype));
      CHECK(params[i]["frozen"] == p.frozen);
      const std::string tied = qualified_or_none(s, p.tied_to);
      CHECK(params[i]["tied_to"] == (tied.empty() ? json(nullptr) : json(tied)));
    }
  }
}

void check_schedule(const Scenario& s, const json& schedule) {
  REQUIRE(schedule.size() == s.schedule.size());
  for (size_t i = 0; i < s.schedule.size(); ++i) {
    const ScheduleItem& item = s.schedule[i];
    const json& j = schedule[i];
    CAPTURE(i);
    CHECK(j["op"] == kOpNames[item.kind]);
    if (item.kind == ScheduleItem::Kind::Train) {
      CHECK(j["steps"] == item.steps);
      CHECK(j["overflow"] == json(item.overflow_steps));
    } else if (item.kind == ScheduleItem::Kind::Eval) {
      CHECK(j["passes"] == item.steps);
    } else if (item.kind == ScheduleItem::Kind::SaveCheckpoint ||
               item.kind == ScheduleItem::Kind::LoadCheckpoint) {
      CHECK(j["tag"] == item.tag);
    } else if (item.kind == ScheduleItem::Kind::Restart) {
      CHECK(j["reuse_model"] == item.reuse_model);
    }
  }
}

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("recorder corpus: every committed JSON says what zfetch reads from its YAML") {
    const json manifest = read_json(kCorpus + "manifest.json");
    const json& entries = manifest["scenarios"];
    REQUIRE(entries.size() > 0);
    size_t compared = 0;
    for (const json& entry : entries) {
      const std::string yaml = entry["yaml"];
      CAPTURE(yaml);
      REQUIRE_MESSAGE(!entry.contains("error"), "the converter could not read " << yaml);
      const LoadResult loaded = load_scenario_file(std::string(ZFETCH_SOURCE_DIR) + "/" + yaml);
      REQUIRE_MESSAGE(loaded.scenario.has_value(), yaml << " does not load");
      const Scenario& s = *loaded.scenario;
      const json j = read_json(kCorpus + entry["json"].get<std::string>());
      CHECK(j["yaml"] == yaml);
      CHECK(j["name"] == s.name);
      CHECK(j["world_size"] == s.world_size);
      CHECK(j["input_requires_grad"] == s.input_requires_grad);
      CHECK(j["zenflow"] == s.zenflow);
      CHECK(j["gradient_accumulation_steps"] == s.config.gradient_accumulation_steps);
      CHECK(j["micro_batch"] == s.config.train_micro_batch_size_per_gpu);
      check_modules(s, j["modules"]);
      check_schedule(s, j["schedule"]);
      ++compared;
    }
    CHECK(compared == entries.size());
  }
}

}  // namespace zfetch::model
