// The seed scenario (issue #8874) against the per-step tables of docs/semantics.md 7.6.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

#include "tests/sim/sim_test_util.h"

namespace zfetch::sim::testing {
namespace {

using trace::EventKind;
using trace::Phase;

constexpr const char* kSeed = "scenarios/seed/resident_adapter_resume.yaml";

// The names of 7.1: M, AD, BASE, LA, LB and W0, Aw, Bw (no biases: the 7.1 correction).
std::string short_module(const std::string& name) {
  static const std::map<std::string, std::string> names = {{"<root>", "M"},
                                                           {"adapter", "AD"},
                                                           {"adapter.base", "BASE"},
                                                           {"adapter.adapter_A", "LA"},
                                                           {"adapter.adapter_B", "LB"}};
  auto it = names.find(name);
  return it == names.end() ? name : it->second;
}

std::string short_param(const std::string& name) {
  static const std::map<std::string, std::string> names = {{"adapter.base.weight", "W0"},
                                                           {"adapter.adapter_A.weight", "Aw"},
                                                           {"adapter.adapter_B.weight", "Bw"}};
  auto it = names.find(name);
  return it == names.end() ? name : it->second;
}

// One row of a 7.6 table: the fetch at trace step s, what it gathered (G), what its queue check
// popped, what the matching post hook partitioned, and recompute attributions.
struct Row {
  std::string hook;
  std::string module;
  std::vector<std::string> gathered;
  std::vector<std::string> popped;
  std::vector<std::string> released;
  std::vector<std::string> attached;
  bool mismatch = false;
};

std::string render(int s, const Row& r) {
  std::string out =
      fmt::format("s{} {} {} G[{}] pop[{}] post[{}]", s, r.hook, r.module,
                  fmt::join(r.gathered, ","), fmt::join(r.popped, ","), fmt::join(r.released, ","));
  if (!r.attached.empty()) {
    out += fmt::format(" attach[{}]", fmt::join(r.attached, ","));
  }
  if (r.mismatch) {
    out += " MISMATCH";
  }
  return out;
}

// The rows of one pass (engine, 0-based micro-step). Post-forward hooks match the innermost
// open forward fetch; post-backward hooks match the module's latest backward fetch.
std::vector<std::string> table(const Run& run, int engine, int micro_step) {
  std::map<int, Row> rows;
  std::vector<int> open_forward;
  std::map<std::string, int> last_backward;
  int fetch_row = -1;
  int post_row = -1;
  for (const OwnedEvent& ev : run.events) {
    const trace::Event& e = ev.e;
    if (e.engine != engine || e.micro_step != micro_step ||
        (e.phase != Phase::Fwd && e.phase != Phase::Bwd && e.phase != Phase::Recompute)) {
      continue;
    }
    switch (e.kind) {
    case EventKind::Fetch: {
      Row& row = rows[e.trace_step];
      row.hook = e.phase == Phase::Fwd ? "fwd" : e.phase == Phase::Recompute ? "replay" : "bwd";
      row.module = short_module(ev.module);
      fetch_row = e.trace_step;
      post_row = -1;
      if (e.phase == Phase::Bwd) {
        last_backward[ev.module] = e.trace_step;
      } else {
        open_forward.push_back(e.trace_step);
      }
      break;
    }
    case EventKind::Gather:
      REQUIRE(fetch_row >= 0);
      rows[fetch_row].gathered.push_back(short_param(ev.param));
      break;
    case EventKind::QueuePop:
      REQUIRE(fetch_row >= 0);
      rows[fetch_row].popped.push_back(fmt::format("{}@{}", short_param(ev.param), e.trace_step));
      break;
    case EventKind::RecomputeAttach:
      REQUIRE(fetch_row >= 0);
      rows[fetch_row].attached.push_back(
          fmt::format("{}>{}", short_param(ev.param), short_module(ev.module)));
      break;
    case EventKind::Mismatch:
      REQUIRE(fetch_row >= 0);
      rows[fetch_row].mismatch = true;
      break;
    case EventKind::ModulePost:
      REQUIRE(!open_forward.empty());
      post_row = open_forward.back();
      open_forward.pop_back();
      CHECK(rows[post_row].module == short_module(ev.module));
      fetch_row = -1;
      break;
    case EventKind::BackwardPost:
      REQUIRE(last_backward.count(ev.module) == 1);
      post_row = last_backward[ev.module];
      fetch_row = -1;
      break;
    case EventKind::Release:
      REQUIRE(post_row >= 0);
      rows[post_row].released.push_back(short_param(ev.param));
      break;
    case EventKind::ModulePre:
    case EventKind::BackwardPre:
      fetch_row = -1;
      post_row = -1;
      break;
    default:
      break;
    }
  }
  std::vector<std::string> out;
  for (const auto& [s, row] : rows) {
    out.push_back(render(s, row));
  }
  return out;
}

// Compares row by row so that doctest prints the differing row, then the row count.
void check_table(const std::vector<std::string>& actual, const std::vector<std::string>& expected) {
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    CHECK(actual[i] == expected[i]);
  }
  CHECK(actual.size() == expected.size());
}

// 7.6 "Engine 1, µ1 (RECORD)" without Ab/Bb. RECORD releases everything the module lists,
// persistent Aw/Bw included; the consumer-set rule keeps Aw while AD holds it and W0 while
// its recompute owner M holds it.
const std::vector<std::string> kEngine1Mu1 = {
    "s0 fwd M G[] pop[] post[]",
    "s1 fwd AD G[] pop[] post[]",  // after LB: Aw already NA
    "s2 fwd BASE G[W0] pop[] post[W0]",
    "s3 fwd LA G[] pop[] post[Aw]",  // Aw gathered by the getter just before
    "s4 fwd LB G[Bw] pop[] post[Bw]",
    "s5 bwd M G[] pop[] post[W0]",  // the recompute-attributed W0, last
    "s6 replay AD G[Aw] pop[] post[Aw]",
    "s7 replay BASE G[W0] pop[] post[] attach[W0>M]",  // kept(M)
    "s8 replay LA G[] pop[] post[]",                   // Aw kept(AD)
    "s9 replay LB G[Bw] pop[] post[Bw]",
    "s10 bwd AD G[Aw] pop[] post[Aw]",
    "s11 bwd LB G[Bw] pop[] post[Bw]",
    "s12 bwd LA G[] pop[] post[]",    // Aw kept(AD)
    "s13 bwd BASE G[] pop[] post[]",  // W0 still AV, kept(M)
};

// 7.6 "Engine 1, µ2 (COMPLETE)": persistent params gathered once, never released; W0 released
// after BASE's forward (reuse distance 0) and by M's post-backward (recompute owner).
std::vector<std::string> engine1_mu2(bool persistent_resident) {
  const std::string aw = persistent_resident ? "" : "Aw";
  const std::string bw = persistent_resident ? "" : "Bw";
  return {
      "s0 fwd M G[] pop[] post[]",
      fmt::format("s1 fwd AD G[{}] pop[Aw@1] post[]", aw),
      "s2 fwd BASE G[W0] pop[W0@2] post[W0]",
      "s3 fwd LA G[] pop[Aw@3] post[]",
      fmt::format("s4 fwd LB G[{}] pop[Bw@4] post[]", bw),
      "s5 bwd M G[] pop[] post[W0]",
      "s6 replay AD G[] pop[Aw@6] post[]",
      "s7 replay BASE G[W0] pop[W0@7] post[] attach[W0>M]",
      "s8 replay LA G[] pop[Aw@8] post[]",
      "s9 replay LB G[] pop[Bw@9] post[]",
      "s10 bwd AD G[] pop[Aw@10] post[]",
      "s11 bwd LB G[] pop[Bw@11] post[]",
      "s12 bwd LA G[] pop[Aw@12] post[]",
      "s13 bwd BASE G[] pop[W0@13] post[]",
  };
}

// 7.6 "Engine 2, µ1 (RECORD), pre-fix": Aw, Bw resident from the load; the AV access is not
// discovered; LA and LB release the resident persistent params (RECORD releases all).
const std::vector<std::string> kEngine2Mu1PreFix = {
    "s0 fwd M G[] pop[] post[]",         "s1 fwd AD G[] pop[] post[]",
    "s2 fwd BASE G[W0] pop[] post[W0]",  "s3 fwd LA G[] pop[] post[Aw]",
    "s4 fwd LB G[] pop[] post[Bw]",      "s5 bwd M G[] pop[] post[W0]",
    "s6 replay AD G[] pop[] post[]",     "s7 replay BASE G[W0] pop[] post[] attach[W0>M]",
    "s8 replay LA G[Aw] pop[] post[Aw]", "s9 replay LB G[Bw] pop[] post[Bw]",
    "s10 bwd AD G[] pop[] post[]",       "s11 bwd LB G[Bw] pop[] post[Bw]",
    "s12 bwd LA G[Aw] pop[] post[Aw]",   "s13 bwd BASE G[] pop[] post[]",
};

// 7.6 "Engine 2, µ2 (COMPLETE), pre-fix": the queue lacks Aw@1/6/10; at s6 the Adapter needs
// {Aw} and pops W0@7. The Adapter's replay post hook never runs.
const std::vector<std::string> kEngine2Mu2PreFix = {
    "s0 fwd M G[] pop[] post[]",
    "s1 fwd AD G[] pop[] post[]",
    "s2 fwd BASE G[W0] pop[W0@2] post[W0]",
    "s3 fwd LA G[] pop[Aw@3] post[]",  // Aw gathered by the getter (registered on AD now)
    "s4 fwd LB G[Bw] pop[Bw@4] post[]",
    "s5 bwd M G[] pop[] post[]",
    "s6 replay AD G[] pop[W0@7] post[] MISMATCH",
};

TEST_SUITE("sim") {
  TEST_CASE("seed 7.6: engine 1, both policies, µ1 RECORD and µ2-µ4 COMPLETE") {
    for (Discovery d : {Discovery::ResidentSkip, Discovery::ResidencyIndependent}) {
      CAPTURE(format_as(d));
      const Run run = simulate_file(kSeed, d);
      check_table(table(run, 0, 0), kEngine1Mu1);
      check_table(table(run, 0, 1), engine1_mu2(false));
      check_table(table(run, 0, 2), engine1_mu2(true));
      check_table(table(run, 0, 3), engine1_mu2(true));
    }
  }

  TEST_CASE("seed 7.6: engine 2 pre-fix (resident-skip), µ1 RECORD and the µ2 failure") {
    const Run run = simulate_file(kSeed, Discovery::ResidentSkip);
    check_table(table(run, 1, 0), kEngine2Mu1PreFix);
    check_table(table(run, 1, 1), kEngine2Mu2PreFix);
    REQUIRE(run.outcome.kind == OutcomeKind::FetchQueueMismatch);
    REQUIRE(run.outcome.failure.has_value());
    CHECK(run.outcome.failure->engine == 1);
    CHECK(run.outcome.failure->micro_step == 1);
    CHECK(run.outcome.failure->trace_step == 6);
    CHECK(run.outcome.failure->phase == Phase::Recompute);
    // Byte-exact against the text real DeepSpeed raised (docs/deepspeed-validation.md 1).
    std::ifstream in(std::string(ZFETCH_SOURCE_DIR) +
                     "/scenarios/real/resident_adapter_resume.resident-skip.error.txt");
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    CHECK(run.outcome.failure->message == text.str());
  }

  TEST_CASE("seed 7.6: engine 2 fixed (residency-independent) equals engine 1 from µ2") {
    const Run run = simulate_file(kSeed, Discovery::ResidencyIndependent);
    // µ1 as engine 1's, except that Bw is resident from the load (Aw was gathered by the
    // getter in engine 1, and is resident here: s3 gathers nothing in both).
    std::vector<std::string> mu1 = kEngine1Mu1;
    mu1[4] = "s4 fwd LB G[] pop[] post[Bw]";
    check_table(table(run, 1, 0), mu1);
    check_table(table(run, 1, 1), engine1_mu2(false));
    check_table(table(run, 1, 2), engine1_mu2(true));
    check_table(table(run, 1, 3), engine1_mu2(true));
    CHECK(run.outcome.kind == OutcomeKind::Pass);
    CHECK(run.outcome.invalidations == 0);
  }
}

}  // namespace
}  // namespace zfetch::sim::testing
