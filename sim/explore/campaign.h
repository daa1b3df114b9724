// A fuzz campaign: scenarios of one seed, checked by the oracles on worker threads, tallied.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/explore/generator.h"
#include "sim/explore/oracles.h"

namespace zfetch::sim {

struct CampaignOptions {
  uint64_t seed = 1;
  /// Scenario indices of the whole campaign are 0 .. runs-1 (0: unbounded, until the callback
  /// stops it). Shard k of n takes the indices i with i % n == k, so n machines running shards
  /// 0 .. n-1 of the same seed and runs check every scenario exactly once.
  uint64_t runs = 0;
  uint32_t shard = 0;
  uint32_t shards = 1;
  unsigned jobs = 1;  ///< worker threads; the tallies do not depend on it
  GeneratorProfile profile = GeneratorProfile::Full;
  OracleOptions oracles;
  /// Oracle 5 (YAML and trace round trips, three quarters of the cost of a check) runs on the
  /// scenarios whose index is a multiple of this; 1: every scenario, 0: none.
  uint64_t round_trip_every = 16;
  size_t findings_per_oracle = 8;  ///< the lowest-index violations kept for each oracle
};

struct Finding {
  uint64_t index = 0;  ///< scenario index within the seed
  Violation violation;
  FailureClass failure_class = FailureClass::Pass;  ///< the tested policy's class for it
};

struct CampaignResult {
  uint64_t scenarios = 0;
  /// [policy][class]: runs of each failure class (Discovery order; FailureClass order).
  std::array<std::array<uint64_t, kFailureClasses>, 2> classes{};
  std::array<uint64_t, 6> violations{};  ///< per oracle (index oracle - 1), tested policy
  std::vector<Finding> findings;         ///< sorted by (oracle, index)
  [[nodiscard]] uint64_t total_violations() const;
};

/// Runs the campaign on options.jobs threads. `keep_going` is called on the calling thread
/// about five times a second with the tally so far; returning false stops the campaign after
/// the scenarios in progress. With `runs` set the result is the same for any jobs and any
/// timing; a stopped campaign has checked a prefix of its shard's indices, give or take the
/// blocks in flight.
CampaignResult run_campaign(const CampaignOptions& options,
                            const std::function<bool(const CampaignResult&)>& keep_going);

}  // namespace zfetch::sim
