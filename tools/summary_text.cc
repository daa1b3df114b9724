// Text tables of a timeline summary (see summary_text.h).
#include "tools/summary_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <string_view>
#include <vector>

#include "tools/human_units.h"
#include "trace/names.h"

namespace zfetch::tools {

namespace {

// The tables, handed to `emit` a block at a time (the step table has a row per step).
void format_summary(const std::function<void(std::string_view)>& emit,
                    const sim::TimelineSummary& summary, const StepSource& steps,
                    const model::Scenario& scenario, const SummaryTextOptions& options) {
  constexpr size_t kBlockBytes = size_t{1} << 16;
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "# {:>4} {:>5} {:>11} {:>11} {:>12} {:>7} {:>10} {:>10}\n", "step", "rank",
                 "step_time", "compute", "exposed_comm", "gathers", "gathered", "peak_live");
  bool cut = false;
  steps([&](const sim::StepSummary& s) {
    if (s.step > options.last_step) {
      cut = true;
      return;
    }
    fmt::format_to(it, "  {:>4} {:>5} {:>11} {:>11} {:>12} {:>7} {:>10} {:>10}\n", s.step, s.rank,
                   human_duration(s.step_ns), human_duration(s.compute_ns),
                   human_duration(s.exposed_comm_ns), s.gathers, human_bytes(s.gathered_bytes),
                   human_bytes(s.peak_live_bytes));
    if (out.size() >= kBlockBytes) {
      emit(std::string_view(out.data(), out.size()));
      out.clear();
    }
  });
  if (cut) {
    fmt::format_to(it,
                   "# later steps and the run's totals left out: the ranks diverge in step {}, "
                   "and nothing after that runs\n",
                   options.last_step);
  } else {
    fmt::format_to(it, "# end {}, exposed communication {}, peak live parameters {}\n",
                   human_duration(summary.end_ns), human_duration(summary.exposed_comm_ns),
                   human_bytes(summary.peak_live_bytes));
  }
  if (!options.per_module) {
    emit(std::string_view(out.data(), out.size()));
    return;
  }
  for (size_t r = 0; r < summary.modules.size(); ++r) {
    const std::vector<sim::ModuleSummary>& modules = summary.modules[r];
    std::vector<model::ModuleIndex> rows;
    for (model::ModuleIndex m = 0; m < modules.size(); ++m) {
      if (modules[m].fetches != 0 || modules[m].compute_ns != 0) {
        rows.push_back(m);
      }
    }
    // Most exposed first; equal ones in module (file) order, so the table is deterministic.
    std::stable_sort(rows.begin(), rows.end(), [&](model::ModuleIndex a, model::ModuleIndex b) {
      return modules[a].exposed_comm_ns > modules[b].exposed_comm_ns;
    });
    const size_t shown =
        options.module_rows == 0 ? rows.size() : std::min(rows.size(), options.module_rows);
    fmt::format_to(it, "# rank {} modules by exposed communication\n", summary.ranks[r]);
    fmt::format_to(it, "# {:>12} {:>11} {:>7} {:>10} {:>10}  {}\n", "exposed_comm", "compute",
                   "fetches", "gathered", "prefetched", "module");
    for (size_t i = 0; i < shown; ++i) {
      const sim::ModuleSummary& s = modules[rows[i]];
      const std::string& name = scenario.modules[rows[i]].qualified_name;
      fmt::format_to(it, "  {:>12} {:>11} {:>7} {:>10} {:>10}  {}\n",
                     human_duration(s.exposed_comm_ns), human_duration(s.compute_ns), s.fetches,
                     human_bytes(s.gathered_bytes), human_bytes(s.prefetched_bytes),
                     trace::display_module_name(name));
    }
    if (shown < rows.size()) {
      fmt::format_to(it, "# {} more modules (--all lists them)\n", rows.size() - shown);
    }
  }
  emit(std::string_view(out.data(), out.size()));
}

}  // namespace

std::string summary_text(const sim::TimelineSummary& summary, const model::Scenario& scenario,
                         const SummaryTextOptions& options) {
  std::string text;
  const StepSource steps = [&](const std::function<void(const sim::StepSummary&)>& visit) {
    std::for_each(summary.steps.begin(), summary.steps.end(), visit);
  };
  format_summary([&](std::string_view block) { text.append(block); }, summary, steps, scenario,
                 options);
  return text;
}

void write_summary_text(std::FILE* out, const sim::TimelineSummary& summary,
                        const StepSource& steps, const model::Scenario& scenario,
                        const SummaryTextOptions& options) {
  format_summary([&](std::string_view block) { std::fwrite(block.data(), 1, block.size(), out); },
                 summary, steps, scenario, options);
}

}  // namespace zfetch::tools
