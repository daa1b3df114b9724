// Simulated time: integer nanoseconds, so that sums are exact and every run is byte-identical.
#pragma once

#include <cstdint>

namespace zfetch::sim {

/// Simulated time in integer nanoseconds. Signed to match trace::Event::t_ns.
using Tick = int64_t;

}  // namespace zfetch::sim
