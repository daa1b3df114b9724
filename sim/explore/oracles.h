// The fuzzer's oracles: what must hold of every scenario, and the failure classes it counts.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/scenario.h"
#include "sim/simulator.h"

namespace zfetch::sim {

/// The six oracles (docs/fuzz.md states each precisely; so do the comments in oracles.cc).
enum class Oracle : uint8_t {
  Determinism = 1,  ///< 1: no crash, within the work bound, byte-identical reruns
  Discovery,        ///< 2: no fetch-queue mismatch unless oracle2_exemption() names a reason
  PoliciesAgree,    ///< 3: same trace under both policies without resident external accesses
  Invariants,       ///< 4: the model's residency invariants (InvariantChecker)
  RoundTrip,        ///< 5: trace and scenario YAML written and read back are the same
  LatentHazard,     ///< 6: an external access passed unnoticed only because of residency
};

std::string_view format_as(Oracle oracle);

/// What a run ended as, counted per policy by a campaign.
enum class FailureClass : uint8_t {
  Pass,                ///< pass, no latent hazard
  Invalidation,        ///< completed with soft trace invalidations
  FetchQueueMismatch,  ///< `tracing error at step N`
  AgreementOrHang,     ///< ranks disagree at an agreement check, or issue different collectives
  NotAvailable,        ///< computed with a parameter that was not gathered
  InflightParams,      ///< an in-flight / status assertion
  Error,               ///< any other DeepSpeed error
  Hazard,              ///< passed (or only invalidated), with a latent hazard (oracle 6)
};
inline constexpr size_t kFailureClasses = 8;

std::string_view format_as(FailureClass failure_class);

/// One simulation of the scenario under one policy.
struct PolicyRun {
  OutcomeKind outcome = OutcomeKind::Pass;
  FailureClass failure_class = FailureClass::Pass;
  uint64_t digest = 0;  ///< EventDigest of the trace
  uint64_t events = 0;
  std::string message;  ///< DeepSpeed's message when it failed
  std::string where;    ///< "in phase P of 'M' (engine E, micro-step U)" when it failed
  std::string hazard;   ///< the undiscovered access and the config change that makes it fail
};

struct Violation {
  Oracle oracle = Oracle::Determinism;
  Discovery policy = Discovery::ResidentSkip;
  std::string detail;
};

struct OracleOptions {
  Discovery policy = Discovery::ResidentSkip;  ///< the policy under test
  bool round_trip = true;                      ///< oracle 5 (writes and re-reads YAML and trace)
  /// Oracle 1's work bound: a generated scenario never needs more events than this.
  uint64_t max_events = 2'000'000;
};

struct Verdict {
  std::array<PolicyRun, 2> runs;  ///< indexed by Discovery
  std::vector<Violation> violations;
  [[nodiscard]] const PolicyRun& run(Discovery d) const { return runs[static_cast<size_t>(d)]; }
};

/// Why oracle 2 does not apply to a scenario, or "" when it does: some `when` names a step, a
/// micro-step, a rank or the phase (control flow that differs between the pass the trace is
/// recorded in and the passes that replay it; an eval pass replays the training trace), or the
/// root's forward returns a parameter (real DeepSpeed fails that under both policies once a
/// non-reentrant checkpoint region has run: docs/fuzz.md, scenarios/findings/), or control flow
/// depends on the engine while a restart re-uses the model (its backward hooks replay the first
/// engine's trace).
std::string_view oracle2_exemption(const model::Scenario& scenario);

/// Simulates `scenario` under both policies and checks every oracle. Violations of oracles 1,
/// 4 and 5 are reported for any policy, oracle 3 for both together, oracles 2 and 6 for the
/// policy under test only. Never throws: a simulator exception is an oracle 1 violation.
Verdict check_scenario(const model::Scenario& scenario, const OracleOptions& options);

}  // namespace zfetch::sim
