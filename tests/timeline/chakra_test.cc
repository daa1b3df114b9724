// The Chakra execution traces decode with the schema, and their nodes and dependencies match
// the simulated timeline one for one.
#include "sim/export/chakra.h"

#include <doctest/doctest.h>
#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "model/config_override.h"
#include "model/load.h"
#include "sim/export/chakra_et.pb.h"
#include "sim/simulator.h"
#include "sim/timeline/cost_model.h"
#include "sim/timeline/timeline.h"
#include "tests/timeline/timeline_test_util.h"

namespace zfetch::sim {
namespace {

namespace et = zfetch::chakra;

struct Decoded {
  et::GlobalMetadata metadata;
  std::vector<et::Node> nodes;
  bool ok = false;  ///< every message parsed and the bytes ended after the last one
};

// Reads Chakra's framing: a varint length, then that many bytes of one message, repeated.
Decoded decode(const std::string& bytes) {
  Decoded d;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  const auto read = [&](google::protobuf::MessageLite& message) {
    uint32_t size = 0;
    if (!in.ReadVarint32(&size)) {
      return false;
    }
    const auto limit = in.PushLimit(static_cast<int>(size));
    const bool parsed = message.ParseFromCodedStream(&in) && in.BytesUntilLimit() == 0;
    in.PopLimit(limit);
    return parsed;
  };
  if (!read(d.metadata)) {
    return d;
  }
  while (in.CurrentPosition() < static_cast<int>(bytes.size())) {
    et::Node node;
    if (!read(node)) {
      return d;
    }
    d.nodes.push_back(std::move(node));
  }
  d.ok = true;
  return d;
}

const et::AttributeProto* attr(const et::Node& node, const std::string& name) {
  for (const et::AttributeProto& a : node.attr()) {
    if (a.name() == name) {
      return &a;
    }
  }
  return nullptr;
}

model::Scenario load(const char* path) {
  const model::LoadResult r = model::load_scenario_file(std::string(ZFETCH_SOURCE_DIR "/") + path);
  REQUIRE(r.diagnostics.empty());
  return *r.scenario;
}

Recording record(const model::Scenario& scenario) {
  const AnalyticalCostModel cost(scenario, testing::round_calibration());
  trace::NullSink out;
  Timeline timeline(scenario, cost, out, {.record = true});
  simulate(scenario, Options{Discovery::ResidentSkip}, timeline);
  timeline.finish();
  return timeline.recording();
}

bool is_gather(Slice::Kind kind) {
  return kind == Slice::Kind::Gather || kind == Slice::Kind::Prefetch ||
         kind == Slice::Kind::GetterGather || kind == Slice::Kind::PersistentGather;
}

// Node i of `rank`'s file against the rank's i-th slice: kind, collective type and size, times;
// every dependency names an earlier node (so the graph is acyclic); a compute's data deps are
// exactly the gathers the timeline's flows say it waited for. Returns the node count by type.
std::map<int, int> check_rank(const Recording& recording, const model::Scenario& scenario,
                              int32_t rank) {
  const Decoded d = decode(chakra_trace(recording, scenario, rank, rank));
  REQUIRE(d.ok);
  CHECK(d.metadata.version() == kChakraSchemaVersion);
  std::vector<uint32_t> slices;  // node id -> slice index
  std::map<uint32_t, uint64_t> node_of;
  for (uint32_t i = 0; i < recording.slices.size(); ++i) {
    if (recording.slices[i].rank == rank) {
      node_of[i] = slices.size();
      slices.push_back(i);
    }
  }
  REQUIRE(d.nodes.size() == slices.size());
  std::map<uint64_t, std::vector<uint64_t>> waited;  // compute node -> gather nodes
  for (const Flow& f : recording.flows) {
    if (recording.slices[f.to_slice].rank == rank) {
      waited[node_of.at(f.to_slice)].push_back(node_of.at(f.from_slice));
    }
  }
  std::map<int, int> by_type;
  for (size_t id = 0; id < d.nodes.size(); ++id) {
    const et::Node& node = d.nodes[id];
    const Slice& s = recording.slices[slices[id]];
    CAPTURE(id);
    CAPTURE(node.name());
    CHECK(node.id() == id);
    ++by_type[node.type()];
    for (uint64_t dep : node.ctrl_deps()) {
      CHECK(dep < id);
    }
    for (uint64_t dep : node.data_deps()) {
      CHECK(dep < id);
    }
    REQUIRE(attr(node, "duration_ns") != nullptr);
    CHECK(attr(node, "duration_ns")->int64_val() == s.dur_ns);
    CHECK(node.duration_micros() == static_cast<uint64_t>((s.dur_ns + 500) / 1000));
    REQUIRE(attr(node, "is_cpu_op") != nullptr);
    CHECK(attr(node, "is_cpu_op")->value_case() == et::AttributeProto::kBoolVal);
    CHECK_FALSE(attr(node, "is_cpu_op")->bool_val());
    if (s.kind == Slice::Kind::Compute) {
      CHECK(node.type() == et::COMP_NODE);
      const std::vector<uint64_t> data(node.data_deps().begin(), node.data_deps().end());
      std::vector<uint64_t> expected = waited[id];
      std::sort(expected.begin(), expected.end());
      CHECK(data == expected);
    } else if (is_gather(s.kind) || s.kind == Slice::Kind::ReduceScatter) {
      CHECK(node.type() == et::COMM_COLL_NODE);
      REQUIRE(attr(node, "comm_type") != nullptr);
      REQUIRE(attr(node, "comm_size") != nullptr);
      CHECK(attr(node, "comm_type")->int64_val() ==
            (is_gather(s.kind) ? et::ALL_GATHER : et::REDUCE_SCATTER));
      CHECK(attr(node, "comm_size")->int64_val() == s.bytes);
      CHECK(s.bytes > 0);
    } else {
      CHECK(node.type() == et::MEM_LOAD_NODE);
      REQUIRE(attr(node, "tensor_size") != nullptr);
      CHECK(attr(node, "tensor_size")->uint64_val() == static_cast<uint64_t>(s.bytes));
    }
  }
  return by_type;
}

std::map<int, int> count_slices(const Recording& recording, int32_t rank) {
  std::map<int, int> by_type;
  for (const Slice& s : recording.slices) {
    if (s.rank == rank) {
      ++by_type[s.kind == Slice::Kind::Compute ? et::COMP_NODE
                : s.kind == Slice::Kind::H2d   ? et::MEM_LOAD_NODE
                                               : et::COMM_COLL_NODE];
    }
  }
  return by_type;
}

TEST_SUITE("timeline") {
  TEST_CASE("chakra: the seed's trace (offload, 2 ranks) matches its timeline node for node") {
    const model::Scenario scenario = load("scenarios/seed/resident_adapter_resume.yaml");
    const Recording recording = record(scenario);
    const std::map<int, int> nodes = check_rank(recording, scenario, 0);
    CHECK(nodes == count_slices(recording, 0));
    CHECK(nodes.at(et::COMP_NODE) > 0);
    CHECK(nodes.at(et::COMM_COLL_NODE) > 0);
    CHECK(nodes.at(et::MEM_LOAD_NODE) > 0);  // offload_param: each gather copies first
    // A gather of an offloaded param depends on its copy, which comes right before it.
    const Decoded d = decode(chakra_trace(recording, scenario, 0, 0));
    int fed = 0;
    for (size_t id = 1; id < d.nodes.size(); ++id) {
      if (d.nodes[id].type() == et::COMM_COLL_NODE && d.nodes[id - 1].type() == et::MEM_LOAD_NODE) {
        CHECK(std::find(d.nodes[id].data_deps().begin(), d.nodes[id].data_deps().end(), id - 1) !=
              d.nodes[id].data_deps().end());
        ++fed;
      }
    }
    CHECK(fed > 0);
  }

  TEST_CASE("chakra: 32 layers with reduce-scatters and optimizer steps") {
    const model::Scenario scenario = load("scenarios/timeline/llama_32l_lora_resume.yaml");
    const Recording recording = record(scenario);
    const std::map<int, int> nodes = check_rank(recording, scenario, 0);
    CHECK(nodes == count_slices(recording, 0));
    const Decoded d = decode(chakra_trace(recording, scenario, 0, 0));
    int reduce_scatters = 0;
    for (const et::Node& n : d.nodes) {
      const et::AttributeProto* type = attr(n, "comm_type");
      reduce_scatters += type != nullptr && type->int64_val() == et::REDUCE_SCATTER ? 1 : 0;
    }
    CHECK(reduce_scatters > 0);
  }

  TEST_CASE("chakra: the same recording gives the same bytes; metadata names the ranks") {
    const model::Scenario scenario = load("scenarios/seed/resident_adapter_resume.yaml");
    const Recording a = record(scenario);
    const Recording b = record(scenario);
    CHECK(chakra_trace(a, scenario, 0, 1) == chakra_trace(b, scenario, 0, 1));
    const Decoded d = decode(chakra_trace(a, scenario, 0, 1));
    REQUIRE(d.ok);
    std::map<std::string, int64_t> ints;
    for (const et::AttributeProto& x : d.metadata.attr()) {
      ints[x.name()] = x.int64_val();
    }
    CHECK(ints["rank"] == 1);
    CHECK(ints["simulated_rank"] == 0);
    CHECK(ints["world_size"] == scenario.world_size);
  }

  TEST_CASE("chakra: ranks that were not simulated take the schedule of the unnamed rank") {
    // Ranks 0 and 1 choose their module by rank; ranks 2 and 3 run what no `when` names.
    model::Scenario scenario = load("scenarios/deepspeed_tests/choose_module_by_rank-leaf.yaml");
    REQUIRE(!model::set_config_value(scenario, "world_size", "4"));
    CHECK(simulated_rank_of_each_rank(scenario) == std::vector<int32_t>{0, 1, 2, 2});
    const model::Scenario seed = load("scenarios/seed/resident_adapter_resume.yaml");
    CHECK(simulated_rank_of_each_rank(seed) == std::vector<int32_t>{0, 0});
    // Each simulated rank's file matches its own slices.
    const Recording recording = record(scenario);
    for (int32_t rank : {0, 1, 2}) {
      CAPTURE(rank);
      CHECK(check_rank(recording, scenario, rank) == count_slices(recording, rank));
    }
  }
}

}  // namespace
}  // namespace zfetch::sim
