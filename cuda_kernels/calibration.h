// Fitting the cost model's time = alpha + bytes * factor / bandwidth to measured points (no CUDA).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace zfetch::gpu {

/// One measured point: `bytes` moved in `time_ns` (a median).
struct TimedPoint {
  double bytes = 0;
  double time_ns = 0;
};

/// time_ns = alpha_ns + bytes * factor / bandwidth_GBps (bytes per ns is GB/s).
struct LinearFit {
  double alpha_ns = 0;
  double bandwidth_gbps = 0;  ///< 0 when factor is 0 or the fit has no slope
};

/// Weighted least squares on relative error (weights 1/t^2, so small and large sizes count
/// alike); alpha is clamped at 0 (then the slope is refitted through the origin). `factor` is
/// 1 for algbw and (W-1)/W for an all-gather's or reduce-scatter's busbw (NVIDIA/nccl-tests
/// doc/PERFORMANCE.md); with factor 0 (one rank) only alpha is fitted.
[[nodiscard]] LinearFit fit_alpha_bandwidth(std::span<const TimedPoint> points, double factor);

/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
[[nodiscard]] double median(std::vector<double> v);

/// nccl-tests' bus-bandwidth factor for all-gather and reduce-scatter over `world` ranks:
/// (W-1)/W (doc/PERFORMANCE.md), 0 for one rank.
[[nodiscard]] double allgather_bus_factor(int world);

}  // namespace zfetch::gpu
