// Integer-only unit scaling for text output (see human_units.h).
#include "tools/human_units.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

namespace zfetch::tools {

namespace {

struct Unit {
  int64_t scale;
  std::string_view name;
};

// `value` / unit.scale with 2 decimals, rounded half up, in the largest unit that keeps it
// >= 1; values below the second unit print as integers of the first.
template <size_t N>
std::string scaled(int64_t value, const std::array<Unit, N>& units) {
  const bool negative = value < 0;
  // Magnitude as unsigned so that INT64_MIN has one too.
  const uint64_t magnitude =
      negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  size_t u = 0;
  while (u + 1 < N && magnitude >= static_cast<uint64_t>(units[u + 1].scale)) {
    ++u;
  }
  const std::string_view sign = negative ? "-" : "";
  if (u == 0) {
    return fmt::format("{}{} {}", sign, magnitude, units[0].name);
  }
  const auto scale = static_cast<uint64_t>(units[u].scale);
  // Hundredths, rounded half up: (magnitude * 100 + scale / 2) / scale without overflow.
  const uint64_t whole = magnitude / scale;
  const uint64_t rest = magnitude % scale;
  uint64_t hundredths = (rest * 100 + scale / 2) / scale;
  uint64_t integer = whole;
  if (hundredths >= 100) {
    integer += 1;
    hundredths -= 100;
  }
  return fmt::format("{}{}.{:02} {}", sign, integer, hundredths, units[u].name);
}

}  // namespace

std::string human_duration(int64_t ns) {
  static constexpr std::array<Unit, 4> kUnits = {
      {{1, "ns"}, {1'000, "µs"}, {1'000'000, "ms"}, {1'000'000'000, "s"}}};
  return scaled(ns, kUnits);
}

std::string human_bytes(int64_t bytes) {
  static constexpr std::array<Unit, 5> kUnits = {{{1, "B"},
                                                  {1'000, "kB"},
                                                  {1'000'000, "MB"},
                                                  {1'000'000'000, "GB"},
                                                  {1'000'000'000'000, "TB"}}};
  return scaled(bytes, kUnits);
}

}  // namespace zfetch::tools
