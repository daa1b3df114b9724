// A sweep's results for people (a table in human units) and for programs (JSON, CSV).
// docs/sweep-format.md documents the JSON and CSV; docs/sweep.schema.json is the JSON Schema.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/scenario.h"
#include "sim/explore/sweep.h"
#include "sim/simulator.h"

namespace zfetch::tools {

/// How a cell ended: "pass" (the run completed, with or without trace invalidations), "failed"
/// (DeepSpeed would raise) or "error" (it could not run: a bad value or calibration).
std::string_view cell_status(const sim::SweepPoint& point);

/// Whether a cell's timings stand for a training step: only completed runs have them, so a run
/// cut short by its failure never looks fast.
bool cell_has_timing(const sim::SweepPoint& point);

/// Orders cells for `--sort`: completed cells by `key` ascending (ties in combination order),
/// then failed and errored cells in combination order. `key` is step_time, exposed_comm or
/// peak_live; returns false for another key.
bool sort_cells(std::vector<sim::SweepPoint>& points, std::string_view key);

/// One `--bisect` search, under one combination of the `--set` values.
struct BisectionReport {
  std::vector<std::string> fixed_values;  ///< one per `--set` axis
  std::string key;
  int64_t lo = 0;
  int64_t hi = 0;
  sim::BisectResult result;
};

/// What the sweep ran, for the JSON header.
struct SweepContext {
  const model::Scenario* scenario = nullptr;
  sim::Discovery discovery = sim::Discovery::ResidentSkip;
};

/// The fixed-width table: axis values, outcome, the last step's time and exposed
/// communication ("-" for cells without timing), peak live parameters.
std::string sweep_table(const std::vector<sim::SweepAxis>& axes,
                        const std::vector<sim::SweepPoint>& points, bool colour);

/// `--json` of a grid sweep: {"format":"zfetch-sweep","version":1,"mode":"grid",...}.
std::string sweep_json(const SweepContext& context, const std::vector<sim::SweepAxis>& axes,
                       const std::vector<sim::SweepPoint>& points);

/// `--json` of `--bisect` (one search per combination of the `--set` values).
std::string bisect_json(const SweepContext& context, const std::vector<sim::SweepAxis>& fixed_axes,
                        const std::vector<BisectionReport>& searches);

/// `--csv` (RFC 4180): a header row of the axis keys and result columns, one row per cell.
std::string sweep_csv(const std::vector<sim::SweepAxis>& axes,
                      const std::vector<sim::SweepPoint>& points);

}  // namespace zfetch::tools
