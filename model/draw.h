// What a seeded draw (`route`, `layerdrop`) picks in one root forward: the stream it reads and
// the rule that turns the values into a choice (docs/scenario-format.md, "Seeded draws").
#pragma once

#include <cstdint>

#include "model/scenario.h"

namespace zfetch::model {

/// The root forward a draw is made for: the optimizer step (from 0 over the schedule), the
/// micro-step within it and the forward's number (`when: {forward}`).
struct DrawAt {
  int64_t step = 0;
  int64_t micro_step = 0;
  int64_t forward = 0;
};

/// The counter of the stream of (seed, counter): step * 2^32 + micro_step * 2^16 + forward,
/// micro_step and forward each taken modulo 2^16.
uint64_t draw_counter(const DrawAt& at);

/// Value `index` (from 0) of the draw's stream at `at`.
uint64_t draw_value(uint64_t seed, const DrawAt& at, int64_t index);

/// Whether `draw` lets its call run at `at`: a routed candidate is among the `top_k` with the
/// smallest values (ties by index); a LayerDrop candidate runs unless the model is `training`
/// and its value, as a uniform in [0, 1), is below `p`.
bool draw_picks(const Draw& draw, const DrawAt& at, bool training);

}  // namespace zfetch::model
