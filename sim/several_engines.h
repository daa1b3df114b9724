// One process that runs several engines, each its own model and coordinator (`engines:`).
#pragma once

#include <cstdint>

#include "model/scenario.h"
#include "sim/collectives.h"
#include "sim/process.h"
#include "trace/sink.h"

namespace zfetch::sim {

/// Builds the engines of `scenario.engines` in order, then runs the schedule, each item on
/// its engine, on rank `rank`. The engines share the process's counters (param and module ids,
/// all-gather ids) and FWD_MODULE_STACK; events of all engines go to `sink` in one numbering.
RankResult run_several_engines(const model::Scenario& scenario, const Options& options,
                               int32_t rank, trace::EventSink& sink, CollectiveLog& collectives,
                               uint64_t first_seq);

}  // namespace zfetch::sim
