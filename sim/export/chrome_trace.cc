// Chrome trace event JSON writer for the timeline's recording (see chrome_trace.h).
#include "sim/export/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "sim/timeline/timeline_json.h"

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

std::string_view phase_name(trace::Phase phase) {
  switch (phase) {
  case trace::Phase::None:
    return "none";
  case trace::Phase::Fwd:
    return "fwd";
  case trace::Phase::Bwd:
    return "bwd";
  case trace::Phase::Recompute:
    return "recompute";
  case trace::Phase::Eval:
    return "eval";
  case trace::Phase::Optimizer:
    return "optimizer";
  case trace::Phase::Checkpoint:
    return "checkpoint";
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

}  // namespace

std::string chrome_trace_json(const Recording& recording, const model::Scenario& scenario) {
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
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (int32_t rank : ranks) {
    w.begin("M", rank, 0);
    w.string("name", "process_name");
    w.raw(fmt::format(",\"args\":{{\"name\":\"rank {}\"}}", rank));
    w.end();
    for (int tid = 0; tid < kStreamCount; ++tid) {
      w.begin("M", rank, tid);
      w.string("name", "thread_name");
      w.raw(fmt::format(",\"args\":{{\"name\":\"{}\"}}", format_as(static_cast<Stream>(tid))));
      w.end();
      w.begin("M", rank, tid);
      w.string("name", "thread_sort_index");
      w.raw(fmt::format(",\"args\":{{\"sort_index\":{}}}", tid));
      w.end();
    }
  }

  for (const Slice& s : recording.slices) {
    w.begin("X", s.rank, static_cast<int>(s.stream));
    w.ts(s.start_ns);
    w.key("dur");
    append_us(out, s.dur_ns);
    if (s.kind == Slice::Kind::Compute || s.kind == Slice::Kind::ReduceScatter ||
        s.params_count == 0) {
      w.string("name", module_name(scenario, s.module));
    } else {
      const std::string_view first = param_name(scenario, recording.slice_params[s.params_begin]);
      w.string("name", s.params_count == 1 ? std::string(first)
                                           : fmt::format("{} +{} more", first, s.params_count - 1));
    }
    w.string("cat", category(s.kind));
    w.raw(",\"args\":{");
    w.raw(fmt::format("\"step\":{}", s.step));
    w.string("phase", phase_name(s.phase));
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

  for (const CounterSample& c : recording.live_bytes) {
    w.begin("C", c.rank, 0);
    w.ts(c.t_ns);
    w.string("name", "live_bytes");
    w.raw(fmt::format(",\"args\":{{\"live_bytes\":{}}}", c.live_bytes));
    w.end();
  }
  out.append(std::string_view("\n]}\n"));
  return fmt::to_string(out);
}

}  // namespace zfetch::sim
