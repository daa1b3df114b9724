// Least-squares fit of alpha and bandwidth (see calibration.h).
#include "cuda_kernels/calibration.h"

#include <algorithm>

namespace zfetch::gpu {

double median(std::vector<double> v) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double allgather_bus_factor(int world) {
  return world <= 1 ? 0.0 : static_cast<double>(world - 1) / static_cast<double>(world);
}

LinearFit fit_alpha_bandwidth(std::span<const TimedPoint> points, double factor) {
  LinearFit fit;
  double sw = 0;
  double swx = 0;
  double swxx = 0;
  double swt = 0;
  double swxt = 0;
  for (const TimedPoint& p : points) {
    if (p.time_ns <= 0) {
      continue;
    }
    const double w = 1.0 / (p.time_ns * p.time_ns);
    const double x = p.bytes * factor;
    sw += w;
    swx += w * x;
    swxx += w * x * x;
    swt += w * p.time_ns;
    swxt += w * x * p.time_ns;
  }
  if (sw == 0) {
    return fit;
  }
  const double det = sw * swxx - swx * swx;
  double slope = 0;
  double alpha = swt / sw;
  if (factor > 0 && det > 0) {
    slope = (sw * swxt - swx * swt) / det;
    alpha = (swt - slope * swx) / sw;
    if (alpha < 0) {
      alpha = 0;
      slope = swxt / swxx;
    }
  }
  fit.alpha_ns = alpha;
  fit.bandwidth_gbps = slope > 0 ? 1.0 / slope : 0.0;
  return fit;
}

}  // namespace zfetch::gpu
