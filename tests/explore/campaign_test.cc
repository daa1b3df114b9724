// Campaigns: the same tallies for any thread count, shards that partition the seed space.
#include "sim/explore/campaign.h"

#include <doctest/doctest.h>

#include "sim/explore/shrink.h"

namespace zfetch::sim {
namespace {

CampaignResult run(uint64_t runs, unsigned jobs, uint32_t shard = 0, uint32_t shards = 1,
                   uint64_t seed = 5) {
  CampaignOptions options;
  options.seed = seed;
  options.runs = runs;
  options.jobs = jobs;
  options.shard = shard;
  options.shards = shards;
  return run_campaign(options, [](const CampaignResult&) { return true; });
}

TEST_SUITE("explore") {
  TEST_CASE("campaign: the result does not depend on the number of jobs") {
    const CampaignResult one = run(600, 1);
    const CampaignResult four = run(600, 4);
    CHECK(one.scenarios == 600);
    CHECK(four.scenarios == 600);
    CHECK(one.classes == four.classes);
    CHECK(one.violations == four.violations);
    REQUIRE(one.findings.size() == four.findings.size());
    for (size_t i = 0; i < one.findings.size(); ++i) {
      CHECK(one.findings[i].index == four.findings[i].index);
      CHECK(one.findings[i].violation.detail == four.findings[i].violation.detail);
    }
  }

  TEST_CASE("campaign: shards 0/3, 1/3 and 2/3 together are the whole campaign") {
    const CampaignResult whole = run(500, 2);
    uint64_t scenarios = 0;
    std::array<std::array<uint64_t, kFailureClasses>, 2> classes{};
    for (uint32_t k = 0; k < 3; ++k) {
      const CampaignResult part = run(500, 1, k, 3);
      scenarios += part.scenarios;
      for (size_t p = 0; p < 2; ++p) {
        for (size_t c = 0; c < kFailureClasses; ++c) {
          classes[p][c] += part.classes[p][c];
        }
      }
      for (const Finding& f : part.findings) {
        CHECK(f.index % 3 == k);
      }
    }
    CHECK(scenarios == 500);
    CHECK(classes == whole.classes);
  }

  TEST_CASE("campaign: the default seed finds resident-skip failures no bigger than #8874's seed") {
    // Acceptance 1 of the fuzzing issue on the first 3,000 scenarios of the default seed: an
    // oracle 2 violation under resident-skip, shrunk as `zfetch fuzz` shrinks it, has at most
    // the 5 modules and 6 operations of scenarios/seed/resident_adapter_resume.yaml.
    const CampaignResult r = run(3000, 2, 0, 1, 1);
    REQUIRE(r.violations[static_cast<size_t>(Oracle::Discovery) - 1] > 0);
    const Finding* first = nullptr;
    for (const Finding& f : r.findings) {
      if (f.violation.oracle == Oracle::Discovery && first == nullptr) {
        first = &f;
      }
    }
    REQUIRE(first != nullptr);
    const model::Scenario original = generate_scenario(1, first->index, GeneratorProfile::Full);
    const auto same = [&](const model::Scenario& s) {
      const Verdict v = check_scenario(s, OracleOptions{});
      if (v.run(Discovery::ResidentSkip).failure_class != first->failure_class) {
        return false;
      }
      for (const Violation& violation : v.violations) {
        if (violation.oracle == Oracle::Discovery) {
          return true;
        }
      }
      return false;
    };
    const ShrinkResult shrunk = shrink_scenario(original, same);
    CHECK(same(shrunk.scenario));
    const ScenarioSize size = scenario_size(shrunk.scenario);
    CHECK(size.modules <= 5);
    CHECK(size.operations <= 6);
  }

  TEST_CASE("campaign: the callback stops an unbounded campaign") {
    CampaignOptions options;
    options.runs = 0;
    int calls = 0;
    const CampaignResult r = run_campaign(options, [&](const CampaignResult& so_far) {
      ++calls;
      return so_far.scenarios < 64;
    });
    CHECK(calls >= 1);
    CHECK(r.scenarios >= 64);
  }
}

}  // namespace
}  // namespace zfetch::sim
