// Shared helpers of the perftests: a wall clock, peak RSS, and the `metric value unit` lines
// that tools/bench turns into its table.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string_view>

namespace zfetch::perf {

/// Seconds since `start` on the monotonic clock.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// CPU seconds this thread has used. Throughputs are computed from this, not wall time: on a
/// shared machine wall time also counts the time other processes hold the core.
inline double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

/// Peak resident set size of this process so far, in MiB (Linux reports ru_maxrss in KiB).
inline double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// One result line, tab-separated: `benchmark<TAB>metric<TAB>value<TAB>unit`. Values of 100 and
/// more are printed as whole numbers (12345678, not 1.23457e+07), smaller ones with 2 decimals.
inline void report(std::string_view benchmark, std::string_view metric, double value,
                   std::string_view unit) {
  std::printf(value >= 100 ? "%.*s\t%.*s\t%.0f\t%.*s\n" : "%.*s\t%.*s\t%.2f\t%.*s\n",
              static_cast<int>(benchmark.size()), benchmark.data(), static_cast<int>(metric.size()),
              metric.data(), value, static_cast<int>(unit.size()), unit.data());
}

}  // namespace zfetch::perf
