// Seeded draws: a counter-based stream per (seed, root forward), so a draw depends on nothing
// but its seed and where it is made (the same on every rank, whatever ran before).
#include "model/draw.h"

#include "base/counter_rng.h"

namespace zfetch::model {

uint64_t draw_counter(const DrawAt& at) {
  return (static_cast<uint64_t>(at.step) << 32U) |
         ((static_cast<uint64_t>(at.micro_step) & 0xffffU) << 16U) |
         (static_cast<uint64_t>(at.forward) & 0xffffU);
}

uint64_t draw_value(uint64_t seed, const DrawAt& at, int64_t index) {
  base::CounterRng rng(seed, draw_counter(at));
  uint64_t value = rng.next();
  for (int64_t k = 0; k < index; ++k) {
    value = rng.next();
  }
  return value;
}

bool draw_picks(const Draw& draw, const DrawAt& at, bool training) {
  switch (draw.kind) {
  case Draw::Kind::None:
    return true;
  case Draw::Kind::LayerDrop: {
    if (!training) {
      return true;
    }
    // The top 53 bits as a double in [0, 1): torch.rand([]) < layerdrop drops the layer.
    const double uniform =
        static_cast<double>(draw_value(draw.seed, at, draw.index) >> 11U) * 0x1p-53;
    return !(uniform < draw.p);
  }
  case Draw::Kind::Route: {
    // Rank of this candidate among all `of` by (value, index): routed iff below top_k.
    const uint64_t mine = draw_value(draw.seed, at, draw.index);
    base::CounterRng all(draw.seed, draw_counter(at));
    int64_t smaller = 0;
    for (int64_t k = 0; k < draw.of; ++k) {
      const uint64_t value = all.next();
      if (value < mine || (value == mine && k < draw.index)) {
        ++smaller;
      }
    }
    return smaller < draw.top_k;
  }
  }
  return true;
}

}  // namespace zfetch::model
