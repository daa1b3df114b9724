// `zfetch run --report FILE.html`: one self-contained HTML page (inline SVG and CSS, no script,
// nothing fetched) of a run: outcome, timeline per rank with landmarks, live parameter memory
// with its peak and what holds it, exposed communication per module and per layer, what to tune.
#pragma once

#include <string>

#include "model/scenario.h"
#include "sim/simulator.h"
#include "sim/timeline/timeline.h"

namespace zfetch::tools {

struct RunReportInput {
  const model::Scenario* scenario = nullptr;
  sim::Discovery discovery = sim::Discovery::ResidentSkip;
  const sim::Outcome* outcome = nullptr;
  const sim::TimelineSummary* summary = nullptr;  ///< with TimelineOptions::per_module
  const sim::Recording* recording = nullptr;      ///< with TimelineOptions::record
  std::string calibration;                        ///< the calibration's name
};

/// The page. Deterministic (no dates, no paths beyond the scenario's); the timeline and the
/// memory plot draw at most one mark per pixel column and row, so the size stays bounded
/// for any run length.
std::string run_report_html(const RunReportInput& input);

}  // namespace zfetch::tools
