// Sweep tables, JSON and CSV (see sweep_output.h and docs/sweep-format.md).
#include "tools/sweep_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "tools/human_units.h"
#include "tools/terminal_colour.h"
#include "trace/names.h"

namespace zfetch::tools {

namespace {

using Json = nlohmann::ordered_json;

constexpr int kSweepFormatVersion = 1;

std::string outcome_cell(const sim::SweepPoint& p) {
  if (!p.error.empty()) {
    return "error: " + p.error;
  }
  std::string outcome(format_as(p.outcome.kind));
  if (p.outcome.kind == sim::OutcomeKind::TraceInvalidated) {
    outcome += fmt::format("({})", p.outcome.invalidations);
  }
  return outcome;
}

Json cell_json(const model::Scenario& scenario, const std::vector<sim::SweepAxis>& axes,
               const sim::SweepPoint& p) {
  Json values = Json::object();
  for (size_t a = 0; a < axes.size() && a < p.values.size(); ++a) {
    values[axes[a].key] = p.values[a];
  }
  Json j;
  j["values"] = std::move(values);
  j["status"] = cell_status(p);
  const bool ran = p.error.empty();
  j["outcome"] = ran ? Json(format_as(p.outcome.kind)) : Json(nullptr);
  j["invalidations"] = ran ? Json(p.outcome.invalidations) : Json(nullptr);
  const bool timed = cell_has_timing(p);
  j["last_step"] = timed ? Json(p.last_step) : Json(nullptr);
  j["step_ns"] = timed ? Json(p.step_ns) : Json(nullptr);
  j["exposed_comm_ns"] = timed ? Json(p.exposed_comm_ns) : Json(nullptr);
  j["end_ns"] = ran ? Json(p.end_ns) : Json(nullptr);
  j["peak_live_bytes"] = ran ? Json(p.peak_live_bytes) : Json(nullptr);
  if (ran && p.outcome.failure) {
    const sim::Failure& f = *p.outcome.failure;
    j["failure"] = {
        {"phase", trace::format_as(f.phase)},
        {"module",
         f.module < scenario.modules.size()
             ? std::string(trace::display_module_name(scenario.modules[f.module].qualified_name))
             : std::string()},
        {"rank", f.rank},
        {"engine", f.engine},
        {"micro_step", f.micro_step},
        {"trace_step", f.trace_step},
        {"message", f.message}};
  } else {
    j["failure"] = nullptr;
  }
  j["error"] = ran ? Json(nullptr) : Json(p.error);
  return j;
}

Json header_json(const SweepContext& context, std::string_view mode) {
  Json j;
  j["format"] = "zfetch-sweep";
  j["version"] = kSweepFormatVersion;
  j["mode"] = mode;
  j["scenario"] = context.scenario->name;
  j["path"] = context.scenario->path;
  j["discovery"] = format_as(context.discovery);
  return j;
}

Json axes_json(const std::vector<sim::SweepAxis>& axes) {
  Json j = Json::array();
  for (const sim::SweepAxis& axis : axes) {
    j.push_back({{"key", axis.key}, {"values", axis.values}});
  }
  return j;
}

// Code points, as fmt counts them when it pads ("µs" is 2 wide, 3 bytes).
size_t display_width(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// RFC 4180: quoted when it holds a comma, a quote or a line break; quotes doubled.
std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out = "\"";
  for (char c : text) {
    out += c == '"' ? "\"\"" : std::string(1, c);
  }
  return out + "\"";
}

}  // namespace

std::string_view cell_status(const sim::SweepPoint& point) {
  if (!point.error.empty()) {
    return "error";
  }
  return point.outcome.failure ? "failed" : "pass";
}

bool cell_has_timing(const sim::SweepPoint& point) {
  return cell_status(point) == "pass";
}

bool sort_cells(std::vector<sim::SweepPoint>& points, std::string_view key) {
  int64_t sim::SweepPoint::*field = nullptr;
  if (key == "step_time") {
    field = &sim::SweepPoint::step_ns;
  } else if (key == "exposed_comm") {
    field = &sim::SweepPoint::exposed_comm_ns;
  } else if (key == "peak_live") {
    field = &sim::SweepPoint::peak_live_bytes;
  } else {
    return false;
  }
  // Stable: equal keys, and every failed or errored cell, keep the combination order.
  std::stable_sort(points.begin(), points.end(),
                   [field](const sim::SweepPoint& a, const sim::SweepPoint& b) {
                     const bool a_timed = cell_has_timing(a);
                     const bool b_timed = cell_has_timing(b);
                     if (a_timed != b_timed) {
                       return a_timed;
                     }
                     return a_timed && a.*field < b.*field;
                   });
  return true;
}

std::string sweep_table(const std::vector<sim::SweepAxis>& axes,
                        const std::vector<sim::SweepPoint>& points, bool colour) {
  // Columns: one per axis, then the results; every cell is text so widths can be measured.
  std::vector<std::string> header;
  for (const sim::SweepAxis& axis : axes) {
    header.push_back(axis.key);
  }
  for (const char* h : {"outcome", "step_time", "exposed_comm", "peak_live"}) {
    header.emplace_back(h);
  }
  std::vector<std::vector<std::string>> rows;
  for (const sim::SweepPoint& p : points) {
    std::vector<std::string> row = p.values;
    row.resize(axes.size());
    row.push_back(outcome_cell(p));
    if (!p.error.empty()) {
      row.insert(row.end(), 3, "-");
    } else {
      const bool timed = cell_has_timing(p);
      row.push_back(timed ? human_duration(p.step_ns) : "-");
      row.push_back(timed ? human_duration(p.exposed_comm_ns) : "-");
      row.push_back(human_bytes(p.peak_live_bytes));
    }
    rows.push_back(std::move(row));
  }
  const size_t outcome_column = axes.size();
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) {
      // An error message runs past its column; it does not widen the table.
      if (!(c == outcome_column && row[c].starts_with("error: "))) {
        width[c] = std::max(width[c], display_width(row[c]));
      }
    }
  }
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  const auto line = [&](const char* lead, const std::vector<std::string>& cells,
                        const sim::SweepPoint* point) {
    std::string text = lead;
    for (size_t c = 0; c < cells.size(); ++c) {
      // Values and outcome left-aligned, numbers right-aligned.
      const bool left = c <= outcome_column;
      std::string cell = left ? fmt::format("{:<{}}", cells[c], width[c])
                              : fmt::format("{:>{}}", cells[c], width[c]);
      if (point != nullptr && c == outcome_column) {
        cell = paint(cell, cell_status(*point) == "pass" ? Colour::Pass : Colour::Failure, colour);
      }
      text += c == 0 ? "" : "  ";
      text += cell;
    }
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    fmt::format_to(it, "{}\n", text);
  };
  line("# ", header, nullptr);
  for (size_t r = 0; r < rows.size(); ++r) {
    line("  ", rows[r], &points[r]);
  }
  return fmt::to_string(out);
}

std::string sweep_json(const SweepContext& context, const std::vector<sim::SweepAxis>& axes,
                       const std::vector<sim::SweepPoint>& points) {
  Json j = header_json(context, "grid");
  j["axes"] = axes_json(axes);
  Json cells = Json::array();
  for (const sim::SweepPoint& p : points) {
    cells.push_back(cell_json(*context.scenario, axes, p));
  }
  j["cells"] = std::move(cells);
  return j.dump(2) + "\n";
}

std::string bisect_json(const SweepContext& context, const std::vector<sim::SweepAxis>& fixed_axes,
                        const std::vector<BisectionReport>& searches) {
  Json j = header_json(context, "bisect");
  j["axes"] = axes_json(fixed_axes);
  Json list = Json::array();
  for (const BisectionReport& s : searches) {
    std::vector<sim::SweepAxis> axes = fixed_axes;
    axes.push_back({s.key, {}});
    Json fixed = Json::object();
    for (size_t a = 0; a < fixed_axes.size() && a < s.fixed_values.size(); ++a) {
      fixed[fixed_axes[a].key] = s.fixed_values[a];
    }
    Json b;
    b["fixed"] = std::move(fixed);
    b["key"] = s.key;
    b["lo"] = s.lo;
    b["hi"] = s.hi;
    b["error"] = s.result.error.empty() ? Json(nullptr) : Json(s.result.error);
    b["changed"] = s.result.changed;
    b["below"] = s.result.below;
    b["above"] = s.result.above;
    b["runs"] = s.result.runs;
    Json cells = Json::array();
    if (s.result.error.empty()) {
      cells.push_back(cell_json(*context.scenario, axes, s.result.below_point));
      cells.push_back(cell_json(*context.scenario, axes, s.result.above_point));
    }
    b["cells"] = std::move(cells);
    list.push_back(std::move(b));
  }
  j["bisections"] = std::move(list);
  return j.dump(2) + "\n";
}

std::string sweep_csv(const std::vector<sim::SweepAxis>& axes,
                      const std::vector<sim::SweepPoint>& points) {
  std::string out;
  for (const sim::SweepAxis& axis : axes) {
    out += csv_field(axis.key) + ",";
  }
  out +=
      "status,outcome,invalidations,last_step,step_ns,exposed_comm_ns,end_ns,peak_live_bytes,"
      "error\r\n";
  for (const sim::SweepPoint& p : points) {
    for (size_t a = 0; a < axes.size(); ++a) {
      out += csv_field(a < p.values.size() ? p.values[a] : "") + ",";
    }
    const bool ran = p.error.empty();
    const bool timed = cell_has_timing(p);
    // Empty fields where a value does not exist (never 0, which would read as fast).
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{}\r\n", cell_status(p),
        ran ? std::string(format_as(p.outcome.kind)) : "",
        ran ? std::to_string(p.outcome.invalidations) : "",
        timed ? std::to_string(p.last_step) : "", timed ? std::to_string(p.step_ns) : "",
        timed ? std::to_string(p.exposed_comm_ns) : "", ran ? std::to_string(p.end_ns) : "",
        ran ? std::to_string(p.peak_live_bytes) : "", csv_field(p.error));
  }
  return out;
}

}  // namespace zfetch::tools
