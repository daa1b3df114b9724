// The largest values zfetch accepts for the numbers that flow into its arithmetic, checked where
// a scenario is loaded and where `--set` changes one, so that every product and sum the
// simulator and the timeline compute stays far inside 64 bits (docs/scenario-format.md, "Limits").
#pragma once

#include <cstdint>

namespace zfetch::model {

/// Ranks: 2^20, far above any real job; a world of more is a typo. Partitions are padded to the
/// world size and a few tables hold a slot per simulated rank.
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 20;

/// Elements in one parameter (2^40, 4 TiB in fp32; real tensors stay below 2^35).
inline constexpr int64_t kMaxParamNumel = int64_t{1} << 40;

/// Elements in the whole model (2^48, about 2.8 * 10^14, over a thousand times the largest
/// models trained): bytes stay below 2^50 and bytes times the world size below 2^70, which the
/// cost model computes in 128 bits.
inline constexpr int64_t kMaxModelNumel = int64_t{1} << 48;

/// Tokens per micro-batch (`timing.tokens_per_micro_batch`, or the micro-batch size it defaults
/// to): 2^31. The cost model multiplies it by a module's elements and by 10^9 ns in 128 bits.
inline constexpr int64_t kMaxTokensPerMicroBatch = int64_t{1} << 31;

/// A module's forward time, `compute_us`: 10^12 µs (11.6 days), so 10^15 ns per forward.
inline constexpr int64_t kMaxComputeUs = 1'000'000'000'000;

/// Keys and values in a ds_config file: 10^5. DeepSpeed's whole schema has a few hundred keys;
/// the file is walked as a YAML tree afterwards (about 450 bytes and 30 µs a node), so this
/// bounds a hostile file to about 50 MB and a few seconds.
inline constexpr uint64_t kMaxDsConfigNodes = 100'000;

}  // namespace zfetch::model
