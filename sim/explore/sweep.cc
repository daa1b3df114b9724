// Parameter sweeps and bisection over config values (see sweep.h).
#include "sim/explore/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "diag/render.h"
#include "model/config_override.h"
#include "sim/timeline/cost_model.h"
#include "sim/timeline/timeline.h"
#include "trace/bounded_sink.h"
#include "trace/sink.h"

namespace zfetch::sim {

namespace {

std::string diagnostics_text(const model::DiagnosticList& diagnostics) {
  std::string text;
  for (const model::Diagnostic& d : diagnostics) {
    text += text.empty() ? "" : "; ";
    text += diag::render_one_line(d);
  }
  return text;
}

SweepPoint run_scenario(const model::Scenario& scenario, const SweepOptions& options) {
  SweepPoint point;
  std::optional<Calibration> calibration = options.calibration;
  if (!calibration) {
    CalibrationResult resolved = resolve_calibration(scenario);
    if (!resolved.calibration) {
      point.error = diagnostics_text(resolved.diagnostics);
      return point;
    }
    calibration = std::move(resolved.calibration);
  }
  const AnalyticalCostModel cost(scenario, *calibration);
  trace::NullSink null;
  Timeline timeline(scenario, cost, null);
  trace::BoundedSink bounded(options.max_events, timeline);
  try {
    point.outcome = simulate(scenario, options.simulator, bounded);
  } catch (const trace::EventBoundExceeded& e) {
    point.error = fmt::format("the run needs more than {} simulated events", e.max_events);
    return point;
  }
  timeline.finish();
  const TimelineSummary& summary = timeline.summary();
  if (summary.overflowed) {
    point.error = kTimelineOverflowMessage;
    return point;
  }
  if (!summary.steps.empty()) {
    point.last_step = summary.steps.back().step;
    for (const StepSummary& s : summary.steps) {
      if (s.step == point.last_step) {
        point.step_ns = std::max(point.step_ns, s.step_ns);
        point.exposed_comm_ns = std::max(point.exposed_comm_ns, s.exposed_comm_ns);
      }
    }
  }
  point.end_ns = summary.end_ns;
  point.peak_live_bytes = summary.peak_live_bytes;
  return point;
}

// The combination at `index`: mixed radix, last axis fastest.
std::vector<std::string> combination(const std::vector<SweepAxis>& axes, size_t index) {
  std::vector<std::string> values(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    const size_t n = axes[a].values.size();
    values[a] = axes[a].values[index % n];
    index /= n;
  }
  return values;
}

}  // namespace

SweepPoint run_sweep_point(const model::Scenario& base, const std::vector<SweepAxis>& axes,
                           const std::vector<std::string>& values, const SweepOptions& options) {
  model::Scenario scenario = base;
  for (size_t a = 0; a < axes.size() && a < values.size(); ++a) {
    if (auto error = model::set_config_value(scenario, axes[a].key, values[a])) {
      SweepPoint point;
      point.values = values;
      point.error = std::move(*error);
      return point;
    }
  }
  SweepPoint point;
  try {
    point = run_scenario(scenario, options);
  } catch (const std::exception& e) {
    // Not expected from the simulator; kept inside the worker so that one point cannot end
    // the whole sweep (an exception escaping a std::thread terminates the process).
    point.error = fmt::format("internal error: {}", e.what());
  }
  point.values = values;
  return point;
}

std::vector<SweepPoint> run_sweep(const model::Scenario& base, const std::vector<SweepAxis>& axes,
                                  const SweepOptions& options) {
  size_t total = 1;
  for (const SweepAxis& axis : axes) {
    total *= axis.values.size();
  }
  std::vector<SweepPoint> points(total);
  std::atomic<size_t> next{0};
  // Each worker takes the next index and writes only points[i]: the output order is the
  // combination order, whatever the scheduling.
  const auto worker = [&] {
    for (size_t i = next++; i < total; i = next++) {
      points[i] = run_sweep_point(base, axes, combination(axes, i), options);
    }
  };
  const size_t threads = std::clamp<size_t>(options.jobs, 1, std::max<size_t>(total, 1));
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    pool.emplace_back(worker);
  }
  worker();
  for (std::thread& thread : pool) {
    thread.join();
  }
  return points;
}

BisectResult bisect(const model::Scenario& base, const std::string& key, int64_t lo, int64_t hi,
                    const SweepOptions& options) {
  BisectResult result;
  if (lo > hi) {
    result.error = fmt::format("empty range {}..{} for '{}'", lo, hi, key);
    return result;
  }
  const std::vector<SweepAxis> axes = {{key, {}}};
  const auto run_at = [&](int64_t v) {
    ++result.runs;
    return run_sweep_point(base, axes, {std::to_string(v)}, options);
  };
  SweepPoint low = run_at(lo);
  SweepPoint high = run_at(hi);
  for (const SweepPoint* p : {&low, &high}) {
    if (!p->error.empty()) {
      result.error = p->error;
      return result;
    }
  }
  result.changed = low.outcome.kind != high.outcome.kind;
  if (result.changed) {
    // Invariant: outcome(lo) == low kind, outcome(hi) != low kind.
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      SweepPoint p = run_at(mid);
      if (!p.error.empty()) {
        result.error = p.error;
        return result;
      }
      if (p.outcome.kind == low.outcome.kind) {
        lo = mid;
        low = std::move(p);
      } else {
        hi = mid;
        high = std::move(p);
      }
    }
  }
  result.below = lo;
  result.above = hi;
  result.below_point = std::move(low);
  result.above_point = std::move(high);
  return result;
}

}  // namespace zfetch::sim
