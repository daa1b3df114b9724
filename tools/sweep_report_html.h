// `zfetch sweep ... --report FILE.html`: one self-contained HTML page of a grid sweep: the
// cells' table, and plots of the step time and the peak live parameter memory against the swept
// values, with failed cells marked (never drawn as values).
#pragma once

#include <string>
#include <vector>

#include "sim/explore/sweep.h"
#include "tools/sweep_output.h"

namespace zfetch::tools {

/// The page. The plots' x axis is the first `--set` key's values, in the order given; each
/// combination of the other keys' values is one series. Deterministic.
std::string sweep_report_html(const SweepContext& context, const std::vector<sim::SweepAxis>& axes,
                              const std::vector<sim::SweepPoint>& points);

}  // namespace zfetch::tools
