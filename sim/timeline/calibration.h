// Calibration constants of the cost model, read from `zfetch-gpu bench` JSON (docs/calibration.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/diagnostic.h"
#include "model/scenario.h"
#include "sim/timeline/tick.h"

namespace zfetch::sim {

/// Latency and bus bandwidth of one collective, as nccl-tests reports them.
struct CollectiveCalibration {
  Tick alpha_ns = 0;              ///< fixed cost per call, ns
  int64_t busbw_bytes_per_s = 0;  ///< bus bandwidth, bytes/s (1 GB/s = 1e9 B/s as in nccl-tests)
  /// The measured curve, used instead of the line when the section says "interpolate": true:
  /// (bytes, ns) points in increasing bytes (at least two), timed at the file's world size.
  struct Point {
    int64_t bytes = 0;
    Tick time_ns = 0;
  };
  std::vector<Point> curve{};
  /// With a curve: the same round trips for buckets of odd params (whose rank slices are not
  /// whole 16-byte vectors: the replay's gather copies them by slower paths), "odd_points". A
  /// gather is charged its odd params' share of the difference (docs/timeline.md).
  std::vector<Point> odd_curve{};
};

/// Every constant of the cost model, already converted to integers (floats are read from the
/// file and rounded once, to the nearest integer, in parse_calibration).
struct Calibration {
  /// What outputs call the calibration: the file's "name" (the builtins: measured-hopper-1gpu,
  /// measured-hopper-2gpu, published-8gpu-nvlink), else the file name. Outputs never print
  /// `machine`, so a run's text does not depend on where the numbers were measured.
  std::string name;
  std::string machine;  ///< free text from the file: the hardware it was measured on
  std::string source;   ///< how it was measured
  int64_t world_size = 1;
  CollectiveCalibration allgather;
  CollectiveCalibration reduce_scatter;  ///< defaults to `allgather` when the file has none
  int64_t d2d_bytes_per_s = 0;           ///< device-to-device copy bandwidth (0: not measured)
  /// host-to-device copy bandwidth (offload_param): "h2d.bandwidth_GBps", or the rate of
  /// "h2d.beside_gather" (copies pipelined beside gathers) when the file measured it
  int64_t h2d_bytes_per_s = 0;
  Tick h2d_alpha_ns = 0;  ///< fixed cost per host-to-device copy (0: not measured)
  /// A measured copy smaller than the line's first point ("h2d.small_copy"; bytes 0: none) and
  /// that first point's bytes ("h2d.points"): below it a copy costs the interpolation between the
  /// two, not the line (a tiny copy costs less than the line's alpha).
  CollectiveCalibration::Point h2d_small_copy{};
  int64_t h2d_line_from_bytes = 0;
  Tick step_fixed_ns = 0;   ///< fixed cost at the start of each optimizer step ("step.fixed_ns")
  int64_t flops_per_s = 0;  ///< dense compute rate for derived module times
};

/// H200 SXM dense BF16 peak from NVIDIA's H200 datasheet: 989 TFLOPS (1,979 with sparsity).
/// Used when a calibration has no "compute" block; real kernels reach a fraction of it.
inline constexpr int64_t kDefaultFlopsPerSecond = 989'000'000'000'000;

/// Device-to-device copy bandwidth (bytes counted once) used for memory-bound modules (embedding
/// lookups, norms) when a calibration has no d2d_copy_GBps: the H200's cudaMemcpyAsync, 2089 GB/s
/// measured by `zfetch-gpu bench` (docs/gpu.md).
inline constexpr int64_t kDefaultCopyBytesPerSecond = 2'089'000'000'000;

/// The result of parsing a calibration: a value when `diagnostics` is empty.
struct CalibrationResult {
  std::optional<Calibration> calibration;
  model::DiagnosticList diagnostics;
};

/// Parses calibration JSON `text`; `file_name` is used in diagnostics, which carry 1-based
/// line:col positions. Never throws for bad input.
CalibrationResult parse_calibration(std::string_view file_name, std::string_view text);

/// Reads and parses the file at `path`; an unreadable file is a diagnostic.
CalibrationResult load_calibration_file(const std::string& path);

/// Names of the calibrations built into the binary (from scenarios/calibration/*.json at build
/// time), sorted: e.g. "h100x8-nvlink", "h200x1".
std::vector<std::string_view> builtin_calibration_names();

/// The built-in calibration `name` (a name from builtin_calibration_names()); diagnostics when
/// there is none by that name.
CalibrationResult builtin_calibration(std::string_view name);

/// The built-in calibration used when a scenario names none: "h200x1" for world size 1,
/// "h200x2" for 2 (both measured), "h100x8-nvlink" (published figures) for larger worlds.
std::string_view default_calibration_name(int64_t world_size);

/// The calibration a scenario asks for: `timing.calibration` when set (a built-in name, or a
/// path relative to the scenario file's directory), otherwise default_calibration_name().
CalibrationResult resolve_calibration(const model::Scenario& scenario);

}  // namespace zfetch::sim
