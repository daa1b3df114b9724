// run_campaign(): blocks of scenario indices handed to worker threads, tallies merged.
#include "sim/explore/campaign.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace zfetch::sim {
namespace {

// Scenarios per block a worker takes at once: large enough that the shared counter and the
// merge are rare, small enough that stopping is prompt.
constexpr uint64_t kBlock = 64;

void merge(CampaignResult& into, const CampaignResult& from, size_t keep) {
  into.scenarios += from.scenarios;
  for (size_t p = 0; p < 2; ++p) {
    for (size_t c = 0; c < kFailureClasses; ++c) {
      into.classes[p][c] += from.classes[p][c];
    }
  }
  for (size_t o = 0; o < into.violations.size(); ++o) {
    into.violations[o] += from.violations[o];
  }
  into.findings.insert(into.findings.end(), from.findings.begin(), from.findings.end());
  // Keep the lowest indices per oracle: the same findings whatever the thread interleaving.
  std::sort(into.findings.begin(), into.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.violation.oracle != b.violation.oracle) {
      return a.violation.oracle < b.violation.oracle;
    }
    return a.index < b.index;
  });
  std::vector<Finding> kept;
  size_t run = 0;  // findings of the current oracle kept so far
  for (const Finding& f : into.findings) {
    run = !kept.empty() && kept.back().violation.oracle == f.violation.oracle ? run + 1 : 1;
    if (run <= keep) {
      kept.push_back(f);
    }
  }
  into.findings = std::move(kept);
}

}  // namespace

uint64_t CampaignResult::total_violations() const {
  uint64_t total = 0;
  for (uint64_t v : violations) {
    total += v;
  }
  return total;
}

CampaignResult run_campaign(const CampaignOptions& options,
                            const std::function<bool(const CampaignResult&)>& keep_going) {
  const uint64_t shards = std::max<uint32_t>(options.shards, 1);
  // Indices of this shard: shard + shards * j for j = 0, 1, ...; `limit` bounds j.
  const uint64_t limit =
      options.runs == 0
          ? UINT64_MAX
          : (options.runs > options.shard ? (options.runs - options.shard + shards - 1) / shards
                                          : 0);
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable done_cv;
  CampaignResult total;
  unsigned running = std::max(options.jobs, 1U);

  const auto worker = [&] {
    while (!stop.load()) {
      const uint64_t begin = next.fetch_add(kBlock);
      if (begin >= limit) {
        break;
      }
      const uint64_t end = std::min(limit, begin + kBlock);
      CampaignResult local;
      for (uint64_t j = begin; j < end; ++j) {
        const uint64_t index = options.shard + shards * j;
        const model::Scenario scenario = generate_scenario(options.seed, index, options.profile);
        OracleOptions oracles = options.oracles;
        oracles.round_trip = options.round_trip_every != 0 && index % options.round_trip_every == 0;
        const Verdict verdict = check_scenario(scenario, oracles);
        ++local.scenarios;
        for (size_t p = 0; p < 2; ++p) {
          ++local.classes[p][static_cast<size_t>(verdict.runs[p].failure_class)];
        }
        const auto tested = static_cast<size_t>(options.oracles.policy);
        for (const Violation& v : verdict.violations) {
          ++local.violations[static_cast<size_t>(v.oracle) - 1];
          local.findings.push_back({index, v, verdict.runs[tested].failure_class});
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      merge(total, local, options.findings_per_oracle);
    }
    std::lock_guard<std::mutex> lock(mutex);
    --running;
    done_cv.notify_all();
  };

  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(options.jobs, 1U); ++t) {
    threads.emplace_back(worker);
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (running > 0) {
      done_cv.wait_for(lock, std::chrono::milliseconds(200));
      if (running > 0 && !stop.load()) {
        const CampaignResult snapshot = total;
        lock.unlock();
        if (!keep_going(snapshot)) {
          stop.store(true);
        }
        lock.lock();
      }
    }
  }
  for (std::thread& t : threads) {
    t.join();
  }
  return total;
}

}  // namespace zfetch::sim
