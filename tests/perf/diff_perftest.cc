// Perftest: diff_traces on two generated traces of N events each (10 million in tools/bench)
// with 5 planted divergences -- one missing event, one extra, one changed, a reordering inside a
// coalesced gather (which must compare equal) and a change of the very last event. Reports the
// diff's CPU time and the process's peak RSS (the diff streams, so it must stay flat), and fails
// unless exactly the planted divergences are found. A third argument diffs the two files that
// many times and reports the fastest diff (the files are written once).
//
//   diff_perftest [EVENTS] [DIR] [DIFFS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/input_file.h"
#include "tests/perf/perf_util.h"
#include "trace/diff.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace {

using zfetch::trace::Event;
using zfetch::trace::EventKind;

constexpr uint64_t kLayers = 48;
constexpr uint64_t kPerLayer = 9;  // pre, fetch, 2 gathers, 2 waits, post, 2 releases

struct Names {
  std::vector<std::string> modules;
  std::vector<std::string> weights;
  std::vector<std::string> biases;
  std::string changed = "model.layers.0.self_attn.q_proj.scale";
  std::string changed_module = "model.layers.0.self_attn.k_proj";
};

// Event i of a transformer-like forward: a pass_start, then kPerLayer events per layer.
Event make_event(uint64_t i, const Names& names) {
  constexpr uint64_t kPass = 1 + kLayers * kPerLayer;
  const uint64_t pass = i / kPass;
  const uint64_t at = i % kPass;
  Event e;
  e.seq = i;
  e.t_ns = static_cast<int64_t>(i) * 1'250;
  e.step = static_cast<int32_t>(pass / 4);
  e.micro_step = static_cast<int32_t>(pass % 4);
  e.phase = zfetch::trace::Phase::Fwd;
  if (at == 0) {
    e.kind = EventKind::PassStart;
    return e;
  }
  const uint64_t layer = (at - 1) / kPerLayer;
  const uint64_t k = (at - 1) % kPerLayer;
  static constexpr EventKind kKinds[kPerLayer] = {
      EventKind::ModulePre,  EventKind::Fetch,   EventKind::Gather,
      EventKind::Gather,     EventKind::Wait,    EventKind::Wait,
      EventKind::ModulePost, EventKind::Release, EventKind::Release};
  e.kind = kKinds[k];
  e.module_id = static_cast<int64_t>(layer + 1);
  e.module = names.modules[layer];
  e.trace_step = static_cast<int32_t>(layer);
  if (k >= 2 && k != 6) {
    const bool bias = k == 3 || k == 5 || k == 8;
    e.param_id = static_cast<int64_t>(2 * layer + (bias ? 1 : 0));
    e.param = bias ? names.biases[layer] : names.weights[layer];
    e.numel = bias ? 4096 : 4096 * 4096;
    e.bytes = 2 * e.numel;
    e.status = zfetch::trace::Status::Inflight;
    if (k <= 5) {
      e.group = static_cast<int64_t>(pass * kLayers + layer);
    }
  }
  return e;
}

bool write_trace(const std::string& path, uint64_t total, const Names& names, bool planted) {
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    std::perror(path.c_str());
    return false;
  }
  zfetch::trace::TraceWriter writer(out, {1, "bench", 1, "resident-skip"});
  const uint64_t missing = total / 5;
  const uint64_t extra = 2 * total / 5;
  const uint64_t changed = 3 * total / 5;
  uint64_t seq = 0;
  bool renamed = false;
  for (uint64_t i = 0; i < total; ++i) {
    Event e = make_event(i, names);
    if (planted) {
      if (i == missing) {
        continue;
      }
      // The first fetch from 3/5 on names a module of another name.
      if (i >= changed && !renamed && e.kind == EventKind::Fetch) {
        e.module = names.changed_module;
        renamed = true;
      }
      if (i == total - 1) {
        e.param = names.changed;  // the very last event, a release
      }
      if (e.kind == EventKind::Gather && i > 4 * total / 5 && e.param == names.weights[1] &&
          e.micro_step == 1) {
        // Reorder the two gathers of one coalesced call (once): bias first, then weight.
        Event bias = make_event(i + 1, names);
        bias.seq = seq++;
        writer.on_event(bias);
        e.seq = seq++;
        writer.on_event(e);
        ++i;
        planted = i < total - 2;  // keep planting the last-event change
        continue;
      }
    }
    e.seq = seq++;
    writer.on_event(e);
    if (planted && i == extra) {
      e.seq = seq++;
      writer.on_event(e);  // the same event twice
    }
  }
  const bool ok = writer.flush();
  std::fclose(out);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  using zfetch::perf::report;
  const uint64_t total = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const std::string dir = argc > 2 ? argv[2] : "/tmp";
  Names names;
  for (uint64_t i = 0; i < kLayers; ++i) {
    names.modules.push_back("model.layers." + std::to_string(i) + ".self_attn.q_proj");
    names.weights.push_back(names.modules.back() + ".weight");
    names.biases.push_back(names.modules.back() + ".bias");
  }
  const std::string expected_path = dir + "/zfetch_diff_perftest.expected.jsonl";
  const std::string recorded_path = dir + "/zfetch_diff_perftest.recorded.jsonl";
  if (!write_trace(expected_path, total, names, false) ||
      !write_trace(recorded_path, total, names, true)) {
    return 1;
  }
  const int diffs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
  const double rss_before = zfetch::perf::peak_rss_mib();
  double seconds = 0;  // the fastest diff, in CPU time
  double wall_seconds = 0;
  zfetch::trace::DiffReport r;
  for (int diff = 0; diff < diffs && !r.error; ++diff) {
    zfetch::io::InputStream recorded_in(recorded_path);
    zfetch::io::InputStream expected_in(expected_path);
    zfetch::trace::TraceReader recorded(recorded_in, recorded_path);
    zfetch::trace::TraceReader expected(expected_in, expected_path);
    const double cpu_start = zfetch::perf::thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    if (!recorded.read_header() || !expected.read_header()) {
      std::fprintf(stderr, "cannot read the headers\n");
      return 1;
    }
    r = zfetch::trace::diff_traces(recorded, expected, {});
    const double diff_seconds = zfetch::perf::thread_cpu_seconds() - cpu_start;
    if (diff == 0 || diff_seconds < seconds) {
      seconds = diff_seconds;
      wall_seconds = zfetch::perf::seconds_since(start);
    }
  }
  if (std::getenv("ZFETCH_KEEP") == nullptr) {
    std::remove(expected_path.c_str());
    std::remove(recorded_path.c_str());
  }
  if (r.error || r.missing != 1 || r.extra != 1 || r.changed != 2) {
    std::fprintf(
        stderr, "diff_perftest: expected 1 missing, 1 extra, 2 changed; found %llu, %llu, %llu%s\n",
        static_cast<unsigned long long>(r.missing), static_cast<unsigned long long>(r.extra),
        static_cast<unsigned long long>(r.changed), r.error ? " and a read error" : "");
    return 1;
  }
  const double events = static_cast<double>(r.recorded_events + r.expected_events);
  report("diff", "seconds (2 traces)", seconds, "s");
  report("diff", "seconds (wall clock)", wall_seconds, "s");
  report("diff", "events/s (both traces)", events / seconds, "ev/s");
  report("diff", "peak RSS", zfetch::perf::peak_rss_mib(), "MiB");
  report("diff", "peak RSS growth", zfetch::perf::peak_rss_mib() - rss_before, "MiB");
  return 0;
}
