// Reading calibration JSON into integer cost-model constants, with line:col diagnostics.
#include "sim/timeline/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/input_file.h"
#include "model/json_parse.h"
#include "model/limits.h"
#include "model/read_error.h"

namespace zfetch::sim {

namespace {

using nlohmann::json;

// The files of scenarios/calibration/, embedded at build time (sim/timeline/CMakeLists.txt):
// `constexpr EmbeddedCalibration kEmbeddedCalibrations[]`, sorted by name, possibly empty.
struct EmbeddedCalibration {
  std::string_view name;
  std::string_view text;
};
#include "sim/timeline/calibration_defaults.inc"

// 1-based line and column of byte `offset` of `text`.
model::SourceLoc loc_at(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  model::SourceLoc loc{1, 1};
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.col = 1;
    } else {
      ++loc.col;
    }
  }
  return loc;
}

std::string line_of(std::string_view text, uint32_t line) {
  size_t begin = 0;
  for (uint32_t l = 1; l < line && begin != std::string_view::npos; ++l) {
    begin = text.find('\n', begin);
    if (begin != std::string_view::npos) {
      ++begin;
    }
  }
  if (begin == std::string_view::npos || begin > text.size()) {
    return {};
  }
  const size_t end = text.find('\n', begin);
  return std::string(
      text.substr(begin, end == std::string_view::npos ? text.size() - begin : end - begin));
}

// The JSON library keeps no positions, so a key's position is found by scanning for the
// quoted keys of its path in order ("allgather" then "busbw_GBps"). Calibration files are
// small and machine-written, so this finds the right occurrence; when a key is missing the
// position of its deepest present parent (or 1:1) is used.
size_t find_key(std::string_view text, std::initializer_list<std::string_view> path) {
  size_t at = 0;
  size_t found = 0;
  for (std::string_view key : path) {
    const size_t pos = text.find(fmt::format("\"{}\"", key), at);
    if (pos == std::string_view::npos) {
      break;
    }
    found = pos;
    at = pos + key.size() + 2;
  }
  return found;
}

// The largest value of a calibration number (times in ns, bytes, flops/s), and of a bandwidth
// in GB/s (so that it fits in int64_t bytes/s); docs/calibration.md.
struct Limit {
  double value;
  std::string_view text;  ///< as messages write it
};
constexpr Limit kMaxValue{1e18, "1e18"};
constexpr Limit kMaxGbps{1e9, "1e9"};
// Calibrations are measured on real machines: a world of more ranks is a typo.
constexpr Limit kMaxWorldSize{static_cast<double>(model::kMaxWorldSize), "1048576"};

class Reader {
 public:
  Reader(std::string_view file, std::string_view text) : file_(file), text_(text) {}

  void error_at(size_t offset, std::string message, uint32_t length = 1) {
    model::Diagnostic d;
    d.file = std::string(file_);
    d.loc = loc_at(text_, offset);
    d.length = length;
    d.message = std::move(message);
    d.source_line = line_of(text_, d.loc.line);
    diagnostics_.push_back(std::move(d));
  }

  void error(std::initializer_list<std::string_view> path, std::string message) {
    const size_t at = find_key(text_, path);
    const std::string_view last = *(path.end() - 1);
    const bool present = text_.substr(at).starts_with(fmt::format("\"{}\"", last));
    error_at(at, std::move(message), present ? static_cast<uint32_t>(last.size() + 2) : 1);
  }

  // A number in [0, max] at `object[key]`; `required` absent keys are errors.
  std::optional<double> number(const json& object, std::initializer_list<std::string_view> path,
                               bool required, Limit max = kMaxValue) {
    const std::string key(*(path.end() - 1));
    const auto it = object.find(key);
    if (it == object.end()) {
      if (required) {
        error(path, fmt::format("missing required key '{}'", dotted(path)));
      }
      return std::nullopt;
    }
    if (!it->is_number()) {
      error(path, fmt::format("expected a number for '{}', got {}", dotted(path), it->type_name()));
      return std::nullopt;
    }
    const double value = it->get<double>();
    if (!std::isfinite(value) || value < 0 || value > max.value) {
      error(path, fmt::format("expected a number between 0 and {} for '{}', got {}", max.text,
                              dotted(path), it->dump()));
      return std::nullopt;
    }
    return value;
  }

  const json* object(const json& parent, std::initializer_list<std::string_view> path,
                     bool required) {
    const std::string key(*(path.end() - 1));
    const auto it = parent.find(key);
    if (it == parent.end()) {
      if (required) {
        error(path, fmt::format("missing required key '{}'", dotted(path)));
      }
      return nullptr;
    }
    if (!it->is_object()) {
      error(path,
            fmt::format("expected an object for '{}', got {}", dotted(path), it->type_name()));
      return nullptr;
    }
    return &*it;
  }

  model::DiagnosticList take() { return std::move(diagnostics_); }
  [[nodiscard]] bool ok() const { return diagnostics_.empty(); }

 private:
  static std::string dotted(std::initializer_list<std::string_view> path) {
    std::string out;
    for (std::string_view key : path) {
      if (!out.empty()) {
        out += '.';
      }
      out += key;
    }
    return out;
  }

  std::string_view file_;
  std::string_view text_;
  model::DiagnosticList diagnostics_;
};

// GB/s (1e9 bytes per second, the nccl-tests unit) to bytes/s, rounded to the nearest.
int64_t gbps_to_bytes(double gbps) {
  return std::llround(gbps * 1e9);
}

// The (bytes, time_ns) objects of `points` (the array `name.key`), bytes strictly increasing.
std::vector<CollectiveCalibration::Point> read_points(Reader& reader, const json& points,
                                                      std::string_view name, std::string_view key) {
  std::vector<CollectiveCalibration::Point> curve;
  for (const json& p : points) {
    if (!p.is_object()) {
      reader.error({name, key}, fmt::format("expected objects in '{}.{}'", name, key));
      return {};
    }
    const auto bytes = reader.number(p, {name, key, "bytes"}, true);
    const auto time = reader.number(p, {name, key, "time_ns"}, true);
    if (!bytes || !time) {
      return {};
    }
    const CollectiveCalibration::Point point{std::llround(*bytes), std::llround(*time)};
    if (!curve.empty() && point.bytes <= curve.back().bytes) {
      reader.error({name, key}, fmt::format("'{}.{}' must be in increasing bytes ({} after {})",
                                            name, key, point.bytes, curve.back().bytes));
      return {};
    }
    curve.push_back(point);
  }
  return curve;
}

// The measured curve of `section` when it says "interpolate": true (docs/calibration.md): its
// "points" as (bytes, time_ns), at least two, bytes strictly increasing; else none.
std::vector<CollectiveCalibration::Point> read_curve(Reader& reader, const json& section,
                                                     std::string_view name) {
  std::vector<CollectiveCalibration::Point> curve;
  const auto flag = section.find("interpolate");
  if (flag == section.end()) {
    return curve;
  }
  if (!flag->is_boolean()) {
    reader.error({name, "interpolate"},
                 fmt::format("expected true or false for '{}.interpolate', got {}", name,
                             flag->type_name()));
    return curve;
  }
  if (!flag->get<bool>()) {
    return curve;
  }
  const auto points = section.find("points");
  if (points == section.end() || !points->is_array() || points->size() < 2) {
    reader.error(
        {name, "interpolate"},
        fmt::format("'{}.interpolate' needs a 'points' array of at least two points", name));
    return curve;
  }
  return read_points(reader, *points, name, "points");
}

// `section.key` (an array of {bytes, time_ns}, bytes strictly increasing) when present and the
// section has a curve; at least two points.
std::vector<CollectiveCalibration::Point> read_optional_curve(Reader& reader, const json& section,
                                                              std::string_view name,
                                                              std::string_view key) {
  const auto points = section.find(key);
  if (points == section.end()) {
    return {};
  }
  if (!points->is_array() || points->size() < 2) {
    reader.error({name, key},
                 fmt::format("'{}.{}' needs an array of at least two points", name, key));
    return {};
  }
  return read_points(reader, *points, name, key);
}

CalibrationResult failure(std::string file, std::string message) {
  CalibrationResult result;
  model::Diagnostic d;
  d.file = std::move(file);
  d.message = std::move(message);
  result.diagnostics.push_back(std::move(d));
  return result;
}

std::optional<std::string_view> embedded_text(std::string_view name) {
  for (const EmbeddedCalibration& c : kEmbeddedCalibrations) {
    if (!c.name.empty() && c.name == name) {
      return c.text;
    }
  }
  return std::nullopt;
}

}  // namespace

CalibrationResult parse_calibration(std::string_view file_name, std::string_view text) {
  CalibrationResult result;
  Reader reader(file_name, text);
  model::JsonParseResult parsed = model::parse_json(text);
  if (parsed.error) {
    reader.error_at(parsed.error->offset, "invalid JSON: " + parsed.error->message);
    result.diagnostics = reader.take();
    return result;
  }
  const json root = std::move(parsed.value);
  if (!root.is_object()) {
    reader.error_at(0, fmt::format("expected a JSON object, got {}", root.type_name()));
    result.diagnostics = reader.take();
    return result;
  }
  const auto format = root.find("format");
  if (format == root.end() || !format->is_string() || *format != "zfetch-calibration") {
    reader.error({"format"}, fmt::format("expected \"format\": \"zfetch-calibration\", got {}",
                                         format == root.end() ? "nothing" : format->dump()));
  }
  const auto version = root.find("version");
  if (version == root.end() || !version->is_number_integer() || *version != 1) {
    reader.error({"version"}, fmt::format("unsupported calibration version {} (this build reads 1)",
                                          version == root.end() ? "nothing" : version->dump()));
  }
  Calibration c;
  c.name = file_name;
  if (const auto it = root.find("name"); it != root.end() && it->is_string()) {
    c.name = it->get<std::string>();
  }
  if (const auto it = root.find("machine"); it != root.end() && it->is_string()) {
    c.machine = it->get<std::string>();
  }
  if (const auto it = root.find("source"); it != root.end() && it->is_string()) {
    c.source = it->get<std::string>();
  }
  if (const auto ws = reader.number(root, {"world_size"}, false, kMaxWorldSize)) {
    c.world_size = std::max<int64_t>(1, std::llround(*ws));
  }
  if (const json* ag = reader.object(root, {"allgather"}, true)) {
    const auto alpha = reader.number(*ag, {"allgather", "alpha_ns"}, true);
    const auto bw = reader.number(*ag, {"allgather", "busbw_GBps"}, true, kMaxGbps);
    c.allgather = {std::llround(alpha.value_or(0)), gbps_to_bytes(bw.value_or(0))};
    c.allgather.curve = read_curve(reader, *ag, "allgather");
    if (!c.allgather.curve.empty()) {
      c.allgather.odd_curve = read_optional_curve(reader, *ag, "allgather", "odd_points");
    }
  }
  c.reduce_scatter = c.allgather;
  if (const json* rs = reader.object(root, {"reduce_scatter"}, false)) {
    const auto alpha = reader.number(*rs, {"reduce_scatter", "alpha_ns"}, true);
    const auto bw = reader.number(*rs, {"reduce_scatter", "busbw_GBps"}, true, kMaxGbps);
    c.reduce_scatter = {std::llround(alpha.value_or(0)), gbps_to_bytes(bw.value_or(0))};
    c.reduce_scatter.curve = read_curve(reader, *rs, "reduce_scatter");
  }
  if (const auto d2d = reader.number(root, {"d2d_copy_GBps"}, false, kMaxGbps)) {
    c.d2d_bytes_per_s = gbps_to_bytes(*d2d);
  }
  if (const json* h2d = reader.object(root, {"h2d"}, true)) {
    if (const auto bw = reader.number(*h2d, {"h2d", "bandwidth_GBps"}, true, kMaxGbps)) {
      c.h2d_bytes_per_s = gbps_to_bytes(*bw);
    }
    if (const auto alpha = reader.number(*h2d, {"h2d", "alpha_ns"}, false)) {
      c.h2d_alpha_ns = std::llround(*alpha);
    }
    const json* small = reader.object(*h2d, {"h2d", "small_copy"}, false);
    const auto line = h2d->find("points");
    if (small != nullptr && line != h2d->end() && line->is_array() && !line->empty()) {
      const auto bytes = reader.number(*small, {"h2d", "small_copy", "bytes"}, true);
      const auto time = reader.number(*small, {"h2d", "small_copy", "time_ns"}, true);
      const std::vector<CollectiveCalibration::Point> first =
          read_points(reader, json::array({line->front()}), "h2d", "points");
      if (bytes && time && !first.empty()) {
        c.h2d_small_copy = {std::llround(*bytes), std::llround(*time)};
        c.h2d_line_from_bytes = first.front().bytes;
        if (c.h2d_small_copy.bytes >= c.h2d_line_from_bytes || c.h2d_small_copy.bytes <= 0) {
          reader.error({"h2d", "small_copy", "bytes"},
                       fmt::format("'h2d.small_copy.bytes' must be above 0 and below the first "
                                   "of 'h2d.points' ({}), got {}",
                                   c.h2d_line_from_bytes, c.h2d_small_copy.bytes));
        }
      }
    }
    // Copies pipelined beside gathers (what a prefetching offloaded schedule runs): when measured,
    // their rate is the copy bandwidth; the line's bandwidth_GBps is copies each alone.
    if (const json* beside = reader.object(*h2d, {"h2d", "beside_gather"}, false)) {
      const auto bytes = reader.number(*beside, {"h2d", "beside_gather", "bytes"}, true);
      const auto time = reader.number(*beside, {"h2d", "beside_gather", "time_ns"}, true);
      if (bytes && time) {
        const double transfer_ns = *time - static_cast<double>(c.h2d_alpha_ns);
        if (*bytes <= 0 || transfer_ns <= 0) {
          reader.error({"h2d", "beside_gather", "time_ns"},
                       fmt::format("'h2d.beside_gather' must move bytes in more than "
                                   "'h2d.alpha_ns' ({} ns), got {} bytes in {} ns",
                                   c.h2d_alpha_ns, *bytes, *time));
        } else {
          c.h2d_bytes_per_s = std::llround(*bytes * 1e9 / transfer_ns);
        }
      }
    }
  }
  if (const json* step = reader.object(root, {"step"}, false)) {
    if (const auto fixed = reader.number(*step, {"step", "fixed_ns"}, true)) {
      c.step_fixed_ns = std::llround(*fixed);
    }
  }
  c.flops_per_s = kDefaultFlopsPerSecond;
  if (const json* compute = reader.object(root, {"compute"}, false)) {
    if (const auto flops = reader.number(*compute, {"compute", "flops_per_s"}, true)) {
      c.flops_per_s = std::llround(*flops);
    }
  }
  if (reader.ok()) {
    result.calibration = std::move(c);
  }
  result.diagnostics = reader.take();
  return result;
}

CalibrationResult load_calibration_file(const std::string& path) {
  const io::InputText input = io::read_input_file(path);
  if (!input.text) {
    CalibrationResult result;
    result.diagnostics.push_back(model::read_error(path, input, "cannot read calibration file"));
    return result;
  }
  return parse_calibration(path, *input.text);
}

std::vector<std::string_view> builtin_calibration_names() {
  std::vector<std::string_view> names;
  for (const EmbeddedCalibration& c : kEmbeddedCalibrations) {
    if (!c.name.empty()) {
      names.push_back(c.name);
    }
  }
  return names;
}

CalibrationResult builtin_calibration(std::string_view name) {
  if (const auto text = embedded_text(name)) {
    return parse_calibration(fmt::format("<builtin {}>", name), *text);
  }
  std::string valid;
  for (std::string_view n : builtin_calibration_names()) {
    valid += valid.empty() ? "" : ", ";
    valid += n;
  }
  return failure("command line",
                 fmt::format("unknown calibration '{}'; valid values are: {}", name, valid));
}

std::string_view default_calibration_name(int64_t world_size) {
  // Measured files for the world sizes measured (one and two H200s); larger worlds take the
  // published 8x H100 figures until 4- and 8-GPU machines are measured.
  if (world_size <= 1) {
    return "h200x1";
  }
  return world_size == 2 ? "h200x2" : "h100x8-nvlink";
}

CalibrationResult resolve_calibration(const model::Scenario& scenario) {
  const std::string& name = scenario.timing.calibration;
  if (name.empty()) {
    return builtin_calibration(default_calibration_name(scenario.world_size));
  }
  if (embedded_text(name)) {
    return builtin_calibration(name);
  }
  std::filesystem::path path(name);
  if (path.is_relative()) {
    path = std::filesystem::path(scenario.path).parent_path() / path;
  }
  return load_calibration_file(path.generic_string());
}

}  // namespace zfetch::sim
