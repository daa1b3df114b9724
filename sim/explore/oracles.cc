// check_scenario(): runs the scenario under both policies and checks oracles 1 to 6.
#include "sim/explore/oracles.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <utility>

#include "model/load.h"
#include "model/persistence.h"
#include "model/scenario_writer.h"
#include "sim/explore/event_digest.h"
#include "sim/explore/invariants.h"
#include "trace/names.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace zfetch::sim {
namespace {

using trace::EventKind;
using trace::Status;

constexpr std::array<std::string_view, 6> kOracleNames = {
    "determinism", "discovery", "policies-agree", "invariants", "round-trip", "latent-hazard"};
constexpr std::array<std::string_view, kFailureClasses> kClassNames = {"pass",
                                                                       "invalidation",
                                                                       "fetch-queue-mismatch",
                                                                       "agreement-or-hang",
                                                                       "not-available",
                                                                       "inflight-params",
                                                                       "error",
                                                                       "hazard"};

FailureClass class_of(OutcomeKind kind) {
  switch (kind) {
  case OutcomeKind::Pass:
    return FailureClass::Pass;
  case OutcomeKind::TraceInvalidated:
    return FailureClass::Invalidation;
  case OutcomeKind::FetchQueueMismatch:
    return FailureClass::FetchQueueMismatch;
  case OutcomeKind::RankDivergence:
  case OutcomeKind::Hang:
    return FailureClass::AgreementOrHang;
  case OutcomeKind::NotAvailable:
    return FailureClass::NotAvailable;
  case OutcomeKind::InflightParams:
    return FailureClass::InflightParams;
  case OutcomeKind::Error:
    return FailureClass::Error;
  }
  return FailureClass::Error;
}

// The external accesses of one run that found their param AVAILABLE or INFLIGHT: a getter read
// of a param that the reading module does not own (oracle 3's premise: the only accesses the
// two policies treat differently).
class ResidentAccessCount final : public trace::EventSink {
 public:
  explicit ResidentAccessCount(const model::Scenario& scenario)
      : scenario_(scenario), tied_(scenario.params.size(), 0) {
    for (const model::ParamSpec& p : scenario.params) {
      if (p.tied_to != model::kNone) {
        tied_[model::canonical(scenario, p.tied_to)] = 1;
      }
    }
  }

  void on_event(const trace::Event& e) override {
    if (e.kind != EventKind::Access || e.module_index == trace::Event::kNoIndex ||
        e.param_index == trace::Event::kNoIndex) {
      return;
    }
    if (e.status != Status::Available && e.status != Status::Inflight) {
      return;
    }
    // The getter judges by the name it was read through, which the event does not keep (it
    // names the tied group's canonical param): any read of a tied param may count as external.
    if (scenario_.params[e.param_index].owner == e.module_index && tied_[e.param_index] == 0) {
      return;
    }
    ++resident_;
  }

  [[nodiscard]] uint64_t resident() const { return resident_; }

 private:
  const model::Scenario& scenario_;
  std::vector<uint8_t> tied_;  ///< per canonical param: it has aliases
  uint64_t resident_ = 0;
};

// Oracle 6's finding: the engine's first latent hazard (Outcome::hazards, the one definition of
// an undiscovered external access), in words.
std::string first_hazard(const model::Scenario& scenario, const Outcome& outcome) {
  if (outcome.hazards.empty()) {
    return {};
  }
  const Hazard& h = outcome.hazards.front();
  return fmt::format(
      "'{}' read {} while it was {} (engine {}, micro-step {}) and was never registered as its "
      "external parameter",
      trace::display_module_name(scenario.modules[h.module].qualified_name),
      scenario.params[h.param].qualified_name,
      h.status == Status::Available ? "AVAILABLE" : "INFLIGHT", h.engine, h.micro_step);
}

struct ObservedRun {
  PolicyRun run;
  std::string invariant;     ///< oracle 4's finding, "" if none
  std::string crash;         ///< the exception a simulation threw, "" if none
  uint64_t resident = 0;     ///< resident external accesses (oracle 3)
  std::string undiscovered;  ///< oracle 6's finding: the first latent hazard, "" if none
};

Options options_for(Discovery discovery) {
  Options options;
  options.discovery = discovery;
  return options;
}

ObservedRun observe(const model::Scenario& scenario, Discovery discovery) {
  ObservedRun observed;
  EventDigest digest;
  InvariantChecker invariants(scenario);
  ResidentAccessCount scan(scenario);
  TeeSink checks(invariants, scan);
  TeeSink all(digest, checks);
  try {
    const Outcome outcome = simulate(scenario, options_for(discovery), all);
    observed.run.outcome = outcome.kind;
    observed.run.failure_class = class_of(outcome.kind);
    observed.undiscovered = first_hazard(scenario, outcome);
    if (outcome.failure) {
      const Failure& f = *outcome.failure;
      observed.run.message = f.message;
      observed.run.where =
          fmt::format("in phase {} of '{}' (engine {}, micro-step {})", trace::format_as(f.phase),
                      f.module < scenario.modules.size()
                          ? trace::display_module_name(scenario.modules[f.module].qualified_name)
                          : std::string_view("?"),
                      f.engine, f.micro_step);
    }
  } catch (const std::exception& e) {
    observed.crash = e.what();
  }
  observed.run.digest = digest.digest();
  observed.run.events = digest.events();
  observed.invariant = invariants.violation();
  observed.resident = scan.resident();
  return observed;
}

uint64_t digest_of(const model::Scenario& scenario, Discovery discovery, OutcomeKind* kind) {
  EventDigest digest;
  const Outcome outcome = simulate(scenario, options_for(discovery), digest);
  if (kind != nullptr) {
    *kind = outcome.kind;
  }
  return digest.digest();
}

// Oracle 5, traces: the simulator's trace through TraceWriter and TraceReader digests the same.
std::string trace_round_trip(const model::Scenario& scenario, Discovery discovery,
                             uint64_t expected) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&data, &size);
  if (out == nullptr) {
    return {};  // no memory stream: nothing to compare (not a finding)
  }
  trace::TraceHeader header;
  header.scenario = scenario.name;
  header.world_size = scenario.world_size;
  header.discovery = std::string(format_as(discovery));
  bool flushed = false;
  {
    trace::TraceWriter writer(out, header);
    simulate(scenario, options_for(discovery), writer);
    flushed = writer.flush();
  }
  std::fclose(out);
  std::string text(data, size);
  std::free(data);
  if (!flushed) {
    return "the trace writer failed to flush";
  }
  std::istringstream in(text);
  trace::TraceReader reader(in, "round-trip.jsonl");
  if (!reader.read_header()) {
    return "the written trace's header does not read back: " + reader.error()->message;
  }
  EventDigest digest;
  while (const trace::Event* e = reader.next()) {
    digest.on_event(*e);
  }
  if (reader.error()) {
    return fmt::format("the written trace does not read back: line {}: {}",
                       reader.error()->loc.line, reader.error()->message);
  }
  if (digest.digest() != expected) {
    return "the trace read back differs from the events written";
  }
  return {};
}

// Oracle 6: the first config change that turns the hazard into a failure under resident-skip,
// or "" when none of them does (then the access is not reported).
std::string failing_change(const model::Scenario& scenario) {
  struct Change {
    const char* what;
    bool prefetch_off;
    bool no_persistence;
    bool reuse_off;
  };
  constexpr std::array<Change, 4> kChanges = {{
      {"stage3_prefetch_bucket_size: 0 (prefetch off)", true, false, false},
      {"stage3_param_persistence_threshold: 0 (nothing persistent)", false, true, false},
      {"stage3_max_reuse_distance: 0", false, false, true},
      {"prefetch off and nothing persistent", true, true, false},
  }};
  for (const Change& change : kChanges) {
    model::Scenario variant = scenario;
    model::ZeroConfig& zero = variant.config.zero;
    if (change.prefetch_off) {
      zero.prefetch_bucket_size = 0;
    }
    if (change.no_persistence) {
      zero.param_persistence_threshold = 0;
    }
    if (change.reuse_off) {
      zero.max_reuse_distance = 0;
    }
    OutcomeKind kind = OutcomeKind::Pass;
    digest_of(variant, Discovery::ResidentSkip, &kind);
    if (kind != OutcomeKind::Pass && kind != OutcomeKind::TraceInvalidated) {
      return fmt::format("with {} it ends in {}", change.what, format_as(kind));
    }
  }
  return {};
}

bool conditions_name_pass(const std::vector<model::Op>& ops) {
  for (const model::Op& op : ops) {
    if (!op.when.steps.empty() || !op.when.micro_steps.empty() || !op.when.ranks.empty() ||
        op.when.phase != model::Condition::Phase::Any || conditions_name_pass(op.body)) {
      return true;
    }
  }
  return false;
}

bool conditions_name_engine(const std::vector<model::Op>& ops) {
  for (const model::Op& op : ops) {
    if (!op.when.engines.empty() || conditions_name_engine(op.body)) {
      return true;
    }
  }
  return false;
}

bool returns_param(const std::vector<model::Op>& ops) {
  for (const model::Op& op : ops) {
    if (op.kind == model::Op::Kind::Return || returns_param(op.body)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string_view format_as(Oracle oracle) {
  return kOracleNames[static_cast<size_t>(oracle) - 1];
}

std::string_view format_as(FailureClass failure_class) {
  return kClassNames[static_cast<size_t>(failure_class)];
}

std::string_view oracle2_exemption(const model::Scenario& scenario) {
  for (const model::ModuleSpec& m : scenario.modules) {
    if (conditions_name_pass(m.forward)) {
      return "control flow depends on the step, micro-step, rank or phase";
    }
  }
  if (!scenario.modules.empty() && returns_param(scenario.modules[0].forward)) {
    return "the root's forward returns a parameter";
  }
  // A re-used model's backward hooks still call the first engine's coordinator (semantics
  // 2.3), whose trace was recorded before the restart: flow that differs by engine differs
  // between the pass that recorded that trace and the passes that replay it.
  bool reuses_model = false;
  for (const model::ScheduleItem& item : scenario.schedule) {
    reuses_model =
        reuses_model || (item.kind == model::ScheduleItem::Kind::Restart && item.reuse_model);
  }
  if (reuses_model) {
    for (const model::ModuleSpec& m : scenario.modules) {
      if (conditions_name_engine(m.forward)) {
        return "control flow depends on the engine and a restart re-uses the model";
      }
    }
  }
  return {};
}

Verdict check_scenario(const model::Scenario& scenario, const OracleOptions& options) {
  Verdict verdict;
  const auto add = [&](Oracle oracle, Discovery policy, std::string detail) {
    verdict.violations.push_back({oracle, policy, std::move(detail)});
  };
  std::array<ObservedRun, 2> observed;
  for (Discovery d : {Discovery::ResidentSkip, Discovery::ResidencyIndependent}) {
    ObservedRun& o = observed[static_cast<size_t>(d)];
    o = observe(scenario, d);
    // Oracle 1: the simulator never throws and stays within the work bound.
    if (!o.crash.empty()) {
      add(Oracle::Determinism, d, "the simulator threw: " + o.crash);
    } else if (o.run.events > options.max_events) {
      add(Oracle::Determinism, d,
          fmt::format("{} events, over the work bound of {}", o.run.events, options.max_events));
    }
    // Oracle 4: the residency invariants hold on every event.
    if (!o.invariant.empty()) {
      add(Oracle::Invariants, d, o.invariant);
    }
    verdict.runs[static_cast<size_t>(d)] = o.run;
  }
  const Discovery p = options.policy;
  const ObservedRun& tested = observed[static_cast<size_t>(p)];
  if (!tested.crash.empty()) {
    return verdict;
  }
  // Oracle 1: a second run of the same scenario gives the same events.
  if (digest_of(scenario, p, nullptr) != tested.run.digest) {
    add(Oracle::Determinism, p, "two runs of the same scenario gave different traces");
  }
  // Oracle 2: without control flow that depends on the pass and without a parameter returned
  // from the root, the policy never ends in a fetch-queue mismatch (PR #8875's promise for
  // residency-independent discovery, narrowed to what real DeepSpeed keeps: docs/fuzz.md).
  if (tested.run.outcome == OutcomeKind::FetchQueueMismatch &&
      oracle2_exemption(scenario).empty()) {
    std::string first_line = tested.run.message.substr(0, tested.run.message.find('\n'));
    while (!first_line.empty() && first_line.back() == ' ') {
      first_line.pop_back();
    }
    add(Oracle::Discovery, p,
        fmt::format("fetch-queue mismatch {}: {}", tested.run.where, first_line));
  }
  // Oracle 3: when no external access finds its param AVAILABLE or INFLIGHT in either run, the
  // policies cannot differ, so the traces are the same event for event.
  const ObservedRun& rs = observed[0];
  const ObservedRun& ri = observed[1];
  if (rs.crash.empty() && ri.crash.empty() && rs.resident == 0 && ri.resident == 0 &&
      rs.run.digest != ri.run.digest) {
    add(Oracle::PoliciesAgree, p,
        "no external access found its parameter resident, yet the two policies' traces differ");
  }
  // Oracle 5: the trace and the scenario survive being written and read back.
  if (options.round_trip) {
    std::string problem = trace_round_trip(scenario, p, tested.run.digest);
    if (problem.empty()) {
      const std::string yaml = model::write_scenario_yaml(scenario);
      const model::LoadResult loaded = model::parse_scenario_text("round-trip.yaml", yaml);
      if (!loaded.scenario) {
        problem = fmt::format(
            "the written scenario does not load: {}:{}: {}", loaded.diagnostics.front().loc.line,
            loaded.diagnostics.front().loc.col, loaded.diagnostics.front().message);
      } else if (digest_of(*loaded.scenario, p, nullptr) != tested.run.digest) {
        problem = "the written scenario loads back but simulates differently";
      }
    }
    if (!problem.empty()) {
      add(Oracle::RoundTrip, p, problem);
    }
  }
  // Oracle 6: the run passed, but the engine recorded a latent hazard (Outcome::hazards: an
  // external access in an eager forward left undiscovered because its param was resident by
  // timing or persistence), and a config change that moves residency makes the run fail.
  PolicyRun& run = verdict.runs[static_cast<size_t>(p)];
  if ((run.outcome == OutcomeKind::Pass || run.outcome == OutcomeKind::TraceInvalidated) &&
      !tested.undiscovered.empty()) {
    const std::string change = failing_change(scenario);
    if (!change.empty()) {
      run.failure_class = FailureClass::Hazard;
      run.hazard = tested.undiscovered + "; " + change;
      add(Oracle::LatentHazard, p, run.hazard);
    }
  }
  return verdict;
}

}  // namespace zfetch::sim
