// libFuzzer target: scenario text -> loader -> simulator -> trace writer -> trace reader.
// Loading must never crash. A scenario that loads and is small enough is simulated under both
// discovery policies, and under one of them twice: the two traces must be byte-identical
// (determinism), and reading one back must succeed with exactly the number of events the
// simulator reported.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "diag/render.h"
#include "model/load.h"
#include "sim/simulator.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/input_hash.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace {

using zfetch::model::ModuleSpec;
using zfetch::model::Op;
using zfetch::model::Scenario;
using zfetch::model::ScheduleItem;

// Work caps, so that each input runs in well under a millisecond: a fuzzer looks for crashes, not
// for the slowest valid scenario (tests/perf covers speed). A long campaign's corpus drifts to
// the largest inputs the caps let through: at 20,000 units an execution averaged 740 us.
constexpr int64_t kMaxMicroSteps = 64;
constexpr size_t kMaxModules = 300;
constexpr size_t kMaxParams = 300;
constexpr size_t kMaxScheduleItems = 64;
constexpr size_t kMaxRanks = 8;
// Upper bound on (hook calls + accesses + backward nodes per pass) * passes * simulated ranks.
constexpr int64_t kMaxWork = 4'000;

int64_t saturating_add(int64_t a, int64_t b) {
  return a > kMaxWork - b ? kMaxWork + 1 : a + b;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) {
    return 0;
  }
  return a > kMaxWork / b ? kMaxWork + 1 : a * b;
}

// Operations one forward of `index` runs, calls expanded; `memo` holds finished modules (-1:
// not yet). Calls only reach descendants, so the recursion ends.
int64_t module_work(const Scenario& s, zfetch::model::ModuleIndex index,
                    std::vector<int64_t>& memo);

int64_t ops_work(const Scenario& s, const std::vector<Op>& ops, std::vector<int64_t>& memo) {
  int64_t total = 0;
  for (const Op& op : ops) {
    int64_t w = 1;
    switch (op.kind) {
    case Op::Kind::Call:
      w = op.callee < s.modules.size() ? saturating_add(1, module_work(s, op.callee, memo)) : 1;
      break;
    case Op::Kind::Checkpoint:  // the body runs again as a recompute in backward
      w = saturating_mul(2, ops_work(s, op.body, memo));
      break;
    case Op::Kind::Repeat:
      w = saturating_mul(op.count < 1 ? 1 : op.count, ops_work(s, op.body, memo));
      break;
    case Op::Kind::Gathered:  // the block's gather and partition of its params, then the body
      w = saturating_add(static_cast<int64_t>(2 * op.gathered.params.size()),
                         ops_work(s, op.body, memo));
      break;
    case Op::Kind::Access:
    case Op::Kind::Return:
      break;
    }
    total = saturating_add(total, w);
  }
  return total;
}

int64_t module_work(const Scenario& s, zfetch::model::ModuleIndex index,
                    std::vector<int64_t>& memo) {
  if (memo[index] >= 0) {
    return memo[index];
  }
  memo[index] = kMaxWork + 1;  // a cycle (a loader bug) counts as too much work
  const ModuleSpec& m = s.modules[index];
  int64_t w = m.outputs < 1 ? 1 : m.outputs;  // one pre-backward node per output
  if (m.has_forward) {
    w = saturating_add(w, ops_work(s, m.forward, memo));
  } else {
    w = saturating_add(w, static_cast<int64_t>(m.params.size()));
    for (zfetch::model::ModuleIndex child : m.children) {
      w = child < s.modules.size() ? saturating_add(w, module_work(s, child, memo)) : w;
    }
  }
  memo[index] = w;
  return w;
}

void collect_ranks(const std::vector<Op>& ops, std::set<int64_t>& ranks) {
  for (const Op& op : ops) {
    ranks.insert(op.when.ranks.begin(), op.when.ranks.end());
    collect_ranks(op.body, ranks);
  }
}

bool small_enough(const Scenario& s) {
  if (s.modules.empty() || s.modules.size() > kMaxModules || s.params.size() > kMaxParams ||
      s.schedule.size() > kMaxScheduleItems) {
    return false;
  }
  const int64_t accumulation = s.config.gradient_accumulation_steps;
  int64_t passes = 0;
  for (const ScheduleItem& item : s.schedule) {
    passes = saturating_add(passes, zfetch::model::root_forwards(item, accumulation));
  }
  if (passes > kMaxMicroSteps) {
    return false;
  }
  // The simulator runs rank 0, every rank a `when` names and one unnamed rank.
  std::set<int64_t> named;
  for (const ModuleSpec& m : s.modules) {
    collect_ranks(m.forward, named);
  }
  if (named.size() + 2 > kMaxRanks) {
    return false;
  }
  std::vector<int64_t> memo(s.modules.size(), -1);
  const int64_t per_pass = module_work(s, 0, memo);
  const int64_t work = saturating_mul(saturating_mul(per_pass, passes < 1 ? 1 : passes),
                                      static_cast<int64_t>(named.size() + 2));
  return work <= kMaxWork;
}

struct Run {
  zfetch::sim::Outcome outcome;
  std::string trace;
};

Run simulate_to_memory(const Scenario& scenario, zfetch::sim::Discovery discovery) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&data, &size);
  FUZZ_CHECK(out != nullptr);
  zfetch::trace::TraceHeader header;
  header.scenario = scenario.name;
  header.world_size = scenario.world_size;
  header.discovery = std::string(format_as(discovery));
  Run run;
  {
    zfetch::trace::TraceWriter writer(out, header);
    zfetch::sim::Options options;
    options.discovery = discovery;
    run.outcome = zfetch::sim::simulate(scenario, options, writer);
    FUZZ_CHECK(writer.flush());
  }
  FUZZ_CHECK(std::fclose(out) == 0);
  run.trace.assign(data, size);
  std::free(data);
  return run;
}

void check_reads_back(const Run& run, const Scenario& scenario) {
  std::istringstream in(run.trace);
  zfetch::trace::TraceReader reader(in, "fuzz.jsonl");
  if (!reader.read_header()) {
    std::fputs(zfetch::diag::render(*reader.error()).c_str(), stderr);
    FUZZ_FAIL("the simulator's trace header does not read back");
  }
  FUZZ_CHECK(reader.header().scenario == scenario.name);
  FUZZ_CHECK(reader.header().world_size == scenario.world_size);
  uint64_t events = 0;
  while (reader.next() != nullptr) {
    ++events;
  }
  if (reader.error()) {
    std::fputs(zfetch::diag::render(*reader.error()).c_str(), stderr);
    FUZZ_FAIL("the simulator's trace does not read back");
  }
  FUZZ_CHECK(events == run.outcome.stats.events);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // `deepspeed_config:` reads a file by path (possibly /dev/zero or a file of the host); the
  // fuzzer keeps to the text it was given. Inline `deepspeed:` blocks exercise the same reader.
  if (text.find("deepspeed_config") != std::string_view::npos) {
    return -1;
  }
  const zfetch::model::LoadResult loaded =
      zfetch::model::parse_scenario_text("fuzz", text, "/nonexistent");
  FUZZ_CHECK(loaded.scenario.has_value() == loaded.diagnostics.empty());
  if (!loaded.scenario || !small_enough(*loaded.scenario)) {
    return 0;
  }
  // Both policies run; one of them, picked by the input's bytes, is also run a second time and
  // read back. That keeps each input to three simulations and one read, and a campaign checks
  // determinism and the round trip under both policies across its inputs.
  const zfetch::sim::Discovery checked = input_hash(data, size) % 2 == 0
                                             ? zfetch::sim::Discovery::ResidentSkip
                                             : zfetch::sim::Discovery::ResidencyIndependent;
  for (zfetch::sim::Discovery discovery :
       {zfetch::sim::Discovery::ResidentSkip, zfetch::sim::Discovery::ResidencyIndependent}) {
    if (discovery != checked) {
      // Its trace was never compared, only written and dropped: the writer and the reader are
      // checked on the other policy's runs (and on this policy's, for other inputs).
      zfetch::trace::NullSink sink;
      zfetch::sim::Options options;
      options.discovery = discovery;
      (void)zfetch::sim::simulate(*loaded.scenario, options, sink);
      continue;
    }
    const Run first = simulate_to_memory(*loaded.scenario, discovery);
    const Run second = simulate_to_memory(*loaded.scenario, discovery);
    FUZZ_CHECK(first.trace == second.trace);
    FUZZ_CHECK(first.outcome.kind == second.outcome.kind);
    FUZZ_CHECK(first.outcome.stats.events == second.outcome.stats.events);
    check_reads_back(first, *loaded.scenario);
  }
  return 0;
}
