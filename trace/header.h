// The first line of a trace file: format, version and what was simulated.
#pragma once

#include <cstdint>
#include <string>

namespace zfetch::trace {

struct TraceHeader {
  int version = 1;
  std::string scenario;  ///< scenario name
  int64_t world_size = 1;
  std::string discovery;  ///< resident-skip | residency-independent
};

}  // namespace zfetch::trace
