// Simulated time: integer nanoseconds, so that sums are exact and every run is byte-identical.
#pragma once

#include <cstdint>
#include <limits>

namespace zfetch::sim {

/// Simulated time in integer nanoseconds. Signed to match trace::Event::t_ns.
using Tick = int64_t;

/// The largest time or duration (about 292 years): a result beyond it saturates here.
inline constexpr Tick kTickMax = std::numeric_limits<Tick>::max();

/// Adds `amount` to `sum` (times, durations, byte counts); when the exact sum does not fit in
/// 64 bits, `sum` saturates (at the largest or smallest value) and the result is false.
[[nodiscard]] inline bool add_exact(int64_t& sum, int64_t amount) {
  if (__builtin_add_overflow(sum, amount, &sum)) {
    sum = amount > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    return false;
  }
  return true;
}

/// a + b saturating at the limits of Tick, for durations the cost model combines.
[[nodiscard]] inline Tick saturating_add(Tick a, Tick b) {
  (void)add_exact(a, b);
  return a;
}

}  // namespace zfetch::sim
