// Chakra execution traces from the timeline's recording (see chakra.h, docs/chakra.md).
#include "sim/export/chakra.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/export/chakra_et.pb.h"
#include "sim/export/slice_names.h"
#include "trace/names.h"

namespace zfetch::sim {
namespace {

namespace et = zfetch::chakra;

// Appends `message` with its length as a varint before it: the framing Chakra's readers expect
// (one message after another, nothing else in the file). Deterministic serialization, so the
// same recording gives the same bytes.
void append_delimited(const google::protobuf::MessageLite& message, std::string& out) {
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  coded.WriteVarint32(static_cast<uint32_t>(message.ByteSizeLong()));
  message.SerializeWithCachedSizes(&coded);
}

template <typename Message>
et::AttributeProto& add_attr(Message& message, std::string_view name) {
  et::AttributeProto* attr = message.add_attr();
  attr->set_name(std::string(name));
  return *attr;
}

// Chakra's times are whole microseconds; the timeline's are ns (rounded to nearest here; the
// exact value is in the node's duration_ns attribute).
uint64_t micros(Tick ns) {
  return static_cast<uint64_t>(std::max<Tick>(0, ns) + 500) / 1000;
}

std::string gather_name(const Recording& recording, const model::Scenario& scenario,
                        const Slice& slice) {
  std::string name(slice_kind_name(slice.kind));
  if (slice.params_count > 0) {
    name += ' ';
    name += param_display_name(scenario, recording.slice_params[slice.params_begin]);
    if (slice.params_count > 1) {
      name += " +" + std::to_string(slice.params_count - 1) + " more";
    }
  }
  return name;
}

// Whether `copy` is the h2d copy that feeds gather `slice`: Timeline::flush_group records the
// copy right before its gather, over the same params.
bool feeds(const Slice& copy, const Slice& slice) {
  return copy.kind == Slice::Kind::H2d && copy.rank == slice.rank &&
         copy.params_begin == slice.params_begin && copy.params_count == slice.params_count;
}

void sort_unique(google::protobuf::RepeatedField<uint64_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.Truncate(static_cast<int>(std::unique(ids.begin(), ids.end()) - ids.begin()));
}

// Builds one rank's nodes in issue order, tracking what each dependency rule needs.
class RankGraph {
 public:
  RankGraph(const Recording& recording, const model::Scenario& scenario, int32_t rank)
      : recording_(recording), scenario_(scenario), node_of_(recording.slices.size(), kNoNode) {
    for (const Flow& f : recording.flows) {
      if (recording.slices[f.to_slice].rank == rank) {
        waits_.emplace_back(f.to_slice, f.from_slice);
      }
    }
    std::sort(waits_.begin(), waits_.end());
    for (const Landmark& l : recording.landmarks) {
      if (l.rank == rank && l.kind == Landmark::Kind::OptimizerStep) {
        drains_.push_back(l.start_ns);
      }
    }
    std::sort(drains_.begin(), drains_.end());
  }

  // The node of slice `index`, with its dependencies on the nodes built before it.
  void build(uint32_t index, et::Node& node) {
    const Slice& s = recording_.slices[index];
    const uint64_t id = next_id_++;
    node_of_[index] = id;
    node.set_id(id);
    node.set_start_time_micros(micros(s.start_ns));
    node.set_duration_micros(micros(s.dur_ns));
    std::vector<Done>& stream = done_[static_cast<size_t>(s.stream)];
    if (!stream.empty()) {
      node.add_ctrl_deps(stream.back().id);  // a stream runs one operation at a time
    }
    switch (s.kind) {
    case Slice::Kind::Compute:
      build_compute(index, s, node);
      break;
    case Slice::Kind::Gather:
    case Slice::Kind::Prefetch:
    case Slice::Kind::GetterGather:
    case Slice::Kind::PersistentGather:
      node.set_name(gather_name(recording_, scenario_, s));
      node.set_type(et::COMM_COLL_NODE);
      add_attr(node, "comm_type").set_int64_val(et::ALL_GATHER);
      add_attr(node, "comm_size").set_int64_val(s.bytes);
      issued_after_compute(node);
      if (index > 0 && feeds(recording_.slices[index - 1], s)) {
        node.add_data_deps(node_of_[index - 1]);
      }
      break;
    case Slice::Kind::H2d:
      node.set_name(gather_name(recording_, scenario_, s));
      node.set_type(et::MEM_LOAD_NODE);
      add_attr(node, "tensor_size")
          .set_uint64_val(static_cast<uint64_t>(std::max<int64_t>(0, s.bytes)));
      issued_after_compute(node);
      break;
    case Slice::Kind::ReduceScatter:
      node.set_name(node_name("reduce_scatter", s));
      node.set_type(et::COMM_COLL_NODE);
      add_attr(node, "comm_type").set_int64_val(et::REDUCE_SCATTER);
      add_attr(node, "comm_size").set_int64_val(s.bytes);
      if (last_compute_) {
        node.add_data_deps(*last_compute_);  // the module's backward made the gradients
      }
      break;
    }
    add_attr(node, "is_cpu_op").set_bool_val(false);
    add_attr(node, "duration_ns").set_int64_val(s.dur_ns);
    add_attr(node, "zfetch_kind").set_string_val(std::string(slice_kind_name(s.kind)));
    sort_unique(*node.mutable_ctrl_deps());
    sort_unique(*node.mutable_data_deps());
    stream.push_back({id, s.start_ns + s.dur_ns});
  }

 private:
  static constexpr uint64_t kNoNode = UINT64_MAX;
  struct Done {
    uint64_t id = 0;
    Tick end_ns = 0;
  };

  std::string node_name(std::string_view what, const Slice& s) const {
    return std::string(what) + ' ' + std::string(module_display_name(scenario_, s.module)) + ' ' +
           std::string(trace::format_as(s.phase));
  }

  void build_compute(uint32_t index, const Slice& s, et::Node& node) {
    node.set_name(node_name("compute", s));
    node.set_type(et::COMP_NODE);
    // An optimizer step drained every stream before the computes after it.
    while (next_drain_ < drains_.size() && drains_[next_drain_] <= s.start_ns) {
      for (size_t other = 1; other < done_.size(); ++other) {
        if (const std::optional<uint64_t> id = last_done_by(other, drains_[next_drain_])) {
          node.add_ctrl_deps(*id);
        }
      }
      ++next_drain_;
    }
    const auto first =
        std::lower_bound(waits_.begin(), waits_.end(), std::pair<uint32_t, uint32_t>{index, 0});
    for (auto w = first; w != waits_.end() && w->first == index; ++w) {
      if (node_of_[w->second] != kNoNode) {
        node.add_data_deps(node_of_[w->second]);
      }
    }
    last_compute_ = node.id();
  }

  // A collective is issued by the host when the compute stream reaches it: after the compute
  // before it.
  void issued_after_compute(et::Node& node) const {
    if (last_compute_) {
      node.add_ctrl_deps(*last_compute_);
    }
  }

  std::optional<uint64_t> last_done_by(size_t stream, Tick t) const {
    const std::vector<Done>& nodes = done_[stream];
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (it->end_ns <= t) {
        return it->id;
      }
    }
    return std::nullopt;
  }

  const Recording& recording_;
  const model::Scenario& scenario_;
  std::vector<uint64_t> node_of_;                     ///< per slice of the recording
  std::vector<std::pair<uint32_t, uint32_t>> waits_;  ///< (compute slice, gather slice), sorted
  std::vector<Tick> drains_;                          ///< optimizer steps, in time order
  size_t next_drain_ = 0;
  std::array<std::vector<Done>, kStreamCount> done_;  ///< per stream, in issue order
  std::optional<uint64_t> last_compute_;
  uint64_t next_id_ = 0;
};

}  // namespace

std::string chakra_metadata(const model::Scenario& scenario, int32_t simulated_rank,
                            int32_t world_rank) {
  et::GlobalMetadata metadata;
  metadata.set_version(kChakraSchemaVersion);
  add_attr(metadata, "producer").set_string_val("zfetch");
  add_attr(metadata, "scenario").set_string_val(scenario.name);
  add_attr(metadata, "world_size").set_int64_val(scenario.world_size);
  add_attr(metadata, "rank").set_int64_val(world_rank);
  add_attr(metadata, "simulated_rank").set_int64_val(simulated_rank);
  std::string out;
  append_delimited(metadata, out);
  return out;
}

std::string chakra_nodes(const Recording& recording, const model::Scenario& scenario,
                         int32_t simulated_rank) {
  std::string out;
  RankGraph graph(recording, scenario, simulated_rank);
  et::Node node;
  for (uint32_t i = 0; i < recording.slices.size(); ++i) {
    if (recording.slices[i].rank != simulated_rank) {
      continue;
    }
    node.Clear();
    graph.build(i, node);
    append_delimited(node, out);
  }
  return out;
}

std::string chakra_trace(const Recording& recording, const model::Scenario& scenario,
                         int32_t simulated_rank, int32_t world_rank) {
  return chakra_metadata(scenario, simulated_rank, world_rank) +
         chakra_nodes(recording, scenario, simulated_rank);
}

}  // namespace zfetch::sim
