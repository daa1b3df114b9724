// ZeRO-3 partition arithmetic (docs/semantics.md 1.3): every param is padded to a multiple of
// the world size and split evenly. Header-only, so that cuda_kernels/, which links no model/
// library, uses the same formula as the simulator.
#pragma once

#include <concepts>

namespace zfetch::model {

/// Padding elements that make `numel` a multiple of `world` (>= 1): (W - N mod W) mod W.
template <std::integral Int>
constexpr Int partition_padding(Int numel, Int world) {
  return (world - numel % world) % world;
}

/// Elements each rank holds (DeepSpeed's ds_tensor.ds_numel): (N + padding) / W.
template <std::integral Int>
constexpr Int partition_numel(Int numel, Int world) {
  return (numel + partition_padding(numel, world)) / world;
}

static_assert(partition_numel(15, 2) == 8 && partition_padding(15, 2) == 1);
static_assert(partition_numel(16, 2) == 8 && partition_numel(0, 4) == 0);

}  // namespace zfetch::model
