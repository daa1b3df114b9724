// Candidate remedies of a failure, each re-simulated with its change applied.
#include "sim/explore/remedies.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "model/config_override.h"
#include "model/persistence.h"
#include "sim/initial_state.h"
#include "trace/bounded_sink.h"
#include "trace/sink.h"

namespace zfetch::sim {
namespace {

using model::ModuleIndex;
using model::ParamIndex;

// The re-simulations of one failure, counted against kMaxRemedySimulations.
class Resimulator {
 public:
  Resimulator(const Options& options, uint64_t max_events)
      : options_(options), max_events_(max_events) {}

  // The outcome of `changed` under `discovery`; nothing when the budget of runs or events is
  // spent.
  std::optional<Outcome> run(const model::Scenario& changed, Discovery discovery) {
    if (runs_ == kMaxRemedySimulations) {
      return std::nullopt;
    }
    ++runs_;
    Options options = options_;
    options.discovery = discovery;
    trace::NullSink discard;
    trace::BoundedSink bounded(max_events_, discard);
    try {
      return simulate(changed, options, bounded);
    } catch (const trace::EventBoundExceeded&) {
      return std::nullopt;  // a candidate whose run passed the bound is dropped, never offered
    }
  }

 private:
  Options options_;
  uint64_t max_events_;
  int runs_ = 0;
};

bool passes(const std::optional<Outcome>& outcome) {
  return outcome && !outcome->failure;
}

// A (module, param) registration: deepspeed.zero.register_external_parameter(module, param).
using Registration = std::pair<ModuleIndex, ParamIndex>;

// The params a fetch-queue mismatch missed that are not the failing module's own (its own are
// in its fetch list already: registering them as its externals changes nothing).
std::vector<Registration> external_causes(const model::Scenario& scenario, const Failure& failure) {
  std::vector<Registration> out;
  if (failure.module == model::kNone) {
    return out;
  }
  const ParamState params = initial_param_state(scenario);
  const ModuleState modules = initial_module_state(scenario, params);
  const std::vector<ParamIndex>& own = modules.own_params[failure.module];
  for (ParamIndex p : failure.missing) {
    if (std::find(own.begin(), own.end(), p) == own.end()) {
      out.emplace_back(failure.module, p);
    }
  }
  return out;
}

std::string python_param_path(const model::Scenario& scenario, ParamIndex p) {
  const model::ParamSpec& param = scenario.params[p];
  return python_module_path(scenario, param.owner) + "." + param.name;
}

std::string registration_code(const model::Scenario& scenario,
                              const std::vector<Registration>& registrations) {
  if (registrations.size() == 1) {
    return fmt::format("      deepspeed.zero.register_external_parameter({}, {})\n",
                       python_module_path(scenario, registrations[0].first),
                       python_param_path(scenario, registrations[0].second));
  }
  std::string pairs;
  for (const auto& [m, p] : registrations) {
    pairs += fmt::format("{}({}, {})", pairs.empty() ? "" : ", ", python_module_path(scenario, m),
                         python_param_path(scenario, p));
  }
  return fmt::format(
      "      for module, param in [{}]:\n"
      "          deepspeed.zero.register_external_parameter(module, param)\n",
      pairs);
}

std::string param_names(const model::Scenario& scenario, const std::vector<ParamIndex>& ps) {
  std::string out;
  for (size_t i = 0; i < ps.size(); ++i) {
    out += i == 0 ? "" : i + 1 == ps.size() ? " and " : ", ";
    out += scenario.params[ps[i]].qualified_name;
  }
  return out;
}

// Registering every external the failure missed; when the run then fails at another module
// for the same reason, that module's externals join `registrations` (each layer of a loop
// reads a param of its own), until it passes or the runs are spent.
std::optional<Remedy> register_externals(const model::Scenario& scenario, Discovery discovery,
                                         std::vector<Registration>& registrations,
                                         Resimulator& resimulator) {
  while (!registrations.empty()) {
    model::Scenario changed = scenario;
    for (const auto& [m, p] : registrations) {
      changed.modules[m].external_params.push_back(p);
    }
    std::optional<Outcome> outcome = resimulator.run(changed, discovery);
    if (passes(outcome)) {
      std::sort(registrations.begin(), registrations.end());  // module order reads best
      Remedy remedy;
      remedy.kind = Remedy::Kind::Code;
      remedy.advice =
          registrations.size() == 1
              ? "register it up front, once the model is built (or in its __init__):\n"
              : fmt::format(
                    "register each of these {} up front, once the model is built (or in its "
                    "__init__): every one is needed, and one call registers one parameter of one "
                    "module:\n",
                    registrations.size());
      remedy.advice += registration_code(scenario, registrations);
      remedy.outcome = std::move(*outcome);
      return remedy;
    }
    if (!outcome || !outcome->failure || outcome->kind != OutcomeKind::FetchQueueMismatch) {
      return std::nullopt;
    }
    bool widened = false;
    for (const Registration& r : external_causes(scenario, *outcome->failure)) {
      if (std::find(registrations.begin(), registrations.end(), r) == registrations.end()) {
        registrations.push_back(r);
        widened = true;
      }
    }
    if (!widened) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Lowering the persistence threshold below the smallest persistent cause: then each of them is
// NOT_AVAILABLE at every access, and the recording pass discovers it.
std::optional<Remedy> lower_persistence(const model::Scenario& scenario, Discovery discovery,
                                        const std::vector<Registration>& causes,
                                        Resimulator& resimulator) {
  const std::vector<bool> persistent = model::select_persistent(scenario, scenario.config.zero);
  std::vector<ParamIndex> persistent_causes;
  int64_t smallest = std::numeric_limits<int64_t>::max();
  for (const auto& [m, p] : causes) {
    if (persistent[p] && std::find(persistent_causes.begin(), persistent_causes.end(), p) ==
                             persistent_causes.end()) {
      persistent_causes.push_back(p);
      smallest = std::min(smallest, scenario.params[p].numel);
    }
  }
  if (persistent_causes.empty() || smallest == 0) {
    return std::nullopt;  // a zero-size param stays persistent at any threshold
  }
  model::Scenario changed = scenario;
  const std::string threshold = std::to_string(smallest - 1);
  if (model::set_config_value(changed, "stage3_param_persistence_threshold", threshold)) {
    return std::nullopt;
  }
  std::optional<Outcome> outcome = resimulator.run(changed, discovery);
  if (!passes(outcome)) {
    return std::nullopt;
  }
  Remedy remedy;
  remedy.kind = Remedy::Kind::Config;
  const bool one = persistent_causes.size() == 1;
  remedy.advice = fmt::format(
      "set stage3_param_persistence_threshold to {} (below the {} elements of {}{}) so that {} "
      "persistent: NOT_AVAILABLE at every access, {} discovered while the trace is recorded.\n",
      threshold, smallest, one ? "" : "the smallest of ", param_names(scenario, persistent_causes),
      one ? "it is not" : "none of them is", one ? "it is" : "each is");
  remedy.outcome = std::move(*outcome);
  return remedy;
}

bool calls_by_rank(const std::vector<model::Op>& ops) {
  for (const model::Op& op : ops) {
    if ((op.kind == model::Op::Kind::Call && !op.when.ranks.empty()) || calls_by_rank(op.body)) {
      return true;
    }
  }
  return false;
}

// Making the module whose forward calls children by rank a z3 leaf: every rank then fetches the
// whole subtree as one unit, whichever child it runs.
std::optional<Remedy> leaf_by_rank(const model::Scenario& scenario, Discovery discovery,
                                   Resimulator& resimulator) {
  for (size_t i = 0; i < scenario.modules.size(); ++i) {
    const model::ModuleSpec& spec = scenario.modules[i];
    if (spec.leaf || !calls_by_rank(spec.forward)) {
      continue;
    }
    model::Scenario changed = scenario;
    changed.modules[i].leaf = true;
    std::optional<Outcome> outcome = resimulator.run(changed, discovery);
    if (!passes(outcome)) {
      continue;
    }
    // set_z3_leaf_modules marks every module of the class: only a class of its own marks just
    // the module that was re-simulated; otherwise the config names it.
    const bool own_class =
        !spec.class_name.empty() && std::count_if(scenario.modules.begin(), scenario.modules.end(),
                                                  [&](const model::ModuleSpec& s) {
                                                    return s.class_name == spec.class_name;
                                                  }) == 1;
    if (!own_class && spec.qualified_name.empty()) {
      continue;  // a class-less root has no name to give leaf_module
    }
    const std::string name =
        spec.qualified_name.empty() ? "the root" : "'" + spec.qualified_name + "'";
    Remedy remedy;
    remedy.kind = Remedy::Kind::Code;
    remedy.advice = fmt::format(
        "make {} a z3 leaf module: its forward calls different children on different ranks, "
        "and a leaf's whole subtree is fetched as one unit on every rank:\n",
        name);
    remedy.advice += own_class
                         ? fmt::format("      deepspeed.utils.set_z3_leaf_modules(model, [{}])\n",
                                       spec.class_name)
                         : fmt::format(
                               "      \"zero_optimization\": {{\"leaf_module\": {{\"names\": "
                               "[\"{}\"]}}}}  (ds_config)\n",
                               spec.qualified_name);
    remedy.outcome = std::move(*outcome);
    return remedy;
  }
  return std::nullopt;
}

}  // namespace

std::string python_module_path(const model::Scenario& scenario, ModuleIndex m) {
  std::vector<ModuleIndex> chain;
  for (ModuleIndex at = m; at != model::kNone && at != 0; at = scenario.modules[at].parent) {
    chain.push_back(at);
  }
  std::string out = "model";
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const std::string& name = scenario.modules[*it].name;
    const bool index = !name.empty() && std::all_of(name.begin(), name.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; });
    out += index ? "[" + name + "]" : "." + name;
  }
  return out;
}

std::vector<Remedy> verified_remedies(const model::Scenario& scenario, const Options& options,
                                      const Outcome& outcome, uint64_t max_events) {
  std::vector<Remedy> remedies;
  if (!outcome.failure) {
    return remedies;
  }
  Resimulator resimulator(options, max_events);
  if (options.discovery == Discovery::ResidentSkip) {
    std::optional<Outcome> fixed = resimulator.run(scenario, Discovery::ResidencyIndependent);
    if (passes(fixed)) {
      Remedy remedy;
      remedy.kind = Remedy::Kind::DeepSpeedFix;
      remedy.advice =
          "use a DeepSpeed that contains PR #8875, whose getter discovers external accesses "
          "whatever the parameter's residency (`zfetch run --discovery residency-independent` "
          "simulates it).\n";
      remedy.outcome = std::move(*fixed);
      remedies.push_back(std::move(remedy));
    }
  }
  if (outcome.kind == OutcomeKind::FetchQueueMismatch) {
    // The registrations first: their rounds find every module that needs one, and the
    // threshold must then be below the smallest param of all of them.
    std::vector<Registration> causes = external_causes(scenario, *outcome.failure);
    std::optional<Remedy> registered =
        register_externals(scenario, options.discovery, causes, resimulator);
    if (std::optional<Remedy> r =
            lower_persistence(scenario, options.discovery, causes, resimulator)) {
      remedies.push_back(std::move(*r));
    }
    if (registered) {
      remedies.push_back(std::move(*registered));
    }
  }
  if (outcome.kind == OutcomeKind::RankDivergence || outcome.kind == OutcomeKind::Hang) {
    if (std::optional<Remedy> r = leaf_by_rank(scenario, options.discovery, resimulator)) {
      remedies.push_back(std::move(*r));
    }
  }
  return remedies;
}

}  // namespace zfetch::sim
