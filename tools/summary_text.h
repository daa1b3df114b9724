// The per-step and per-module timeline tables that `zfetch run` prints, in human units.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "model/scenario.h"
#include "sim/timeline/timeline.h"

namespace zfetch::tools {

struct SummaryTextOptions {
  bool per_module = false;  ///< add the per-module table of each rank
  /// Rows of the per-module table (the modules with the most exposed communication); 0: all.
  size_t module_rows = 20;
  /// The step table stops after this optimizer step, and the run totals are left out: the
  /// ranks diverged in it, so nothing after it runs (the simulation ran each rank on).
  int64_t last_step = INT64_MAX;
};

/// One row per (step, rank): step time, compute, exposed communication, gathers, gathered
/// bytes, peak live parameters, then one line of run totals. The per-module table is sorted
/// by exposed communication (most first; ties in module order) and says how many rows it
/// left out. Times and sizes in human units (tools/human_units.h); `--json` has the exact
/// integers.
std::string summary_text(const sim::TimelineSummary& summary, const model::Scenario& scenario,
                         const SummaryTextOptions& options);

/// Calls its argument on every step summary in sim::step_order (a sim::StepLog's, say).
using StepSource = std::function<void(const std::function<void(const sim::StepSummary&)>&)>;

/// The same text written to `out` as it is formatted, with the steps from `steps` instead of
/// summary.steps: the memory it needs does not grow with the number of steps.
void write_summary_text(std::FILE* out, const sim::TimelineSummary& summary,
                        const StepSource& steps, const model::Scenario& scenario,
                        const SummaryTextOptions& options);

}  // namespace zfetch::tools
