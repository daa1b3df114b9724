// The timeline as Chrome trace event JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.
#pragma once

#include <string>

#include "model/scenario.h"
#include "sim/timeline/timeline.h"

namespace zfetch::sim {

/// Renders a Recording (Timeline with TimelineOptions::record) in the Trace Event Format
/// ("JSON Object Format": {"traceEvents":[...],"displayTimeUnit":"ns"}):
///   - pid = rank, tid = stream (0 compute, 1 comm, 2 h2d, 3 rs), named by "M" metadata events;
///   - one complete event ("X") per slice: compute slices are named by module, gathers by
///     their first param (with "+N more"), with every param and the bytes in args;
///   - one flow ("s" in the gather, "f" with "bp":"e" at the start of the compute slice that
///     waited for it) per (gather, compute) pair;
///   - "C" counter events "live_bytes" per rank.
/// Timestamps are us (the format's unit) printed from integer ns with 3 decimals, so they are
/// exact. Byte-deterministic: the same recording gives the same text.
std::string chrome_trace_json(const Recording& recording, const model::Scenario& scenario);

}  // namespace zfetch::sim
