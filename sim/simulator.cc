// simulate(): runs the ranks that can differ and compares their collectives (semantics 10.15).
#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

#include "base/enum_names.h"
#include "sim/ds_format.h"
#include "sim/failure.h"
#include "sim/process.h"

namespace zfetch::sim {
namespace {

void collect_ranks(const std::vector<model::Op>& ops, std::set<int64_t>& ranks) {
  for (const model::Op& op : ops) {
    ranks.insert(op.when.ranks.begin(), op.when.ranks.end());
    collect_ranks(op.body, ranks);
  }
}

// The ranks whose programs can differ: every rank a `when: {rank: ...}` names, plus one rank
// that none names (all such ranks behave alike). Rank 0 is always simulated: it is the
// reference of DeepSpeed's agreement checks.
std::set<int64_t> named_ranks(const model::Scenario& scenario) {
  std::set<int64_t> named;
  for (const model::ModuleSpec& m : scenario.modules) {
    collect_ranks(m.forward, named);
  }
  return named;
}

std::vector<int32_t> distinct_ranks(const model::Scenario& scenario) {
  const std::set<int64_t> named = named_ranks(scenario);
  std::vector<int32_t> ranks = {0};
  for (int64_t r : named) {
    if (r > 0 && r < scenario.world_size) {
      ranks.push_back(static_cast<int32_t>(r));
    }
  }
  for (int64_t r = 1; r < scenario.world_size && !named.empty(); ++r) {
    if (!named.count(r)) {
      ranks.push_back(static_cast<int32_t>(r));
      break;
    }
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

bool is_agreement(CollectiveKind kind) {
  return kind == CollectiveKind::AgreeModules || kind == CollectiveKind::AgreeParams ||
         kind == CollectiveKind::AgreeSteps;
}

// What a divergence message calls a collective; the three agreements are one broadcast to a
// reader of the message.
constexpr base::EnumNames<CollectiveKind::PersistentGather> kCollectiveNames(
    "a trace agreement check (broadcast)", "a trace agreement check (broadcast)",
    "a trace agreement check (broadcast)", "a coordinator all-gather", "a getter all-gather",
    "a persistent-parameter all-gather");

struct RankRun {
  int32_t rank;
  RankResult result;
  std::vector<Collective> collectives;
};

// [I] semantics 10.15. Compares the ranks' collective sequences: the first position where one rank
// differs from rank 0 decides between an agreement error, a hang, and an earlier local error.
Outcome compare_ranks(std::vector<RankRun>& runs) {
  const RankRun& ref = runs.front();
  Outcome outcome;
  for (const RankRun& run : runs) {
    outcome.stats.events += run.result.stats.events;
  }
  // The earliest divergence over all ranks.
  size_t first = SIZE_MAX;
  const RankRun* diverging = nullptr;
  for (const RankRun& run : runs) {
    const size_t n = std::min(run.collectives.size(), ref.collectives.size());
    size_t k = 0;
    while (k < n && run.collectives[k].kind == ref.collectives[k].kind &&
           run.collectives[k].payload == ref.collectives[k].payload) {
      ++k;
    }
    if (k == n && run.collectives.size() == ref.collectives.size()) {
      continue;
    }
    if (k < first) {
      first = k;
      diverging = &run;
    }
  }
  // A rank that raised before reaching the divergence ends the run with its own error.
  for (const RankRun& run : runs) {
    if (run.result.raised && run.collectives.size() <= first) {
      outcome.kind = run.result.raised->kind;
      outcome.failure = run.result.raised->failure;
      outcome.invalidations = run.result.invalidations;
      return outcome;
    }
  }
  outcome.invalidations = ref.result.invalidations;
  if (diverging == nullptr) {
    return outcome;  // no rank raised and all agree
  }
  Failure failure;
  failure.rank = diverging->rank;
  if (first < diverging->collectives.size()) {
    const Collective& at = diverging->collectives[first];
    failure = failure_at(at.when, at.trace_step, model::kNone, {}, {});
    if (is_agreement(at.kind)) {
      failure.module = 0;      // agreement checks run in reset_step, at the root's forward,
      failure.trace_step = 0;  // before the pass's first fetch
    }
  }
  const bool both = first < ref.collectives.size() && first < diverging->collectives.size();
  if (both && is_agreement(ref.collectives[first].kind) &&
      ref.collectives[first].kind == diverging->collectives[first].kind) {
    const auto& a = ref.collectives[first].payload;
    const auto& b = diverging->collectives[first].payload;
    outcome.kind = OutcomeKind::RankDivergence;
    // assert_ints_same_as_other_ranks (deepspeed/runtime/zero/utils.py), raised on rank r.
    failure.message =
        a.size() != b.size()
            ? fmt::format(
                  "Detected a disagreement on list length between rank0 and rank{}: \n "
                  "rank0: {} \n rank{}: {}",
                  diverging->rank, a.size(), diverging->rank, b.size())
            : fmt::format(
                  "Detected a disagreement on list contents between rank0 and rank{}: "
                  "\n list length: {}\n rank0: {} \n rank{}: {}",
                  diverging->rank, a.size(), python_list(a), diverging->rank, python_list(b));
    failure.explanation = fmt::format(
        "Rank 0 and rank {} recorded different module orders in the same pass (a `when: "
        "{{rank: ...}}` branch). Every rank must run the same modules in the same order; mark "
        "the data-dependent subtree as a z3 leaf module (set_z3_leaf_modules / "
        "zero_optimization.leaf_module) so that it is fetched as one unit.",
        diverging->rank);
  } else {
    outcome.kind = OutcomeKind::Hang;
    const std::string_view mine =
        first < ref.collectives.size() ? kCollectiveNames[ref.collectives[first].kind] : "nothing";
    const std::string_view theirs = first < diverging->collectives.size()
                                        ? kCollectiveNames[diverging->collectives[first].kind]
                                        : "nothing";
    failure.message = fmt::format(
        "ranks diverge at collective #{}: rank 0 issues {}, rank {} issues {} (DeepSpeed hangs "
        "here until the NCCL/gloo timeout)",
        first, mine, diverging->rank, theirs);
    failure.explanation =
        "The ranks issue different collectives, so each waits for the others forever. In "
        "COMPLETE mode a rank-dependent module order invalidates the trace on some ranks only; "
        "those ranks then run the agreement checks at the next reset and the others do not "
        "(semantics 10.15). Make the subtree a z3 leaf so that every rank fetches the same "
        "parameters.";
  }
  outcome.failure = failure;
  return outcome;
}

}  // namespace

std::vector<int32_t> simulated_rank_of_each_rank(const model::Scenario& scenario) {
  const std::set<int64_t> named = named_ranks(scenario);
  const std::vector<int32_t> simulated = distinct_ranks(scenario);
  // The simulated rank that stands for every rank no `when` names (rank 0 unless it is named).
  int32_t unnamed = 0;
  for (int32_t r : simulated) {
    if (!named.count(r)) {
      unnamed = r;
      break;
    }
  }
  std::vector<int32_t> of(static_cast<size_t>(std::max<int64_t>(1, scenario.world_size)));
  for (size_t r = 0; r < of.size(); ++r) {
    const auto rank = static_cast<int32_t>(r);
    of[r] = std::binary_search(simulated.begin(), simulated.end(), rank) ? rank : unnamed;
  }
  return of;
}

Outcome simulate(const model::Scenario& scenario, const Options& options, trace::EventSink& sink) {
  const std::vector<int32_t> ranks = distinct_ranks(scenario);
  const bool compare = ranks.size() > 1;
  std::vector<RankRun> runs;
  uint64_t seq = 0;  // one numbering for the whole trace: ranks follow one another
  for (int32_t rank : ranks) {
    CollectiveLog log(compare);
    Process process(scenario, options, rank, sink, log, seq);
    RankRun run{rank, process.run(), {}};
    seq = run.result.next_seq;
    run.collectives = log.entries();
    runs.push_back(std::move(run));
  }
  Outcome outcome;
  if (compare) {
    outcome = compare_ranks(runs);
  } else {
    const RankResult& r = runs.front().result;
    outcome.invalidations = r.invalidations;
    if (r.raised) {
      outcome.kind = r.raised->kind;
      outcome.failure = r.raised->failure;
    }
  }
  if (!outcome.failure && outcome.invalidations > 0) {
    outcome.kind = OutcomeKind::TraceInvalidated;
  }
  outcome.stats = runs.front().result.stats;
  for (size_t i = 1; i < runs.size(); ++i) {
    outcome.stats.events += runs[i].result.stats.events;
  }
  outcome.warnings = runs.front().result.warnings;
  for (const RankRun& run : runs) {
    for (const Hazard& h : run.result.hazards) {
      if (outcome.hazards.size() < Outcome::kMaxHazards) {
        outcome.hazards.push_back(h);
      }
    }
  }
  return outcome;
}

}  // namespace zfetch::sim
