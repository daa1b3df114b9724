// Several engines in one process (DeepSpeed-Chat's actor and critic): each engine is a Process
// of its own model, and the schedule's items are handed to the engine they name.
#include "sim/several_engines.h"

#include <memory>
#include <vector>

namespace zfetch::sim {

RankResult run_several_engines(const model::Scenario& scenario, const Options& options,
                               int32_t rank, trace::EventSink& sink, CollectiveLog& collectives,
                               uint64_t first_seq) {
  ProcessGlobals globals;
  std::vector<std::unique_ptr<Process>> engines;
  engines.reserve(scenario.engines.size());
  for (size_t e = 0; e < scenario.engines.size(); ++e) {
    engines.push_back(std::make_unique<Process>(scenario.engines[e], options, rank, sink,
                                                collectives, first_seq, static_cast<int32_t>(e),
                                                &globals));
  }
  // One trace numbering, and one optimizer step count (a trace's `step` counts the process's
  // optimizer steps, as a recording of real DeepSpeed does): the engine that runs next continues
  // where the last one stopped.
  uint64_t seq = first_seq;
  int32_t step = 0;
  Process* current = nullptr;
  const auto engine = [&](uint32_t e) -> Process& {
    if (current != nullptr) {
      seq = current->next_seq();
      step = current->step();
    }
    current = engines[e].get();
    current->set_next_seq(seq);
    current->set_step(step);
    return *current;
  };
  std::optional<Raised> raised;
  try {
    for (size_t e = 0; e < engines.size(); ++e) {
      // Each engine's root stays on FWD_MODULE_STACK; the engines built before see it on top.
      for (size_t earlier = 0; earlier < e; ++earlier) {
        engines[earlier]->push_foreign_root();
        engines[e]->push_foreign_root();
      }
      engine(static_cast<uint32_t>(e)).start();
    }
    run_items(scenario.schedule, engine);
  } catch (Raised& error) {
    raised = std::move(error);
  }
  // The engines' results in one: counts add up, lists follow engine order.
  RankResult result;
  for (size_t e = 0; e < engines.size(); ++e) {
    RankResult one = engines[e]->result(std::nullopt);
    result.invalidations += one.invalidations;
    result.warnings.insert(result.warnings.end(), one.warnings.begin(), one.warnings.end());
    result.stats.events += one.stats.events;
    result.stats.fetches += one.stats.fetches;
    result.stats.gathers += one.stats.gathers;
    result.stats.gathered_params += one.stats.gathered_params;
    result.stats.gathered_bytes += one.stats.gathered_bytes;
    result.stats.getter_gathers += one.stats.getter_gathers;
    result.stats.releases += one.stats.releases;
    result.stats.passes += one.stats.passes;
    result.stats.optimizer_steps += one.stats.optimizer_steps;
    result.hazards.insert(result.hazards.end(), one.hazards.begin(), one.hazards.end());
    result.invalidation_details.insert(result.invalidation_details.end(),
                                       one.invalidation_details.begin(),
                                       one.invalidation_details.end());
  }
  if (result.hazards.size() > Outcome::kMaxHazards) {
    result.hazards.resize(Outcome::kMaxHazards);
  }
  if (result.invalidation_details.size() > Outcome::kMaxInvalidationDetails) {
    result.invalidation_details.resize(Outcome::kMaxInvalidationDetails);
  }
  result.raised = std::move(raised);
  result.next_seq = current != nullptr ? current->next_seq() : first_seq;
  return result;
}

}  // namespace zfetch::sim
