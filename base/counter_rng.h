// Counter-based randomness: the stream keyed by (seed S, counter i) depends on (S, i) only (the
// fuzz generator's scenario i of seed S, a scenario's seeded draws).
#pragma once

#include <cstdint>
#include <span>

namespace zfetch::base {

/// splitmix64's finaliser (Steele, Lea, Flood: "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a bijection of 64-bit words with good avalanche.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A splitmix64 stream keyed by (seed, counter). No global state and no std::random_device:
/// scenario `counter` of `seed` is the same whatever ran before it, on whichever thread,
/// shard or machine (style 7.4).
class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t counter) : state_(mix64(seed) ^ mix64(~counter)) {}

  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }

  /// Uniform in [lo, hi] (inclusive); lo when hi <= lo. The modulo bias is below 2^-40 for the
  /// small ranges the generator draws from.
  int64_t uniform(int64_t lo, int64_t hi) {
    if (hi <= lo) {
      return lo;
    }
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(next() % span);
  }

  /// True with probability `percent` / 100.
  bool chance(int percent) { return uniform(0, 99) < percent; }

  template <typename T>
  const T& pick(std::span<const T> values) {
    return values[static_cast<size_t>(uniform(0, static_cast<int64_t>(values.size()) - 1))];
  }

 private:
  uint64_t state_;
};

}  // namespace zfetch::base
