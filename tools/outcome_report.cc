// Text and JSON renderings of a simulation outcome.
#include "tools/outcome_report.h"

#include <fmt/format.h>

#include "sim/explain.h"
#include "tools/human_units.h"
#include "tools/terminal_colour.h"
#include "trace/names.h"

namespace zfetch::tools {
namespace {

std::string module_label(const model::Scenario& scenario, model::ModuleIndex m) {
  if (m == model::kNone) {
    return "";
  }
  return std::string(trace::display_module_name(scenario.modules[m].qualified_name));
}

std::string_view status_word(trace::Status status) {
  return status == trace::Status::Inflight ? "INFLIGHT" : "AVAILABLE";
}

// A change fails "at" a hazard when its (first) failure is in the accessing module.
std::vector<const sim::HazardChange*> failing_changes(
    const sim::Hazard& hazard, const std::vector<sim::HazardChange>& changes) {
  std::vector<const sim::HazardChange*> out;
  for (const sim::HazardChange& c : changes) {
    if (c.outcome.failure && c.outcome.failure->module == hazard.module) {
      out.push_back(&c);
    }
  }
  return out;
}

}  // namespace

std::string hazard_text(const model::Scenario& scenario, sim::Discovery discovery,
                        const sim::Outcome& outcome, const std::vector<sim::HazardChange>& changes,
                        bool colour) {
  if (outcome.hazards.empty()) {
    return "";
  }
  const size_t n = outcome.hazards.size();
  std::string out = fmt::format(
      "\n{} {} external access{} went undiscovered: the run passed only because of residency "
      "or prefetch timing\n",
      paint("latent hazards:", Colour::Warning, colour), n, n == 1 ? "" : "es");
  for (const sim::Hazard& h : outcome.hazards) {
    const std::string& param = scenario.params[h.param].qualified_name;
    const model::ModuleIndex owner = scenario.params[h.param].owner;
    out += fmt::format(
        "- '{}' accessed {} (a parameter of '{}') in phase {} at engine {}, micro-step {} "
        "(rank {}); it was {}{}, so the {} getter did not register it as an external "
        "parameter of '{}' and the trace has no entry for it there.\n",
        module_label(scenario, h.module), param, module_label(scenario, owner), format_as(h.phase),
        h.engine, h.micro_step, h.rank, status_word(h.status),
        h.persistent                          ? " (persistent, so resident)"
        : h.status == trace::Status::Inflight ? " (prefetched, not yet waited on)"
                                              : " (still gathered)",
        format_as(discovery), module_label(scenario, h.module));
    const std::vector<const sim::HazardChange*> failing = failing_changes(h, changes);
    if (failing.empty()) {
      out += "  no re-simulated change failed first at this access.\n";
    }
    for (const sim::HazardChange* c : failing) {
      out +=
          fmt::format("  fails under {}: {}\n", c->change, outcome_summary(scenario, c->outcome));
    }
  }
  return out;
}

nlohmann::ordered_json hazard_json(const model::Scenario& scenario, const sim::Outcome& outcome,
                                   const std::vector<sim::HazardChange>& changes) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const sim::Hazard& h : outcome.hazards) {
    nlohmann::ordered_json fails = nlohmann::ordered_json::array();
    for (const sim::HazardChange* c : failing_changes(h, changes)) {
      fails.push_back({{"change", c->change},
                       {"outcome", format_as(c->outcome.kind)},
                       {"summary", outcome_summary(scenario, c->outcome)},
                       {"message", c->outcome.failure->message}});
    }
    array.push_back({{"module", module_label(scenario, h.module)},
                     {"param", scenario.params[h.param].qualified_name},
                     {"status", status_word(h.status)},
                     {"persistent", h.persistent},
                     {"phase", format_as(h.phase)},
                     {"rank", h.rank},
                     {"engine", h.engine},
                     {"step", h.step},
                     {"micro_step", h.micro_step},
                     {"fails_under", fails}});
  }
  return array;
}

std::string remedy_text(const std::vector<sim::Remedy>& remedies) {
  if (remedies.empty()) {
    return "No change zfetch tries (a DeepSpeed with PR #8875, the persistence threshold, "
           "registering the missed external parameters) makes the re-simulated run pass.\n";
  }
  std::string out = "To avoid it (each change re-simulated: the run then passes):\n";
  for (size_t i = 0; i < remedies.size(); ++i) {
    out += fmt::format("- {}{}", i == 0 ? "" : "or ", remedies[i].advice);
  }
  return out;
}

nlohmann::ordered_json remedy_json(const model::Scenario& scenario,
                                   const std::vector<sim::Remedy>& remedies) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const sim::Remedy& r : remedies) {
    array.push_back({{"kind", sim::kRemedyKindNames[r.kind]},
                     {"advice", r.advice},
                     {"resimulated", outcome_summary(scenario, r.outcome)}});
  }
  return array;
}

std::string outcome_summary(const model::Scenario& scenario, const sim::Outcome& outcome) {
  if (!outcome.failure) {
    if (outcome.kind == sim::OutcomeKind::TraceInvalidated) {
      return fmt::format("pass with {} trace invalidation{}", outcome.invalidations,
                         outcome.invalidations == 1 ? "" : "s");
    }
    return "pass";
  }
  const sim::Failure& f = *outcome.failure;
  std::string where = fmt::format("{} in phase {}", format_as(outcome.kind), format_as(f.phase));
  if (f.module != model::kNone) {
    where += fmt::format(" of '{}'", module_label(scenario, f.module));
  }
  return fmt::format("{} at engine {}, micro-step {}, trace step {} (rank {})", where, f.engine,
                     f.micro_step, f.trace_step, f.rank);
}

std::string outcome_text(const model::Scenario& scenario, sim::Discovery discovery,
                         const sim::Outcome& outcome, bool colour) {
  std::string out = fmt::format("scenario: {} ({})\n", scenario.name, scenario.path);
  out += fmt::format("discovery: {}\n", format_as(discovery));
  const std::string summary = outcome_summary(scenario, outcome);
  out += fmt::format("outcome: {}\n",
                     paint(summary, outcome.failure ? Colour::Failure : Colour::Pass, colour));
  out += fmt::format(
      "ran: {} optimizer steps, {} passes, {} fetches, {} gathers ({}), {} "
      "events\n",
      outcome.stats.optimizer_steps, outcome.stats.passes, outcome.stats.fetches,
      outcome.stats.gathers, human_bytes(outcome.stats.gathered_bytes), outcome.stats.events);
  for (const std::string& warning : outcome.warnings) {
    out += fmt::format("{} {}\n", paint("warning:", Colour::Warning, colour), warning);
  }
  if (!outcome.invalidation_details.empty()) {
    out += fmt::format("\n{}{}\n", paint("why the trace was invalidated:", Colour::Heading, colour),
                       outcome.warnings.empty() ? " (DeepSpeed logs a warning for each only with "
                                                  "log_trace_cache_warnings: true)"
                                                : "");
    for (const sim::Invalidation& at : outcome.invalidation_details) {
      out += sim::explain_invalidation(scenario, at);
    }
    if (outcome.invalidations > static_cast<int64_t>(outcome.invalidation_details.size())) {
      out += fmt::format(
          "- and {} more.\n",
          outcome.invalidations - static_cast<int64_t>(outcome.invalidation_details.size()));
    }
  }
  if (outcome.failure) {
    // A bare `assert` raises an AssertionError whose message is empty (the JSON keeps it so).
    const std::string& message = outcome.failure->message;
    out += fmt::format("\n{}\n{}\n", paint("DeepSpeed raises:", Colour::Failure, colour),
                       message.empty() ? "(an exception with an empty message)" : message);
    if (!outcome.failure->explanation.empty()) {
      out += fmt::format("\n{}\n{}", paint("why:", Colour::Heading, colour),
                         outcome.failure->explanation);
      if (out.back() != '\n') {
        out += '\n';
      }
    }
  }
  return out;
}

nlohmann::ordered_json outcome_json(const model::Scenario& scenario, sim::Discovery discovery,
                                    const sim::Outcome& outcome) {
  nlohmann::ordered_json j;
  j["scenario"] = scenario.name;
  j["path"] = scenario.path;
  j["discovery"] = format_as(discovery);
  j["outcome"] = format_as(outcome.kind);
  j["invalidations"] = outcome.invalidations;
  if (outcome.failure) {
    const sim::Failure& f = *outcome.failure;
    j["failure"] = {{"message", f.message},
                    {"explanation", f.explanation},
                    {"phase", format_as(f.phase)},
                    {"module", module_label(scenario, f.module)},
                    {"rank", f.rank},
                    {"engine", f.engine},
                    {"step", f.step},
                    {"micro_step", f.micro_step},
                    {"trace_step", f.trace_step}};
  }
  j["warnings"] = outcome.warnings;
  nlohmann::ordered_json invalidations = nlohmann::ordered_json::array();
  for (const sim::Invalidation& at : outcome.invalidation_details) {
    invalidations.push_back(sim::explain_invalidation(scenario, at));
  }
  j["invalidation_explanations"] = invalidations;
  const sim::RunStats& s = outcome.stats;
  j["stats"] = {{"events", s.events},
                {"passes", s.passes},
                {"optimizer_steps", s.optimizer_steps},
                {"fetches", s.fetches},
                {"gathers", s.gathers},
                {"gathered_params", s.gathered_params},
                {"gathered_bytes", s.gathered_bytes},
                {"getter_gathers", s.getter_gathers},
                {"persistent_gathers", s.persistent_gathers},
                {"releases", s.releases}};
  return j;
}

}  // namespace zfetch::tools
