// The timeline as Chrome trace event JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/spill_file.h"
#include "model/scenario.h"
#include "sim/timeline/timeline.h"

namespace zfetch::sim {

/// What the recording does not hold: the failure's one-line summary and DeepSpeed's message.
struct ChromeTraceNotes {
  std::string failure_title;    ///< e.g. "fetch-queue-mismatch in phase recompute of 'adapter'"
  std::string failure_message;  ///< shown in the failure marker's args
};

/// The Trace Event Format ("JSON Object Format": {"traceEvents":[...],"displayTimeUnit":"ns"}):
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
/// exact. Byte-deterministic: the same run gives the same text, whichever way it is written.

/// Renders a whole in-memory Recording (Timeline with TimelineOptions::record).
std::string chrome_trace_json(const Recording& recording, const model::Scenario& scenario,
                              const ChromeTraceNotes& notes = {});

/// A flow's two ends, as the trace draws them.
struct FlowEnds {
  int32_t from_rank = 0;
  Stream from_stream = Stream::Comm;
  Tick from_ns = 0;  ///< the middle of the gather slice
  int32_t to_rank = 0;
  Stream to_stream = Stream::Compute;
  Tick to_ns = 0;  ///< the start of the compute slice
};

/// The ranks that appear and the dotted prefix every slice label shares: what the trace's
/// beginning needs from its whole length, kept as the parts go by.
class ChromeTraceIndex {
 public:
  void add_rank(int32_t rank);
  void add_slice(const Slice& slice, const model::Scenario& scenario, model::ParamIndex first);
  [[nodiscard]] const std::vector<int32_t>& ranks() const { return ranks_; }  ///< increasing
  /// The longest prefix ending in '.' that every label shares ("base_model.model." under PEFT).
  [[nodiscard]] std::string label_prefix() const;

 private:
  std::vector<int32_t> ranks_;
  bool any_label_ = false;
  std::string_view common_;  ///< longest common prefix of the labels so far (scenario's strings)
};

/// The Chrome trace of a run written as the timeline produces it (TimelineOptions::recorder):
/// each part (slices, flows, landmarks, counters) goes to a temporary file in `spill_directory`,
/// and write() renders them in the format's order. Memory stays flat in the length of the run
/// (a few blocks per part, the ranks, and one gather's params); disk use is about a third of the
/// output's size. The text is byte-identical to chrome_trace_json's.
class ChromeTraceWriter final : public RecordingSink {
 public:
  /// `scenario` must outlive the writer; "" for the system's temporary directory.
  ChromeTraceWriter(const model::Scenario& scenario, const std::string& spill_directory);

  void on_gather_params(std::span<const model::ParamIndex> params) override;
  void on_slice(const Slice& slice) override;
  void on_flow(uint64_t from_index, const Slice& from, uint64_t to_index, const Slice& to) override;
  void on_live_bytes(const CounterSample& sample) override;
  void on_landmark(const Landmark& landmark) override;
  void on_peak(int32_t /*rank*/, const LivePeak& /*peak*/) override {}

  /// Writes the whole trace to `out` (its write errors show in ferror). False, with error(), when
  /// a temporary file failed; `out` then holds an incomplete trace.
  bool write(std::FILE* out, const ChromeTraceNotes& notes = {});
  /// Empty while all is well; otherwise what failed with the temporary files.
  [[nodiscard]] std::string error() const;

 private:
  const model::Scenario& scenario_;
  io::SpillLog<Slice> slices_;
  io::SpillLog<model::ParamIndex> slice_params_;  ///< params_count per slice, in slice order
  io::SpillLog<FlowEnds> flows_;
  io::SpillLog<Landmark> landmarks_;
  io::SpillLog<CounterSample> live_bytes_;
  std::vector<model::ParamIndex> gather_params_;  ///< of the gather slices that follow
  ChromeTraceIndex index_;
};

}  // namespace zfetch::sim
