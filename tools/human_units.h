// Durations and sizes for people: "556.50 ms", "13.23 GB". Exact values stay in --json.
#pragma once

#include <cstdint>
#include <string>

namespace zfetch::tools {

/// `ns` in the largest of ns, µs, ms, s that keeps the value >= 1, with 2 decimals rounded half
/// up from the integer (no floating point): 850 -> "850 ns", 4072 -> "4.07 µs",
/// 556497118 -> "556.50 ms". Negative values get a leading '-'.
std::string human_duration(int64_t ns);

/// `bytes` in B, kB, MB, GB or TB (powers of 1000, as GPU vendors and `nvidia-smi` print
/// them), 2 decimals: 4096 -> "4.10 kB", 13231464448 -> "13.23 GB".
std::string human_bytes(int64_t bytes);

}  // namespace zfetch::tools
