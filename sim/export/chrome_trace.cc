// Chrome trace event JSON writer for the timeline's recording (see chrome_trace.h).
#include "sim/export/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <vector>

#include "sim/timeline/timeline_json.h"
#include "trace/names.h"

namespace zfetch::sim {

namespace {

using detail::append_json_string;
using detail::append_us;

std::string_view category(Slice::Kind kind) {
  switch (kind) {
  case Slice::Kind::Compute:
    return "compute";
  case Slice::Kind::Gather:
    return "gather";
  case Slice::Kind::Prefetch:
    return "prefetch";
  case Slice::Kind::GetterGather:
    return "getter_gather";
  case Slice::Kind::PersistentGather:
    return "persistent_gather";
  case Slice::Kind::H2d:
    return "h2d";
  case Slice::Kind::ReduceScatter:
    return "reduce_scatter";
  }
  return "?";
}

std::string_view module_name(const model::Scenario& scenario, model::ModuleIndex m) {
  if (m >= scenario.modules.size()) {
    return "?";
  }
  // The root's qualified name is ""; show the model's name instead.
  return m == 0 ? std::string_view(scenario.modules[0].name)
                : std::string_view(scenario.modules[m].qualified_name);
}

std::string_view param_name(const model::Scenario& scenario, model::ParamIndex p) {
  return p < scenario.params.size() ? std::string_view(scenario.params[p].qualified_name) : "?";
}

class Writer {
 public:
  explicit Writer(fmt::memory_buffer& out) : out_(out) {}

  // Starts one event object with the fields every phase type has.
  void begin(std::string_view ph, int32_t pid, int tid) {
    out_.append(std::string_view(first_ ? "\n" : ",\n"));
    first_ = false;
    fmt::format_to(std::back_inserter(out_), "{{\"ph\":\"{}\",\"pid\":{},\"tid\":{}", ph, pid, tid);
  }
  void ts(Tick ns) {
    out_.append(std::string_view(",\"ts\":"));
    append_us(out_, ns);
  }
  void key(std::string_view k) {
    out_.push_back(',');
    append_json_string(out_, k);
    out_.push_back(':');
  }
  void string(std::string_view k, std::string_view v) {
    key(k);
    append_json_string(out_, v);
  }
  template <typename T>
  void number(std::string_view k, T v) {
    key(k);
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  void raw(std::string_view text) { out_.append(text); }
  void end() { out_.push_back('}'); }

 private:
  fmt::memory_buffer& out_;
  bool first_ = true;
};

// Track ids of one rank: the four streams keep tids 0-3; the landmark tracks follow.
constexpr int kStepTrack = kStreamCount;
constexpr int kMicroStepTrack = kStreamCount + 1;
constexpr int kPassTrack = kStreamCount + 2;
constexpr int kPhaseTrack = kStreamCount + 3;
constexpr int kEventTrack = kStreamCount + 4;
constexpr int kTrackCount = kStreamCount + 5;

std::string_view track_name(int tid) {
  switch (tid) {
  case 0:
    return "compute stream";
  case 1:
    return "all-gather stream (comm)";
  case 2:
    return "host-to-device copies (h2d)";
  case 3:
    return "reduce-scatter stream (rs)";
  case kStepTrack:
    return "optimizer steps";
  case kMicroStepTrack:
    return "micro-steps";
  case kPassTrack:
    return "passes";
  case kPhaseTrack:
    return "phases";
  case kEventTrack:
    return "events";
  default:
    return "?";
  }
}

// Landmark tracks above the streams: the order a person reads from the top.
int track_sort_index(int tid) {
  return tid >= kStreamCount ? tid - kStreamCount : tid + kTrackCount;
}

int landmark_track(Landmark::Kind kind) {
  switch (kind) {
  case Landmark::Kind::Step:
    return kStepTrack;
  case Landmark::Kind::MicroStep:
    return kMicroStepTrack;
  case Landmark::Kind::Pass:
    return kPassTrack;
  case Landmark::Kind::Phase:
    return kPhaseTrack;
  default:
    return kEventTrack;
  }
}

bool is_gather(Slice::Kind kind) {
  return kind == Slice::Kind::Gather || kind == Slice::Kind::Prefetch ||
         kind == Slice::Kind::GetterGather || kind == Slice::Kind::PersistentGather;
}

// The longest prefix ending in '.' that every name shares ("base_model.model." under PEFT),
// so that slice labels start with what differs.
std::string common_dotted_prefix(const std::vector<std::string_view>& names) {
  if (names.empty()) {
    return "";
  }
  std::string_view prefix = names[0];
  for (std::string_view name : names) {
    size_t n = 0;
    while (n < prefix.size() && n < name.size() && prefix[n] == name[n]) {
      ++n;
    }
    prefix = prefix.substr(0, n);
  }
  const size_t dot = prefix.rfind('.');
  return dot == std::string_view::npos ? "" : std::string(prefix.substr(0, dot + 1));
}

std::string_view strip(std::string_view name, std::string_view prefix) {
  return name.starts_with(prefix) && name.size() > prefix.size() ? name.substr(prefix.size())
                                                                 : name;
}

std::string landmark_name(const Landmark& l, const model::Scenario& scenario,
                          const ChromeTraceNotes& notes) {
  switch (l.kind) {
  case Landmark::Kind::Step:
    return fmt::format("step {}", l.step);
  case Landmark::Kind::MicroStep:
    return fmt::format("micro-step {} (engine {})", l.micro_step, l.engine);
  case Landmark::Kind::Pass:
    return fmt::format("pass {} ({})", l.pass, l.phase == trace::Phase::Eval ? "eval" : "train");
  case Landmark::Kind::Phase:
    return std::string(trace::format_as(l.phase));
  case Landmark::Kind::OptimizerStep:
    return fmt::format("optimizer step {}", l.step);
  case Landmark::Kind::TraceInvalidation:
    return fmt::format("trace invalidated at '{}'", module_name(scenario, l.module));
  case Landmark::Kind::Failure:
    return notes.failure_title.empty() ? std::string("failure")
                                       : fmt::format("failure: {}", notes.failure_title);
  case Landmark::Kind::Restart:
    return "engine restart";
  case Landmark::Kind::CheckpointSave:
    return "checkpoint save";
  case Landmark::Kind::CheckpointLoad:
    return "checkpoint load";
  }
  return "?";
}

// One counter sample per change of the summed deltas at each distinct time, in time order.
struct Delta {
  int32_t rank;
  Tick t;
  int64_t bytes;
};

}  // namespace

std::string chrome_trace_json(const Recording& recording, const model::Scenario& scenario,
                              const ChromeTraceNotes& notes) {
  fmt::memory_buffer out;
  Writer w(out);
  out.append(std::string_view("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["));

  // Ranks that appear, in increasing order, each with its four named stream tracks.
  std::vector<int32_t> ranks;
  for (const Slice& s : recording.slices) {
    ranks.push_back(s.rank);
  }
  for (const CounterSample& c : recording.live_bytes) {
    ranks.push_back(c.rank);
  }
  for (const Landmark& l : recording.landmarks) {
    ranks.push_back(l.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (int32_t rank : ranks) {
    w.begin("M", rank, 0);
    w.string("name", "process_name");
    w.raw(fmt::format(",\"args\":{{\"name\":\"rank {}\"}}", rank));
    w.end();
    w.begin("M", rank, 0);
    w.string("name", "process_sort_index");
    w.raw(fmt::format(",\"args\":{{\"sort_index\":{}}}", rank));
    w.end();
    for (int tid = 0; tid < kTrackCount; ++tid) {
      w.begin("M", rank, tid);
      w.string("name", "thread_name");
      w.raw(fmt::format(",\"args\":{{\"name\":\"{}\"}}", track_name(tid)));
      w.end();
      w.begin("M", rank, tid);
      w.string("name", "thread_sort_index");
      w.raw(fmt::format(",\"args\":{{\"sort_index\":{}}}", track_sort_index(tid)));
      w.end();
    }
  }

  // Labels without the prefix every name shares; the full names stay in args.
  std::vector<std::string_view> label_names;
  for (const Slice& s : recording.slices) {
    if (s.kind == Slice::Kind::Compute || s.kind == Slice::Kind::ReduceScatter ||
        s.params_count == 0) {
      label_names.push_back(module_name(scenario, s.module));
    } else {
      label_names.push_back(param_name(scenario, recording.slice_params[s.params_begin]));
    }
  }
  const std::string prefix = common_dotted_prefix(label_names);

  for (size_t slice = 0; slice < recording.slices.size(); ++slice) {
    const Slice& s = recording.slices[slice];
    w.begin("X", s.rank, static_cast<int>(s.stream));
    w.ts(s.start_ns);
    w.key("dur");
    append_us(out, s.dur_ns);
    const std::string_view label = strip(label_names[slice], prefix);
    const bool named_by_module = s.kind == Slice::Kind::Compute ||
                                 s.kind == Slice::Kind::ReduceScatter || s.params_count == 0;
    w.string("name", named_by_module || s.params_count == 1
                         ? std::string(label)
                         : fmt::format("{} +{} more", label, s.params_count - 1));
    w.string("cat", category(s.kind));
    w.raw(",\"args\":{");
    w.raw(fmt::format("\"step\":{}", s.step));
    w.string("phase", trace::format_as(s.phase));
    w.string("module", module_name(scenario, s.module));
    if (s.kind != Slice::Kind::Compute) {
      w.number("bytes", s.bytes);
    }
    if (s.params_count > 0) {
      w.key("params");
      out.push_back('[');
      for (uint32_t i = 0; i < s.params_count; ++i) {
        if (i > 0) {
          out.push_back(',');
        }
        append_json_string(out, param_name(scenario, recording.slice_params[s.params_begin + i]));
      }
      out.push_back(']');
    }
    w.raw("}");
    w.end();
  }

  // A flow's "s" sits mid-slice in the gather and its "f" at the start of the compute slice
  // ("bp":"e": bind to the enclosing slice), so each end binds to exactly one slice even when
  // slices touch.
  uint64_t id = 1;
  for (const Flow& f : recording.flows) {
    const Slice& from = recording.slices[f.from_slice];
    const Slice& to = recording.slices[f.to_slice];
    w.begin("s", from.rank, static_cast<int>(from.stream));
    w.ts(from.start_ns + from.dur_ns / 2);
    w.string("name", "wait");
    w.string("cat", "wait");
    w.number("id", id);
    w.end();
    w.begin("f", to.rank, static_cast<int>(to.stream));
    w.ts(to.start_ns);
    w.string("name", "wait");
    w.string("cat", "wait");
    w.number("id", id);
    w.string("bp", "e");
    w.end();
    ++id;
  }

  for (const Landmark& l : recording.landmarks) {
    const bool point = l.kind != Landmark::Kind::Step && l.kind != Landmark::Kind::MicroStep &&
                       l.kind != Landmark::Kind::Pass && l.kind != Landmark::Kind::Phase;
    w.begin(point ? "i" : "X", l.rank, landmark_track(l.kind));
    w.ts(l.start_ns);
    if (point) {
      // A failure marks every track ("g"); the other points their rank ("p").
      w.string("s", l.kind == Landmark::Kind::Failure ? "g" : "p");
    } else {
      w.key("dur");
      append_us(out, l.end_ns - l.start_ns);
    }
    w.string("name", landmark_name(l, scenario, notes));
    w.string("cat", "landmark");
    w.raw(",\"args\":{");
    w.raw(fmt::format("\"step\":{},\"micro_step\":{},\"engine\":{},\"pass\":{}", l.step,
                      l.micro_step, l.engine, l.pass));
    w.string("phase", trace::format_as(l.phase));
    if (l.module != model::kNone) {
      w.string("module", module_name(scenario, l.module));
    }
    if (l.trace_step >= 0) {
      w.number("trace_step", l.trace_step);
    }
    if (l.kind == Landmark::Kind::Failure && !notes.failure_message.empty()) {
      w.string("message", notes.failure_message);
    }
    w.raw("}");
    w.end();
  }

  for (const CounterSample& c : recording.live_bytes) {
    w.begin("C", c.rank, 0);
    w.ts(c.t_ns);
    w.string("name", "live gathered bytes");
    w.raw(fmt::format(",\"args\":{{\"bytes\":{}}}", c.live_bytes));
    w.end();
  }

  // In-flight bytes: a collective counts from its issue to the end of its all-gather.
  std::vector<Delta> deltas;
  for (const Slice& s : recording.slices) {
    if (s.stream == Stream::Comm && is_gather(s.kind)) {
      deltas.push_back({s.rank, s.issue_ns, s.bytes});
      deltas.push_back({s.rank, s.start_ns + s.dur_ns, -s.bytes});
    }
  }
  // By rank and time; at equal times the ends (negative) first, then in slice order.
  std::stable_sort(deltas.begin(), deltas.end(), [](const Delta& a, const Delta& b) {
    if (a.rank != b.rank) {
      return a.rank < b.rank;
    }
    if (a.t != b.t) {
      return a.t < b.t;
    }
    return a.bytes < 0 && b.bytes >= 0;
  });
  int64_t in_flight = 0;
  for (size_t i = 0; i < deltas.size(); ++i) {
    in_flight += deltas[i].bytes;
    const bool last_at_time = i + 1 == deltas.size() || deltas[i + 1].rank != deltas[i].rank ||
                              deltas[i + 1].t != deltas[i].t;
    if (last_at_time) {
      w.begin("C", deltas[i].rank, 0);
      w.ts(deltas[i].t);
      w.string("name", "in-flight bytes");
      w.raw(fmt::format(",\"args\":{{\"bytes\":{}}}", in_flight));
      w.end();
    }
    if (i + 1 == deltas.size() || deltas[i + 1].rank != deltas[i].rank) {
      in_flight = 0;
    }
  }

  // Stream utilisation: the busy share of each stream in 100 equal windows of the rank's run
  // (at least 1 us each); a stream runs one operation at a time, so busy time is a sum.
  for (int32_t rank : ranks) {
    Tick end = 0;
    for (const Slice& s : recording.slices) {
      end = s.rank == rank ? std::max(end, s.start_ns + s.dur_ns) : end;
    }
    if (end == 0) {
      continue;
    }
    const Tick window = std::max<Tick>(1'000, (end + 99) / 100);
    const size_t windows = static_cast<size_t>((end + window - 1) / window);
    std::vector<std::array<Tick, kStreamCount>> busy(windows);
    for (const Slice& s : recording.slices) {
      if (s.rank != rank) {
        continue;
      }
      const Tick s_end = s.start_ns + s.dur_ns;
      for (auto k = static_cast<size_t>(s.start_ns / window); k < windows; ++k) {
        const Tick lo = std::max(s.start_ns, static_cast<Tick>(k) * window);
        const Tick hi = std::min(s_end, static_cast<Tick>(k + 1) * window);
        if (hi <= lo) {
          break;
        }
        busy[k][static_cast<size_t>(s.stream)] += hi - lo;
      }
    }
    for (size_t k = 0; k < windows; ++k) {
      w.begin("C", rank, 0);
      w.ts(static_cast<Tick>(k) * window);
      w.string("name", "stream utilisation %");
      w.raw(",\"args\":{");
      for (int tid = 0; tid < kStreamCount; ++tid) {
        fmt::format_to(std::back_inserter(out), "{}\"{}\":{}", tid == 0 ? "" : ",",
                       format_as(static_cast<Stream>(tid)),
                       busy[k][static_cast<size_t>(tid)] * 100 / window);
      }
      w.raw("}");
      w.end();
    }
  }
  out.append(std::string_view("\n]}\n"));
  return fmt::to_string(out);
}

}  // namespace zfetch::sim
