// The self-contained HTML page of a sweep (see sweep_report_html.h).
#include "tools/sweep_report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <string_view>

#include "tools/html_page.h"
#include "tools/human_units.h"
#include "trace/names.h"

namespace zfetch::tools {

namespace {

constexpr int kPlotLeft = 90;  ///< px for the y axis labels
constexpr int kPlotWidth = 900;
constexpr int kPlotHeight = 260;
constexpr int kPlotTop = 16;
constexpr int kFailedRow = 26;  ///< px below the x axis where failed cells are marked
constexpr int kLabelRows = 44;  ///< px for the x labels under the failed row

constexpr std::array<std::string_view, 8> kSeriesColour = {
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7"};

// Where a cell goes on the plots: its first value's position on the x axis and the series of
// its other values (their combination index, last axis fastest, as the grid orders them).
struct Place {
  size_t x = 0;
  size_t series = 0;
};

Place place_of(const std::vector<sim::SweepAxis>& axes, const sim::SweepPoint& p) {
  Place place;
  for (size_t a = 0; a < axes.size() && a < p.values.size(); ++a) {
    const std::vector<std::string>& values = axes[a].values;
    const auto at =
        static_cast<size_t>(std::find(values.begin(), values.end(), p.values[a]) - values.begin());
    if (a == 0) {
      place.x = at;
    } else {
      place.series = place.series * values.size() + at;
    }
  }
  return place;
}

size_t series_count(const std::vector<sim::SweepAxis>& axes) {
  size_t n = 1;
  for (size_t a = 1; a < axes.size(); ++a) {
    n *= axes[a].values.size();
  }
  return n;
}

// "k2=v, k3=v" of a series: the values of the axes after the first.
std::string series_label(const std::vector<sim::SweepAxis>& axes, size_t series) {
  std::string label;
  for (size_t a = axes.size(); a-- > 1;) {
    const size_t n = axes[a].values.size();
    label = axes[a].key + "=" + axes[a].values[series % n] + (label.empty() ? "" : ", ") + label;
    series /= n;
  }
  return label.empty() ? "all cells" : label;
}

struct Metric {
  std::string_view id;     ///< data-metric of the plot
  std::string_view title;  ///< the y axis
  bool bytes = false;      ///< formatted as bytes, else as a duration
  int64_t (*value)(const sim::SweepPoint&);
};

constexpr Metric kStepTime{"step_ns", "step time (last step)", false,
                           [](const sim::SweepPoint& p) -> int64_t { return p.step_ns; }};
constexpr Metric kPeakMemory{"peak_live_bytes", "peak live parameters", true,
                             [](const sim::SweepPoint& p) { return p.peak_live_bytes; }};

std::string format_value(const Metric& metric, int64_t v) {
  return metric.bytes ? human_bytes(v) : human_duration(v);
}

// What a failed or errored cell says when hovered.
std::string failure_title(const sim::SweepPoint& p) {
  if (!p.error.empty()) {
    return "error: " + p.error;
  }
  std::string title(format_as(p.outcome.kind));
  if (p.outcome.failure) {
    title += ": " + p.outcome.failure->message.substr(0, p.outcome.failure->message.find('\n'));
  }
  return title;
}

std::string cell_label(const std::vector<sim::SweepAxis>& axes, const sim::SweepPoint& p) {
  std::string label;
  for (size_t a = 0; a < axes.size() && a < p.values.size(); ++a) {
    label += (a == 0 ? "" : ", ") + axes[a].key + "=" + p.values[a];
  }
  return label;
}

// Pixel positions on one plot: x by column (the first key's value), y by value from 0 to `top`.
struct Geometry {
  size_t columns = 1;
  int64_t top = 1;  ///< the largest value drawn

  [[nodiscard]] int x_of(size_t x) const {
    return kPlotLeft + static_cast<int>((2 * x + 1) * kPlotWidth / (2 * columns));
  }
  [[nodiscard]] int y_of(int64_t v) const {
    // Pixels only (never printed as a value): double keeps v * height from overflowing.
    return kPlotTop + kPlotHeight -
           static_cast<int>(static_cast<double>(v) * kPlotHeight / static_cast<double>(top));
  }
};

constexpr int kAxisY = kPlotTop + kPlotHeight;
constexpr int kFailedY = kAxisY + kFailedRow;

// The y axis (0, half and the top, in human units), the x axis (the first key's values) and the
// row where failed cells are marked.
void plot_axes(const Metric& metric, const std::vector<sim::SweepAxis>& axes, const Geometry& g,
               fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  for (const int64_t v : {int64_t{0}, g.top / 2, g.top}) {
    fmt::format_to(it,
                   "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><line x1=\"{}\" "
                   "y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#dddddd\"/>\n",
                   kPlotLeft - 4, g.y_of(v) + 4, format_value(metric, v), kPlotLeft, g.y_of(v),
                   kPlotLeft + kPlotWidth, g.y_of(v));
  }
  for (size_t x = 0; x < g.columns && x < axes.front().values.size(); ++x) {
    fmt::format_to(it, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", g.x_of(x),
                   kFailedY + 20, html_escape(axes.front().values[x]));
  }
  fmt::format_to(it,
                 "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#c62828\">failed</text>\n"
                 "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                 kPlotLeft - 4, kFailedY + 4, kPlotLeft + kPlotWidth / 2, kFailedY + 38,
                 html_escape(axes.front().key));
}

// One line per series through its completed cells, in x order; failed cells break it.
void series_lines(const Metric& metric, const std::vector<sim::SweepAxis>& axes,
                  const std::vector<sim::SweepPoint>& points, const Geometry& g,
                  fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  const size_t series = series_count(axes);
  for (size_t s = 0; s < series; ++s) {
    std::vector<const sim::SweepPoint*> by_x(g.columns, nullptr);
    for (const sim::SweepPoint& p : points) {
      const Place place = place_of(axes, p);
      if (place.series == s && place.x < g.columns) {
        by_x[place.x] = &p;
      }
    }
    const std::string_view colour = kSeriesColour[s % kSeriesColour.size()];
    std::string line;
    const auto flush = [&] {
      if (line.find(' ') != line.rfind(' ')) {  // two points or more
        fmt::format_to(it,
                       "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" "
                       "points=\"{}\"/>\n",
                       colour, line);
      }
      line.clear();
    };
    for (size_t x = 0; x < g.columns; ++x) {
      const sim::SweepPoint* p = by_x[x];
      if (p == nullptr || !cell_has_timing(*p)) {
        flush();
        continue;
      }
      line += fmt::format("{},{} ", g.x_of(x), g.y_of(metric.value(*p)));
    }
    flush();
  }
}

// A point per completed cell; a cross on the failed row per other cell, red for a failure and
// grey for a cell that could not run.
void cell_marks(const Metric& metric, const std::vector<sim::SweepAxis>& axes,
                const std::vector<sim::SweepPoint>& points, const Geometry& g,
                fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  for (const sim::SweepPoint& p : points) {
    const Place place = place_of(axes, p);
    const int x = g.x_of(place.x);
    const std::string_view colour = kSeriesColour[place.series % kSeriesColour.size()];
    if (cell_has_timing(p)) {
      fmt::format_to(it,
                     "<circle class=\"cell\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"><title>{}: "
                     "{}</title></circle>\n",
                     x, g.y_of(metric.value(p)), colour, html_escape(cell_label(axes, p)),
                     format_value(metric, metric.value(p)));
      continue;
    }
    const bool error = !p.error.empty();
    const int dx = static_cast<int>(place.series % 5) * 6 - 12;  // series side by side
    fmt::format_to(it,
                   "<g class=\"{}\" stroke=\"{}\" stroke-width=\"2\"><line x1=\"{}\" y1=\"{}\" "
                   "x2=\"{}\" y2=\"{}\"/><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>"
                   "<title>{}: {}</title></g>\n",
                   error ? "error-cell" : "failed-cell", error ? "#888888" : "#d62728", x + dx - 4,
                   kFailedY - 4, x + dx + 4, kFailedY + 4, x + dx - 4, kFailedY + 4, x + dx + 4,
                   kFailedY - 4, html_escape(cell_label(axes, p)), html_escape(failure_title(p)));
  }
}

void plot_svg(const Metric& metric, const std::vector<sim::SweepAxis>& axes,
              const std::vector<sim::SweepPoint>& points, fmt::memory_buffer& out) {
  Geometry g;
  g.columns = std::max<size_t>(1, axes.front().values.size());
  for (const sim::SweepPoint& p : points) {
    if (cell_has_timing(p)) {
      g.top = std::max(g.top, metric.value(p));
    }
  }
  fmt::format_to(std::back_inserter(out),
                 "<svg class=\"sweep-plot\" data-metric=\"{}\" width=\"{}\" height=\"{}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" "
                 "font-size=\"11\">\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                 "fill=\"#f6f6f6\"/>\n",
                 metric.id, kPlotLeft + kPlotWidth + 10, kFailedY + kLabelRows, kPlotLeft, kPlotTop,
                 kPlotWidth, kPlotHeight);
  plot_axes(metric, axes, g, out);
  series_lines(metric, axes, points, g, out);
  cell_marks(metric, axes, points, g, out);
  fmt::format_to(std::back_inserter(out), "</svg>\n");
}

void plots_section(const std::vector<sim::SweepAxis>& axes,
                   const std::vector<sim::SweepPoint>& points, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "<section id=\"sweep-plots\"><h2>Against {}</h2>\n<p class=\"legend\">",
                 html_escape(axes.front().key));
  const size_t series = series_count(axes);
  for (size_t s = 0; s < series; ++s) {
    fmt::format_to(it, "<span><i style=\"background:{}\"></i>{}</span>",
                   kSeriesColour[s % kSeriesColour.size()], html_escape(series_label(axes, s)));
  }
  fmt::format_to(it,
                 "<span><i style=\"background:#d62728\"></i>failed (DeepSpeed would raise; no "
                 "step time)</span><span><i style=\"background:#888888\"></i>could not "
                 "run</span></p>\n");
  for (const Metric* metric : {&kStepTime, &kPeakMemory}) {
    fmt::format_to(it, "<h3>{}</h3>\n", metric->title);
    plot_svg(*metric, axes, points, out);
  }
  fmt::format_to(it, "</section>\n");
}

void table_section(const std::vector<sim::SweepAxis>& axes,
                   const std::vector<sim::SweepPoint>& points, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "<section id=\"cells\"><h2>Cells</h2>\n<table id=\"sweep-table\"><tr>");
  for (const sim::SweepAxis& axis : axes) {
    fmt::format_to(it, "<th>{}</th>", html_escape(axis.key));
  }
  fmt::format_to(it,
                 "<th>status</th><th>outcome</th><th>step time</th><th>exposed "
                 "communication</th><th>peak live parameters</th></tr>\n");
  for (const sim::SweepPoint& p : points) {
    const std::string_view status = cell_status(p);
    fmt::format_to(it, "<tr class=\"{}-cell\">", status == "pass" ? "pass" : status);
    for (size_t a = 0; a < axes.size(); ++a) {
      fmt::format_to(it, "<td class=\"name\">{}</td>",
                     a < p.values.size() ? html_escape(p.values[a]) : "");
    }
    const bool timed = cell_has_timing(p);
    fmt::format_to(it,
                   "<td class=\"{}\">{}</td><td title=\"{}\">{}</td><td class=\"num\">{}</td><td "
                   "class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                   status == "pass" ? "pass" : "failed", status,
                   html_escape(status == "pass" ? "" : failure_title(p)),
                   p.error.empty() ? std::string(format_as(p.outcome.kind)) : "-",
                   timed ? human_duration(p.step_ns) : "-",
                   timed ? human_duration(p.exposed_comm_ns) : "-",
                   p.error.empty() ? human_bytes(p.peak_live_bytes) : "-");
  }
  fmt::format_to(it, "</table>\n</section>\n");
}

}  // namespace

std::string sweep_report_html(const SweepContext& context, const std::vector<sim::SweepAxis>& axes,
                              const std::vector<sim::SweepPoint>& points) {
  fmt::memory_buffer out;
  const model::Scenario& scenario = *context.scenario;
  html_page_begin("zfetch sweep: " + scenario.name, out);
  size_t passed = 0;
  for (const sim::SweepPoint& p : points) {
    passed += cell_status(p) == "pass" ? 1U : 0U;
  }
  fmt::format_to(std::back_inserter(out),
                 "<section id=\"summary\"><p>scenario <code>{}</code>, discovery <code>{}</code>: "
                 "{} cells, <span class=\"pass\">{} passed</span>, <span class=\"{}\">{} did "
                 "not</span></p></section>\n",
                 html_escape(scenario.path), model::format_as(context.discovery), points.size(),
                 passed, passed == points.size() ? "pass" : "failed", points.size() - passed);
  if (!axes.empty()) {
    plots_section(axes, points, out);
  }
  table_section(axes, points, out);
  html_page_end(out);
  return fmt::to_string(out);
}

}  // namespace zfetch::tools
