// input_hash: a 64-bit hash of a fuzz input's bytes, for a target that derives a choice from
// its input (which generated scenario, which policy) deterministically.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/counter_rng.h"

inline uint64_t input_hash(const uint8_t* data, size_t size) {
  uint64_t h = size;
  for (size_t i = 0; i < size; ++i) {
    h = zfetch::base::mix64(h ^ data[i]);
  }
  return h;
}
