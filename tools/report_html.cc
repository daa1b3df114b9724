// The self-contained HTML run report (see report_html.h).
#include "tools/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <string_view>
#include <vector>

#include "model/persistence.h"
#include "tools/html_page.h"
#include "tools/human_units.h"
#include "tools/outcome_report.h"
#include "trace/names.h"

namespace zfetch::tools {

namespace {

using sim::Landmark;
using sim::Slice;
using sim::Tick;

constexpr int kPlotWidth = 1100;  ///< px of the time axis
constexpr int kLabelWidth = 180;
constexpr int kRowHeight = 18;
constexpr size_t kTopRows = 20;

std::string module_label(const model::Scenario& scenario, model::ModuleIndex m) {
  if (m >= scenario.modules.size()) {
    return "?";
  }
  return std::string(trace::display_module_name(scenario.modules[m].qualified_name));
}

// The layer a module belongs to: its name up to the first all-digit component
// ("layers.31.self_attn.q_proj" -> "layers.31"), else its first component.
std::string layer_of(std::string_view name) {
  if (name.empty()) {
    return std::string(trace::kRootModuleName);
  }
  size_t begin = 0;
  for (;;) {
    const size_t end = name.find('.', begin);
    const std::string_view part = name.substr(begin, end - begin);
    if (!part.empty() &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::string(name.substr(0, end == std::string_view::npos ? name.size() : end));
    }
    if (end == std::string_view::npos) {
      break;
    }
    begin = end + 1;
  }
  return std::string(name.substr(0, name.find('.')));
}

// Pixel column of time t on a plot of `end` ns.
int x_of(Tick t, Tick end) {
  if (end <= 0) {
    return 0;
  }
  // Pixels only (never printed as a value): double keeps t * width from overflowing int64.
  return static_cast<int>(static_cast<double>(t) * kPlotWidth / static_cast<double>(end));
}

std::string_view phase_colour(trace::Phase phase) {
  switch (phase) {
  case trace::Phase::Fwd:
    return "#4e79a7";
  case trace::Phase::Bwd:
    return "#f28e2b";
  case trace::Phase::Recompute:
    return "#b07aa1";
  case trace::Phase::Eval:
    return "#59a14f";
  case trace::Phase::Optimizer:
    return "#9c755f";
  case trace::Phase::Checkpoint:
    return "#bab0ac";
  case trace::Phase::None:
    break;
  }
  return "#dddddd";
}

constexpr std::array<std::string_view, sim::kStreamCount> kStreamColour = {"#4e79a7", "#e15759",
                                                                           "#76b7b2", "#edc948"};
constexpr std::array<std::string_view, sim::kStreamCount> kStreamLabel = {
    "compute", "all-gather (comm)", "host-to-device (h2d)", "reduce-scatter (rs)"};

// The timeline's rows: steps, passes, phases, then the streams.
constexpr int kTimelineRows = 3 + sim::kStreamCount;
constexpr int row_y(int row) {
  return 4 + row * (kRowHeight + 4);
}

// Landmark spans: few (steps, passes, phases), each drawn when at least one pixel wide.
void landmark_spans(const sim::Recording& rec, int32_t rank, Tick end, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  for (const Landmark& l : rec.landmarks) {
    if (l.rank != rank) {
      continue;
    }
    int row = -1;
    std::string fill;
    std::string title;
    if (l.kind == Landmark::Kind::Step) {
      row = 0;
      fill = l.step % 2 == 0 ? "#c7d7ea" : "#9fbbd9";
      title = fmt::format("step {}", l.step);
    } else if (l.kind == Landmark::Kind::Pass) {
      row = 1;
      fill = l.pass % 2 == 0 ? "#d9e8c8" : "#b7d39a";
      title = fmt::format("pass {} ({})", l.pass, l.phase == trace::Phase::Eval ? "eval" : "train");
    } else if (l.kind == Landmark::Kind::Phase) {
      row = 2;
      fill = std::string(phase_colour(l.phase));
      title = std::string(trace::format_as(l.phase));
    } else {
      continue;
    }
    const int x0 = x_of(l.start_ns, end);
    const int x1 = std::max(x0 + 1, x_of(l.end_ns, end));
    fmt::format_to(it,
                   "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} "
                   "({} .. {})</title></rect>\n",
                   kLabelWidth + x0, row_y(row), x1 - x0, kRowHeight, fill, html_escape(title),
                   human_duration(l.start_ns), human_duration(l.end_ns));
  }
}

// Streams: busy pixel columns, merged into runs (at most one rect per run of columns).
void stream_rows(const sim::Recording& rec, int32_t rank, Tick end, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  for (int s = 0; s < sim::kStreamCount; ++s) {
    std::vector<uint8_t> busy(kPlotWidth + 1, 0);
    for (const Slice& slice : rec.slices) {
      if (slice.rank != rank || static_cast<int>(slice.stream) != s || slice.dur_ns <= 0) {
        continue;
      }
      const int x0 = std::min(kPlotWidth, x_of(slice.start_ns, end));
      const int x1 =
          std::min(kPlotWidth, std::max(x0 + 1, x_of(slice.start_ns + slice.dur_ns, end)));
      std::fill(busy.begin() + x0, busy.begin() + x1, uint8_t{1});
    }
    for (int x = 0; x < kPlotWidth;) {
      if (busy[static_cast<size_t>(x)] == 0) {
        ++x;
        continue;
      }
      int x1 = x;
      while (x1 < kPlotWidth && busy[static_cast<size_t>(x1)] != 0) {
        ++x1;
      }
      fmt::format_to(it, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n",
                     kLabelWidth + x, row_y(3 + s), x1 - x, kRowHeight,
                     kStreamColour[static_cast<size_t>(s)]);
      x = x1;
    }
  }
}

// Points: vertical lines across the rank's rows.
void landmark_points(const RunReportInput& in, int32_t rank, Tick end, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  const model::Scenario& scenario = *in.scenario;
  const sim::Recording& rec = *in.recording;
  for (const Landmark& l : rec.landmarks) {
    if (l.rank != rank || l.kind == Landmark::Kind::Step || l.kind == Landmark::Kind::Pass ||
        l.kind == Landmark::Kind::Phase || l.kind == Landmark::Kind::MicroStep) {
      continue;
    }
    std::string_view colour = "#888888";
    std::string title;
    switch (l.kind) {
    case Landmark::Kind::OptimizerStep:
      colour = "#333333";
      title = fmt::format("optimizer step {}", l.step);
      break;
    case Landmark::Kind::TraceInvalidation:
      colour = "#f28e2b";
      title = fmt::format("trace invalidated at '{}'", module_label(scenario, l.module));
      break;
    case Landmark::Kind::Failure:
      colour = "#d62728";
      title = in.outcome->failure ? outcome_summary(scenario, *in.outcome) : "failure";
      break;
    case Landmark::Kind::Restart:
      title = "engine restart";
      break;
    case Landmark::Kind::CheckpointSave:
      title = "checkpoint save";
      break;
    case Landmark::Kind::CheckpointLoad:
      title = "checkpoint load";
      break;
    default:
      break;
    }
    const int x = kLabelWidth + std::min(kPlotWidth, x_of(l.start_ns, end));
    const bool failure = l.kind == Landmark::Kind::Failure;
    fmt::format_to(it,
                   "<line class=\"landmark{}\" x1=\"{}\" y1=\"0\" x2=\"{}\" y2=\"{}\" "
                   "stroke=\"{}\" stroke-width=\"{}\"{}><title>{} at {}</title></line>\n",
                   failure ? " failure" : "", x, x, row_y(kTimelineRows), colour, failure ? 3 : 1,
                   failure ? "" : " stroke-dasharray=\"3,2\"", html_escape(title),
                   human_duration(l.start_ns));
    if (failure) {
      fmt::format_to(
          it, "<text x=\"{}\" y=\"{}\" fill=\"#d62728\" text-anchor=\"end\">failure</text>\n",
          x - 3, row_y(kTimelineRows) + 12);
    }
  }
}

void timeline_svg(const RunReportInput& in, int32_t rank, Tick end, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  constexpr int kRows = kTimelineRows;
  const int height = kRows * (kRowHeight + 4) + 24;
  fmt::format_to(it,
                 "<svg class=\"timeline\" data-rank=\"{}\" width=\"{}\" height=\"{}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" "
                 "font-size=\"11\">\n",
                 rank, kLabelWidth + kPlotWidth + 10, height);
  const std::array<std::string_view, kRows> labels = {
      "optimizer steps", "passes",        "phases",       kStreamLabel[0],
      kStreamLabel[1],   kStreamLabel[2], kStreamLabel[3]};
  for (int row = 0; row < kRows; ++row) {
    fmt::format_to(it, "<text x=\"4\" y=\"{}\">{}</text>\n", row_y(row) + 13,
                   labels[static_cast<size_t>(row)]);
    fmt::format_to(it, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f6f6f6\"/>\n",
                   kLabelWidth, row_y(row), kPlotWidth, kRowHeight);
  }
  landmark_spans(*in.recording, rank, end, out);
  stream_rows(*in.recording, rank, end, out);
  landmark_points(in, rank, end, out);
  fmt::format_to(it,
                 "<text x=\"{}\" y=\"{}\">0</text><text x=\"{}\" y=\"{}\" "
                 "text-anchor=\"end\">{}</text>\n",
                 kLabelWidth, height - 4, kLabelWidth + kPlotWidth, height - 4,
                 human_duration(end));
  fmt::format_to(it, "</svg>\n");
}

void memory_svg(const RunReportInput& in, int32_t rank, Tick end, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  const sim::Recording& rec = *in.recording;
  constexpr int kHeight = 220;
  int64_t peak = 0;
  // The highest value in each pixel column, carried forward between samples.
  std::vector<int64_t> column(kPlotWidth + 1, -1);
  for (const sim::CounterSample& c : rec.live_bytes) {
    if (c.rank != rank) {
      continue;
    }
    peak = std::max(peak, c.live_bytes);
    const auto x = static_cast<size_t>(std::min(kPlotWidth, x_of(c.t_ns, end)));
    column[x] = std::max(column[x], c.live_bytes);
  }
  const auto y_of = [&](int64_t bytes) {
    return peak <= 0 ? kHeight
                     : kHeight - static_cast<int>(static_cast<double>(bytes) * (kHeight - 20) /
                                                  static_cast<double>(peak));
  };
  fmt::format_to(it,
                 "<svg class=\"memory\" data-rank=\"{}\" width=\"{}\" height=\"{}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" "
                 "font-size=\"11\">\n<rect x=\"{}\" y=\"0\" width=\"{}\" height=\"{}\" "
                 "fill=\"#f6f6f6\"/>\n",
                 rank, kLabelWidth + kPlotWidth + 10, kHeight + 20, kLabelWidth, kPlotWidth,
                 kHeight);
  fmt::format_to(it, "<polyline fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"1.5\" points=\"");
  int64_t current = 0;
  for (size_t x = 0; x <= static_cast<size_t>(kPlotWidth); ++x) {
    if (column[x] >= 0) {
      current = column[x];
    }
    fmt::format_to(it, "{},{} ", kLabelWidth + static_cast<int>(x), y_of(current));
  }
  fmt::format_to(it, "\"/>\n");
  const sim::Recording::Peak* holding = static_cast<size_t>(rank) < rec.peaks.size()
                                            ? &rec.peaks[static_cast<size_t>(rank)]
                                            : nullptr;
  if (holding != nullptr && holding->live_bytes > 0) {
    const int x = kLabelWidth + std::min(kPlotWidth, x_of(holding->t_ns, end));
    fmt::format_to(it,
                   "<circle class=\"peak\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"#d62728\"/>"
                   "<text x=\"{}\" y=\"{}\" fill=\"#d62728\">peak {} at {}</text>\n",
                   x, y_of(holding->live_bytes), std::min(x + 6, kLabelWidth + kPlotWidth - 160),
                   y_of(holding->live_bytes) + 4, human_bytes(holding->live_bytes),
                   human_duration(holding->t_ns));
  }
  fmt::format_to(it,
                 "<text x=\"4\" y=\"14\">{}</text><text x=\"4\" y=\"{}\">0 B</text>"
                 "<text x=\"{}\" y=\"{}\">0</text><text x=\"{}\" y=\"{}\" "
                 "text-anchor=\"end\">{}</text>\n</svg>\n",
                 human_bytes(peak), kHeight, kLabelWidth, kHeight + 14, kLabelWidth + kPlotWidth,
                 kHeight + 14, human_duration(end));
}

struct Row {
  std::string name;
  sim::ModuleSummary totals;
};

void exposed_table(const std::vector<Row>& rows, std::string_view id, std::string_view what,
                   fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  Tick most = 1;
  for (const Row& r : rows) {
    most = std::max(most, r.totals.exposed_comm_ns);
  }
  fmt::format_to(it,
                 "<table id=\"{}\"><tr><th>{}</th><th>exposed communication</th><th></th>"
                 "<th>compute</th><th>fetches</th><th>gathered</th><th>prefetched for it</th>"
                 "</tr>\n",
                 id, what);
  for (size_t i = 0; i < rows.size() && i < kTopRows; ++i) {
    const sim::ModuleSummary& s = rows[i].totals;
    fmt::format_to(it,
                   "<tr><td class=\"name\">{}</td><td class=\"num\">{}</td><td><div "
                   "class=\"bar\" style=\"width:{}px\"></div></td><td class=\"num\">{}</td>"
                   "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                   "</tr>\n",
                   html_escape(rows[i].name), human_duration(s.exposed_comm_ns),
                   s.exposed_comm_ns * 200 / most, human_duration(s.compute_ns), s.fetches,
                   human_bytes(s.gathered_bytes), human_bytes(s.prefetched_bytes));
  }
  fmt::format_to(it, "</table>\n");
  if (rows.size() > kTopRows) {
    fmt::format_to(it,
                   "<p class=\"note\">{} more not shown (`zfetch run --per-module --all` lists "
                   "every module).</p>\n",
                   rows.size() - kTopRows);
  }
}

void sort_rows(std::vector<Row>& rows) {
  // Most exposed first; ties keep module order, so the page is deterministic.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.totals.exposed_comm_ns > b.totals.exposed_comm_ns;
  });
}

// "To avoid it:" bullets of the explanation, one suggestion each.
std::vector<std::string> avoid_lines(const std::string& explanation) {
  std::vector<std::string> lines;
  const size_t at = explanation.find("To avoid it:");
  if (at == std::string::npos) {
    return lines;
  }
  size_t begin = explanation.find('\n', at);
  while (begin != std::string::npos && begin + 1 < explanation.size()) {
    const size_t end = explanation.find('\n', begin + 1);
    std::string line =
        explanation.substr(begin + 1, end == std::string::npos ? end : end - begin - 1);
    if (line.starts_with("- ")) {
      lines.push_back(line.substr(2));
    }
    begin = end;
  }
  return lines;
}

void outcome_section(const RunReportInput& in, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  const model::Scenario& scenario = *in.scenario;
  const sim::Outcome& outcome = *in.outcome;
  const sim::TimelineSummary& summary = *in.summary;
  const bool failed = outcome.failure.has_value();
  fmt::format_to(it, "<section id=\"outcome\"><h2>Outcome</h2>\n");
  fmt::format_to(it,
                 "<p>scenario <code>{}</code>, {} ranks, discovery <code>{}</code>, calibration "
                 "{}</p>\n<p class=\"{}\">{}</p>\n",
                 html_escape(scenario.path), scenario.world_size, model::format_as(in.discovery),
                 html_escape(in.calibration), failed ? "failed" : "pass",
                 html_escape(outcome_summary(scenario, outcome)));
  fmt::format_to(
      it,
      "<p>{} optimizer steps, {} passes, {} fetches, {} gathers ({}); simulated time {}, "
      "exposed communication {}, peak live parameters {}</p>\n",
      outcome.stats.optimizer_steps, outcome.stats.passes, outcome.stats.fetches,
      outcome.stats.gathers, human_bytes(outcome.stats.gathered_bytes),
      human_duration(summary.end_ns), human_duration(summary.exposed_comm_ns),
      human_bytes(summary.peak_live_bytes));
  if (failed) {
    fmt::format_to(it, "<h3>DeepSpeed raises</h3><pre id=\"message\">{}</pre>\n",
                   html_escape(outcome.failure->message));
    if (!outcome.failure->explanation.empty()) {
      fmt::format_to(it, "<h3>Why</h3><pre id=\"explanation\">{}</pre>\n",
                     html_escape(outcome.failure->explanation));
    }
  }
  fmt::format_to(it, "</section>\n");
}

// The ranks with a timeline, in order, and the end of the time axis they share.
struct TimeAxis {
  std::vector<int32_t> ranks;
  Tick end = 1;
};

TimeAxis time_axis(const RunReportInput& in) {
  TimeAxis axis;
  for (const sim::StepSummary& s : in.summary->steps) {
    axis.ranks.push_back(s.rank);
  }
  std::sort(axis.ranks.begin(), axis.ranks.end());
  axis.ranks.erase(std::unique(axis.ranks.begin(), axis.ranks.end()), axis.ranks.end());
  for (const Slice& s : in.recording->slices) {
    axis.end = std::max(axis.end, s.start_ns + s.dur_ns);
  }
  axis.end = std::max(axis.end, in.summary->end_ns);
  return axis;
}

void timeline_section(const RunReportInput& in, const TimeAxis& axis, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "<section id=\"timeline\"><h2>Timeline</h2>\n<p class=\"legend\">");
  for (size_t s = 0; s < kStreamLabel.size(); ++s) {
    fmt::format_to(it, "<span><i style=\"background:{}\"></i>{}</span>", kStreamColour[s],
                   kStreamLabel[s]);
  }
  fmt::format_to(it,
                 "<span><i style=\"background:#d62728\"></i>failure</span><span>dashed lines: "
                 "optimizer steps, checkpoints, restarts, invalidations</span></p>\n");
  for (int32_t rank : axis.ranks) {
    fmt::format_to(it, "<h3>rank {}</h3>\n", rank);
    timeline_svg(in, rank, axis.end, out);
  }
  fmt::format_to(it, "</section>\n");
}

// What is gathered at the rank's peak of live parameter memory, largest first.
void peak_table(const RunReportInput& in, int32_t rank, fmt::memory_buffer& out) {
  const model::Scenario& scenario = *in.scenario;
  const sim::Recording& rec = *in.recording;
  if (static_cast<size_t>(rank) >= rec.peaks.size()) {
    return;
  }
  auto it = std::back_inserter(out);
  const sim::Recording::Peak& peak = rec.peaks[static_cast<size_t>(rank)];
  const std::vector<bool> persistent = model::select_persistent(scenario, scenario.config.zero);
  std::vector<std::pair<int64_t, model::ParamIndex>> held;
  for (model::ParamIndex p : peak.params) {
    const model::ParamSpec& spec = scenario.params[p];
    held.emplace_back(spec.numel * model::dtype_bytes(spec.dtype), p);
  }
  std::stable_sort(held.begin(), held.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  fmt::format_to(it,
                 "<p>At the peak ({} at {}), {} parameters are gathered:</p>\n<table "
                 "id=\"peak\"><tr><th>parameter</th><th>owner</th><th>size</th><th>persistent"
                 "</th></tr>\n",
                 human_bytes(peak.live_bytes), human_duration(peak.t_ns), held.size());
  for (size_t i = 0; i < held.size() && i < kTopRows; ++i) {
    const model::ParamSpec& spec = scenario.params[held[i].second];
    fmt::format_to(it,
                   "<tr><td class=\"name\">{}</td><td class=\"name\">{}</td><td "
                   "class=\"num\">{}</td><td>{}</td></tr>\n",
                   html_escape(spec.qualified_name),
                   html_escape(module_label(scenario, spec.owner)), human_bytes(held[i].first),
                   persistent[held[i].second] ? "yes" : "");
  }
  fmt::format_to(it, "</table>\n");
  if (held.size() > kTopRows) {
    fmt::format_to(it, "<p class=\"note\">and {} smaller ones.</p>\n", held.size() - kTopRows);
  }
}

void memory_section(const RunReportInput& in, int32_t rank, Tick end, fmt::memory_buffer& out) {
  fmt::format_to(std::back_inserter(out),
                 "<section id=\"memory\"><h2>Live parameter memory (rank {})</h2>\n", rank);
  memory_svg(in, rank, end, out);
  peak_table(in, rank, out);
  fmt::format_to(std::back_inserter(out), "</section>\n");
}

// Exposed communication per module and per layer (the first rank's table), most exposed first.
struct Exposure {
  std::vector<Row> modules;
  std::vector<Row> layers;
};

Exposure exposure(const RunReportInput& in) {
  const model::Scenario& scenario = *in.scenario;
  Exposure e;
  std::map<std::string, sim::ModuleSummary> layers;
  if (!in.summary->modules.empty()) {
    const std::vector<sim::ModuleSummary>& table = in.summary->modules.front();
    for (model::ModuleIndex m = 0; m < table.size(); ++m) {
      const sim::ModuleSummary& s = table[m];
      if (s.fetches == 0 && s.compute_ns == 0) {
        continue;
      }
      e.modules.push_back({module_label(scenario, m), s});
      sim::ModuleSummary& layer = layers[layer_of(scenario.modules[m].qualified_name)];
      layer.fetches += s.fetches;
      layer.compute_ns += s.compute_ns;
      layer.exposed_comm_ns += s.exposed_comm_ns;
      layer.gathered_bytes += s.gathered_bytes;
      layer.prefetched_bytes += s.prefetched_bytes;
    }
  }
  for (const auto& [name, totals] : layers) {
    e.layers.push_back({name, totals});
  }
  sort_rows(e.modules);
  sort_rows(e.layers);
  return e;
}

void exposure_sections(const Exposure& e, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "<section id=\"modules\"><h2>Exposed communication per module</h2>\n");
  exposed_table(e.modules, "module-table", "module", out);
  fmt::format_to(it,
                 "</section>\n<section id=\"layers\"><h2>Exposed communication per layer</h2>\n");
  exposed_table(e.layers, "layer-table", "layer", out);
  fmt::format_to(it, "</section>\n");
}

struct Tip {
  std::string knob;
  std::string now;
  std::string why;
};

// What to tune: the explanation's remedies, then rules on the timeline's numbers.
std::vector<Tip> tuning_tips(const RunReportInput& in, const std::vector<Row>& modules,
                             int32_t rank) {
  const model::Scenario& scenario = *in.scenario;
  const sim::TimelineSummary& summary = *in.summary;
  std::vector<Tip> tips;
  if (in.outcome->failure) {
    for (const std::string& line : avoid_lines(in.outcome->failure->explanation)) {
      tips.push_back({"fix the failure", "", line});
    }
  }
  const model::ZeroConfig& zero = scenario.config.zero;
  const int64_t share = summary.end_ns > 0 ? summary.exposed_comm_ns * 100 / summary.end_ns : 0;
  if (share >= 5 && zero.prefetch_bucket_size == 0) {
    tips.push_back({"stage3_prefetch_bucket_size", "0",
                    fmt::format("exposed communication is {}% of the run; a prefetch bucket "
                                "(DeepSpeed's default 5e7) lets gathers overlap compute",
                                share)});
  }
  if (share >= 5 && zero.max_reuse_distance == 0) {
    tips.push_back({"stage3_max_reuse_distance", "0",
                    "every release drops a parameter that the next use gathers again; a reuse "
                    "distance keeps recently used parameters resident"});
  }
  if (zero.offload_param.device != model::OffloadDevice::None) {
    Tick h2d = 0;
    for (const Slice& s : in.recording->slices) {
      h2d += s.stream == sim::Stream::H2d && s.rank == rank ? s.dur_ns : 0;
    }
    tips.push_back({"offload_param.device", "cpu/nvme",
                    fmt::format("host-to-device copies take {} on rank {} ({}% of the run)",
                                human_duration(h2d), rank,
                                summary.end_ns > 0 ? h2d * 100 / summary.end_ns : 0)});
  }
  for (size_t i = 0; i < modules.size() && i < 3; ++i) {
    if (modules[i].totals.exposed_comm_ns == 0) {
      break;
    }
    tips.push_back({"module " + modules[i].name, "",
                    fmt::format("waits {} for its gathers ({} gathered, {} prefetched for it); a "
                                "larger prefetch bucket or a persistence threshold above its "
                                "parameter sizes hides that",
                                human_duration(modules[i].totals.exposed_comm_ns),
                                human_bytes(modules[i].totals.gathered_bytes),
                                human_bytes(modules[i].totals.prefetched_bytes))});
  }
  return tips;
}

void tuning_section(const std::vector<Tip>& tips, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "<section id=\"tuning\"><h2>What to tune</h2>\n<table id=\"tuning-table\"><tr>"
                 "<th>#</th><th>knob</th><th>now</th><th>why</th></tr>\n");
  for (size_t i = 0; i < tips.size(); ++i) {
    fmt::format_to(it, "<tr><td>{}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td></tr>\n",
                   i + 1, html_escape(tips[i].knob), html_escape(tips[i].now),
                   html_escape(tips[i].why));
  }
  fmt::format_to(it, "</table>\n</section>\n");
}

}  // namespace

std::string run_report_html(const RunReportInput& in) {
  fmt::memory_buffer out;
  html_page_begin("zfetch report: " + in.scenario->name, out);
  outcome_section(in, out);
  const TimeAxis axis = time_axis(in);
  timeline_section(in, axis, out);
  const int32_t memory_rank = axis.ranks.empty() ? 0 : axis.ranks.front();
  memory_section(in, memory_rank, axis.end, out);
  const Exposure e = exposure(in);
  exposure_sections(e, out);
  tuning_section(tuning_tips(in, e.modules, memory_rank), out);
  html_page_end(out);
  return fmt::to_string(out);
}

}  // namespace zfetch::tools
