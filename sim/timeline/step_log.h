// Step summaries on disk instead of in memory (TimelineOptions::steps), for runs of any length.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/spill_file.h"
#include "sim/timeline/timeline.h"

namespace zfetch::sim {

/// Keeps every step summary in a temporary file in `directory` ("": the system's) and reads
/// them back in the order TimelineSummary::steps has, by (step, rank). Each rank's steps
/// arrive in step order, so the arrivals are a few sorted runs (about two per simulated rank),
/// merged as they are read: memory is a block per run, whatever the number of steps.
class StepLog final : public StepSink {
 public:
  explicit StepLog(const std::string& directory) : log_(directory) {}
  void on_step(const StepSummary& step) override;

  /// Calls `visit` on every step in (step, rank) order; false when the temporary file failed.
  bool for_each(const std::function<void(const StepSummary&)>& visit);
  [[nodiscard]] const std::string& error() const { return log_.error(); }

 private:
  io::SpillLog<StepSummary> log_;
  std::vector<uint64_t> run_starts_;  ///< where each sorted run of arrivals begins
  StepSummary last_;
};

}  // namespace zfetch::sim
