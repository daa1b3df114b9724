// Compares a simulated trace with one recorded from real DeepSpeed, on the event kinds the
// recorder covers (docs/deepspeed-validation.md, "Recorder"), projected onto the fields both
// sides define. Usage: zfetch_real_agreement SCENARIO POLICY REAL.jsonl [--ignore-ids]
// Exit 0 when equal; 1 with the first differing event of each side; 2 on unreadable input.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "diag/render.h"
#include "model/load.h"
#include "sim/simulator.h"
#include "trace/event.h"
#include "trace/names.h"
#include "trace/reader.h"
#include "trace/sink.h"

namespace {

using zfetch::trace::Event;
using zfetch::trace::EventKind;

// The kinds zfetch_record.py records the same way the simulator emits them. Left out: access
// (the recorder sees only non-owner reads), compute and transpose (not recorded), engine_init /
// restart / checkpoint_* (bookkeeping), trace_invalidate and error (never in these runs).
constexpr std::array kCompared = {
    EventKind::Fetch,        EventKind::Gather,           EventKind::Wait,
    EventKind::Release,      EventKind::QueuePop,         EventKind::RegisterExternal,
    EventKind::GetterGather, EventKind::ModulePre,        EventKind::ModulePost,
    EventKind::BackwardPre,  EventKind::BackwardPost,     EventKind::RecomputeAttach,
    EventKind::PassStart,    EventKind::TraceRecord,      EventKind::TraceComplete,
    EventKind::PartitionAll, EventKind::PersistentGather, EventKind::OptimizerStep,
    EventKind::Mismatch,
};

bool compared(EventKind kind) {
  return std::find(kCompared.begin(), kCompared.end(), kind) != kCompared.end();
}

// (engine, micro_step, phase, kind, trace_step, module unless the event names a param, param,
// param_id when the ids are comparable), rendered as one line.
std::string project(const Event& e, bool with_ids) {
  std::string line = fmt::format("engine={} micro_step={} phase={} kind={} trace_step={}", e.engine,
                                 e.micro_step, e.phase, e.kind, e.trace_step);
  if (e.param_id < 0 && e.module_id >= 0) {
    line += fmt::format(" module='{}'", e.module);
  }
  if (e.param_id >= 0) {
    line += fmt::format(" param='{}'", e.param);
    if (with_ids) {
      line += fmt::format(" param_id={}", e.param_id);
    }
  }
  return line;
}

class ProjectingSink final : public zfetch::trace::EventSink {
 public:
  explicit ProjectingSink(bool with_ids) : with_ids_(with_ids) {}
  void on_event(const Event& e) override {
    if (e.rank == 0 && compared(e.kind)) {
      lines.push_back(project(e, with_ids_));
    }
  }
  std::vector<std::string> lines;

 private:
  bool with_ids_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5 || (argc == 5 && std::string_view(argv[4]) != "--ignore-ids")) {
    std::fprintf(stderr, "usage: %s SCENARIO POLICY REAL.jsonl [--ignore-ids]\n", argv[0]);
    return 2;
  }
  const bool with_ids = argc == 4;
  const auto policy = zfetch::sim::parse_discovery(argv[2]);
  if (!policy) {
    std::fprintf(stderr, "unknown policy '%s'\n", argv[2]);
    return 2;
  }
  zfetch::model::LoadResult loaded = zfetch::model::load_scenario_file(argv[1]);
  if (!loaded.scenario) {
    for (const auto& d : loaded.diagnostics) {
      std::fprintf(stderr, "%s: %s\n", d.file.c_str(), d.message.c_str());
    }
    return 2;
  }
  ProjectingSink simulated(with_ids);
  zfetch::sim::Options options;
  options.discovery = *policy;
  zfetch::sim::simulate(*loaded.scenario, options, simulated);

  std::ifstream in(argv[3], std::ios::binary);
  zfetch::trace::TraceReader reader(in, argv[3]);
  if (!in || !reader.read_header()) {
    std::fprintf(stderr, "%s: cannot read the trace header\n", argv[3]);
    return 2;
  }
  std::vector<std::string> real;
  while (const Event* e = reader.next()) {
    if (e->rank == 0 && compared(e->kind)) {
      real.push_back(project(*e, with_ids));
    }
  }
  if (const auto& error = reader.error()) {
    std::fputs(zfetch::diag::render(*error).c_str(), stderr);
    return 2;
  }

  const std::vector<std::string>& sim = simulated.lines;
  const size_t n = std::min(sim.size(), real.size());
  size_t i = 0;
  while (i < n && sim[i] == real[i]) {
    ++i;
  }
  if (i == n && sim.size() == real.size()) {
    std::printf("%s %s: %zu compared events agree with %s\n", argv[1], argv[2], sim.size(),
                argv[3]);
    return 0;
  }
  std::printf("%s %s: the traces differ at compared event #%zu (simulated %zu, real %zu events)\n",
              argv[1], argv[2], i, sim.size(), real.size());
  if (i > 0) {
    std::printf("  last equal: %s\n", sim[i - 1].c_str());
  }
  std::printf("  simulated:  %s\n", i < sim.size() ? sim[i].c_str() : "(end of trace)");
  std::printf("  real:       %s\n", i < real.size() ? real[i].c_str() : "(end of trace)");
  return 1;
}
