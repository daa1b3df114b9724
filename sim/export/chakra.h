// The timeline as Chakra execution traces (MLCommons Chakra's ET format), for ASTRA-sim and the
// other tools that read Chakra. Built only where protobuf is found (ZFETCH_HAVE_CHAKRA);
// docs/chakra.md documents the mapping from timeline slices to nodes.
#pragma once

#include <cstdint>
#include <string>

#include "model/scenario.h"
#include "sim/timeline/timeline.h"

namespace zfetch::sim {

/// GlobalMetadata.version: the value Chakra's own trace generators write.
inline constexpr const char* kChakraSchemaVersion = "0.0.4";

/// One rank's execution trace: a GlobalMetadata message, then one Node per slice of
/// `simulated_rank` in the Recording (Timeline with TimelineOptions::record), in issue order,
/// each message preceded by its length as a varint (Chakra's file framing). Node ids count from
/// 0 in that order, and every dependency names an earlier node:
///   - COMP_NODE per compute slice: ctrl dep on the previous compute, data deps on the
///     gathers it waited for (the timeline's flows), and after an optimizer step on the last
///     node of every other stream that the step drained;
///   - COMM_COLL_NODE per gather slice (comm_type ALL_GATHER, comm_size its bytes): ctrl deps on
///     the previous gather and on the compute before its issue, data dep on its h2d copy;
///   - MEM_LOAD_NODE per h2d copy (tensor_size its shard bytes);
///   - COMM_COLL_NODE per reduce-scatter (REDUCE_SCATTER): data dep on the backward compute
///     before it, ctrl dep on the previous reduce-scatter.
/// `world_rank` is the rank the file is for (the metadata names both). Byte-deterministic.
/// Equal to chakra_metadata(scenario, simulated_rank, world_rank) followed by
/// chakra_nodes(recording, scenario, simulated_rank).
std::string chakra_trace(const Recording& recording, const model::Scenario& scenario,
                         int32_t simulated_rank, int32_t world_rank);

/// The framed GlobalMetadata message that starts `world_rank`'s file.
std::string chakra_metadata(const model::Scenario& scenario, int32_t simulated_rank,
                            int32_t world_rank);

/// The framed Node messages of `simulated_rank`: the same for every world rank that runs its
/// schedule, so a writer of many files builds them once.
std::string chakra_nodes(const Recording& recording, const model::Scenario& scenario,
                         int32_t simulated_rank);

}  // namespace zfetch::sim
