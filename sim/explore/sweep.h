// Parameter sweeps: simulate a scenario with a timeline for every combination of config values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/scenario.h"
#include "sim/simulator.h"
#include "sim/timeline/calibration.h"

namespace zfetch::sim {

/// One `--set KEY=V1,V2,...`: a key of model::set_config_value and its values, in order.
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

struct SweepOptions {
  Options simulator;
  unsigned jobs = 1;  ///< worker threads; results do not depend on it
  /// Used for every point instead of resolve_calibration(scenario) when set.
  std::optional<Calibration> calibration;
  /// A point whose run emits more simulated events than this stops there, as an error point.
  uint64_t max_events = UINT64_MAX;
};

/// The result of one combination.
struct SweepPoint {
  std::vector<std::string> values;  ///< one per axis
  std::string error;                ///< why it did not run (bad value, calibration); "" if it ran
  Outcome outcome;
  int32_t last_step = 0;        ///< the last step with events
  Tick step_ns = 0;             ///< that step's time (max over ranks): the steady state
  Tick exposed_comm_ns = 0;     ///< that step's exposed communication (max over ranks)
  Tick end_ns = 0;              ///< the whole run
  int64_t peak_live_bytes = 0;  ///< the whole run, max over ranks
};

/// Runs `base` with the values of one combination applied in axis order.
SweepPoint run_sweep_point(const model::Scenario& base, const std::vector<SweepAxis>& axes,
                           const std::vector<std::string>& values, const SweepOptions& options);

/// Every combination (the last axis varies fastest), run on `options.jobs` threads; the result
/// at index i is combination i whatever the thread count.
std::vector<SweepPoint> run_sweep(const model::Scenario& base, const std::vector<SweepAxis>& axes,
                                  const SweepOptions& options);

/// Binary search for the boundary where the outcome kind changes on an integer key.
struct BisectResult {
  std::string error;     ///< "" when the search ran
  bool changed = false;  ///< the outcome at `lo` differs from the outcome at `hi`
  int64_t below = 0;     ///< the largest value with lo's outcome (== lo when !changed)
  int64_t above = 0;     ///< below + 1, the smallest value with another outcome (== hi if !changed)
  SweepPoint below_point;
  SweepPoint above_point;
  int runs = 0;  ///< simulations made
};

/// Assumes the outcome is monotone in `key` on [lo, hi] (one change at most); ceil(log2(hi-lo))
/// + 2 simulations.
BisectResult bisect(const model::Scenario& base, const std::string& key, int64_t lo, int64_t hi,
                    const SweepOptions& options);

}  // namespace zfetch::sim
