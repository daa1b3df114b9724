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
#include "sim/several_engines.h"
#include "trace/names.h"

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
  for (const model::Scenario& engine : scenario.engines) {
    for (const model::ModuleSpec& m : engine.modules) {
      collect_ranks(m.forward, named);
    }
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

std::string module_label(const model::Scenario& scenario, model::ModuleIndex m) {
  return std::string(trace::display_module_name(scenario.modules[m].qualified_name));
}

int64_t payload_total(const Collective& c) {
  int64_t total = 0;
  for (int64_t v : c.payload) {
    total += v;
  }
  return total;
}

std::string what_it_issues(const model::Scenario& scenario, const Collective& collective);

// What one rank issued at a collective position, and where, for the explanation of a
// divergence.
std::string describe(const model::Scenario& scenario, const Collective* c) {
  if (c == nullptr) {
    return "issues no further collective (its schedule ends)";
  }
  return fmt::format("(engine {}, micro-step {}, phase {}) {}", c->when.engine, c->when.micro_step,
                     trace::format_as(c->when.phase), what_it_issues(scenario, *c));
}

std::string what_it_issues(const model::Scenario& scenario, const Collective& collective) {
  const Collective* c = &collective;
  switch (c->kind) {
  case CollectiveKind::Gather:
    if (c->modules.empty()) {
      return fmt::format("prefetches with an all-gather of {} element{} per rank",
                         payload_total(*c), payload_total(*c) == 1 ? "" : "s");
    }
    return fmt::format("fetches '{}' with an all-gather of {} element{} per rank",
                       module_label(scenario, c->modules.front()), payload_total(*c),
                       payload_total(*c) == 1 ? "" : "s");
  case CollectiveKind::GetterGather:
  case CollectiveKind::PersistentGather:
    return fmt::format("issues {} of {} element{} per rank", kCollectiveNames[c->kind],
                       payload_total(*c), payload_total(*c) == 1 ? "" : "s");
  default:
    return fmt::format("runs {} of {} values", kCollectiveNames[c->kind], c->payload.size());
  }
}

// Where two ranks that issued the same collectives first fetched different modules (the
// all-gathers matched because their sizes did): the first gather whose module differs.
std::string first_different_fetch(const model::Scenario& scenario, const std::vector<Collective>& a,
                                  int32_t rank_a, const std::vector<Collective>& b, int32_t rank_b,
                                  size_t before) {
  for (size_t k = 0; k < before && k < a.size() && k < b.size(); ++k) {
    if (a[k].kind == CollectiveKind::Gather && b[k].kind == CollectiveKind::Gather &&
        a[k].modules != b[k].modules) {
      return fmt::format(
          "- Before that, at collective #{}, rank {} {} and rank {} {}: all-gathers match by "
          "size only, so neither waited there.\n",
          k, rank_a, describe(scenario, &a[k]), rank_b, describe(scenario, &b[k]));
    }
  }
  return "";
}

struct RankRun {
  int32_t rank;
  RankResult result;
  std::vector<Collective> collectives;
};

// [I] semantics 10.15. Compares the ranks' collective sequences: the first position where one rank
// differs from rank 0 decides between an agreement error, a hang, and an earlier local error.
Outcome compare_ranks(const model::Scenario& scenario, std::vector<RankRun>& runs) {
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
        "Rank 0 and rank {} recorded different traces in the same pass (a `when: {{rank: ...}}` "
        "branch), and the agreement check of the next reset_step compares them.\n",
        diverging->rank);
    const Collective& mine = ref.collectives[first];
    const Collective& theirs = diverging->collectives[first];
    size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) {
      ++k;
    }
    if (mine.kind == CollectiveKind::AgreeModules && k < mine.modules.size() &&
        k < theirs.modules.size()) {
      failure.explanation += fmt::format(
          "- At trace step {} rank 0 ran '{}' (module id {}) and rank {} ran '{}' (module id "
          "{}).\n",
          k, module_label(scenario, mine.modules[k]), a[k], diverging->rank,
          module_label(scenario, theirs.modules[k]), b[k]);
    } else if (k < a.size() && k < b.size()) {
      failure.explanation +=
          fmt::format("- The lists first differ at position {}: rank 0 has {}, rank {} has {}.\n",
                      k, a[k], diverging->rank, b[k]);
    } else {
      failure.explanation += fmt::format("- Rank 0 recorded {} entries, rank {} recorded {}.\n",
                                         a.size(), diverging->rank, b.size());
    }
    failure.explanation += first_different_fetch(scenario, ref.collectives, 0,
                                                 diverging->collectives, diverging->rank, first);
    failure.explanation +=
        "- assert_ints_same_as_other_ranks raises on the ranks whose list differs from rank "
        "0's; the other ranks go on to their next collective and wait there until the backend's "
        "timeout (NCCL's, or gloo's).\n";
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
    const Collective* at_ref = first < ref.collectives.size() ? &ref.collectives[first] : nullptr;
    const Collective* at_div =
        first < diverging->collectives.size() ? &diverging->collectives[first] : nullptr;
    failure.explanation = fmt::format(
        "The ranks issue different collectives at collective #{}:\n- rank 0 {};\n- rank {} "
        "{}.\n",
        first, describe(scenario, at_ref), diverging->rank, describe(scenario, at_div));
    failure.explanation += first_different_fetch(scenario, ref.collectives, 0,
                                                 diverging->collectives, diverging->rank, first);
    const bool size_mismatch = at_ref != nullptr && at_div != nullptr &&
                               at_ref->kind != CollectiveKind::AgreeModules &&
                               !is_agreement(at_ref->kind) && !is_agreement(at_div->kind) &&
                               payload_total(*at_ref) != payload_total(*at_div);
    failure.explanation += fmt::format(
        "- What the backend does: with NCCL every rank waits in its collective until the "
        "process group's timeout, then the watchdog aborts the job; with gloo {}. Nothing after "
        "this point runs, so no step after it has a timing.\n",
        size_mismatch ? "the all-gathers' sizes differ, so it aborts at once with a size "
                        "mismatch error"
                      : "the ranks wait until gloo's timeout");
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
    RankRun run{rank, {}, {}};
    if (scenario.engines.empty()) {
      Process process(scenario, options, rank, sink, log, seq);
      run.result = process.run();
    } else {
      run.result = run_several_engines(scenario, options, rank, sink, log, seq);
    }
    seq = run.result.next_seq;
    run.collectives = log.entries();
    runs.push_back(std::move(run));
  }
  Outcome outcome;
  if (compare) {
    outcome = compare_ranks(scenario, runs);
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
  outcome.invalidation_details = runs.front().result.invalidation_details;
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
