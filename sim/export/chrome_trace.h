// The timeline as Chrome trace event JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.
#pragma once

#include <string>

#include "model/scenario.h"
#include "sim/timeline/timeline.h"

namespace zfetch::sim {

/// What the recording does not hold: the failure's one-line summary and DeepSpeed's message.
struct ChromeTraceNotes {
  std::string failure_title;    ///< e.g. "fetch-queue-mismatch in phase recompute of 'adapter'"
  std::string failure_message;  ///< shown in the failure marker's args
};

/// Renders a Recording (Timeline with TimelineOptions::record) in the Trace Event Format
/// ("JSON Object Format": {"traceEvents":[...],"displayTimeUnit":"ns"}):
///   - pid = rank ("rank N"); tids 0-3 the streams (compute, all-gather, h2d, reduce-scatter),
///     then landmark tracks above them: optimizer steps, micro-steps, passes, phases (complete
///     "X" spans) and events (instants "i": optimizer steps, trace invalidations, restarts,
///     checkpoints, and the failure with its message, drawn across every track);
///   - one complete event ("X") per slice: compute slices are named by module, gathers by
///     their first param (with "+N more"), without the dotted prefix all names share; the
///     full names, bytes and every param are in args;
///   - one flow ("s" in the gather, "f" with "bp":"e" at the start of the compute slice that
///     waited for it) per (gather, compute) pair;
///   - counters ("C") per rank: "live gathered bytes", "in-flight bytes" (issued and not yet
///     gathered) and "stream utilisation %" (each stream's busy share in 100 windows).
/// Timestamps are us (the format's unit) printed from integer ns with 3 decimals, so they are
/// exact. Byte-deterministic: the same recording gives the same text.
std::string chrome_trace_json(const Recording& recording, const model::Scenario& scenario,
                              const ChromeTraceNotes& notes = {});

}  // namespace zfetch::sim
