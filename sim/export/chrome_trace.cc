// Chrome trace event JSON writer for the timeline's recording (see chrome_trace.h).
#include "sim/export/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "sim/export/slice_names.h"
#include "sim/timeline/timeline_json.h"
#include "trace/names.h"

namespace zfetch::sim {

namespace {

using detail::append_json_string;
using detail::append_us;

// Appends the document's text to `out`; with a `file`, writes it out a block at a time, so the
// text is never held whole.
class Writer {
 public:
  Writer(fmt::memory_buffer& out, std::FILE* file) : out_(out), file_(file) {}

  // Starts one event object with the fields every phase type has.
  void begin(std::string_view ph, int32_t pid, int tid) {
    if (file_ != nullptr && out_.size() >= kBlockBytes) {
      flush();
    }
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
  fmt::memory_buffer& buffer() { return out_; }
  // Writes what is buffered to the file (its errors show in ferror).
  void flush() {
    if (file_ != nullptr) {
      std::fwrite(out_.data(), 1, out_.size(), file_);
      out_.clear();
    }
  }

 private:
  static constexpr size_t kBlockBytes = size_t{1} << 20;
  fmt::memory_buffer& out_;
  std::FILE* file_;
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
    return fmt::format("trace invalidated at '{}'", module_display_name(scenario, l.module));
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

bool named_by_module(const Slice& s) {
  return s.kind == Slice::Kind::Compute || s.kind == Slice::Kind::ReduceScatter ||
         s.params_count == 0;
}

// A slice's label before the shared prefix is stripped: its module, or its first param.
std::string_view slice_label(const Slice& s, const model::Scenario& scenario,
                             model::ParamIndex first) {
  return named_by_module(s) ? module_display_name(scenario, s.module)
                            : param_display_name(scenario, first);
}

FlowEnds flow_ends(const Slice& from, const Slice& to) {
  return {from.rank, from.stream, from.start_ns + from.dur_ns / 2, to.rank, to.stream, to.start_ns};
}

// ---- the sections, in the order the document lists them ----

void write_track_names(Writer& w, const std::vector<int32_t>& ranks) {
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
}

void write_slice(Writer& w, const Slice& s, std::span<const model::ParamIndex> params,
                 const model::Scenario& scenario, std::string_view prefix) {
  w.begin("X", s.rank, static_cast<int>(s.stream));
  w.ts(s.start_ns);
  w.key("dur");
  append_us(w.buffer(), s.dur_ns);
  const model::ParamIndex first = params.empty() ? model::kNone : params[0];
  const std::string_view label = strip(slice_label(s, scenario, first), prefix);
  w.string("name", named_by_module(s) || s.params_count == 1
                       ? std::string(label)
                       : fmt::format("{} +{} more", label, s.params_count - 1));
  w.string("cat", slice_kind_name(s.kind));
  w.raw(",\"args\":{");
  w.raw(fmt::format("\"step\":{}", s.step));
  w.string("phase", trace::format_as(s.phase));
  w.string("module", module_display_name(scenario, s.module));
  if (s.kind != Slice::Kind::Compute) {
    w.number("bytes", s.bytes);
  }
  if (!params.empty()) {
    w.key("params");
    w.raw("[");
    for (size_t i = 0; i < params.size(); ++i) {
      if (i > 0) {
        w.raw(",");
      }
      append_json_string(w.buffer(), param_display_name(scenario, params[i]));
    }
    w.raw("]");
  }
  w.raw("}");
  w.end();
}

// A flow's "s" sits mid-slice in the gather and its "f" at the start of the compute slice
// ("bp":"e": bind to the enclosing slice), so each end binds to exactly one slice even when
// slices touch.
void write_flow(Writer& w, const FlowEnds& f, uint64_t id) {
  w.begin("s", f.from_rank, static_cast<int>(f.from_stream));
  w.ts(f.from_ns);
  w.string("name", "wait");
  w.string("cat", "wait");
  w.number("id", id);
  w.end();
  w.begin("f", f.to_rank, static_cast<int>(f.to_stream));
  w.ts(f.to_ns);
  w.string("name", "wait");
  w.string("cat", "wait");
  w.number("id", id);
  w.string("bp", "e");
  w.end();
}

void write_landmark(Writer& w, const Landmark& l, const model::Scenario& scenario,
                    const ChromeTraceNotes& notes) {
  const bool point = l.kind != Landmark::Kind::Step && l.kind != Landmark::Kind::MicroStep &&
                     l.kind != Landmark::Kind::Pass && l.kind != Landmark::Kind::Phase;
  w.begin(point ? "i" : "X", l.rank, landmark_track(l.kind));
  w.ts(l.start_ns);
  if (point) {
    // A failure marks every track ("g"); the other points their rank ("p").
    w.string("s", l.kind == Landmark::Kind::Failure ? "g" : "p");
  } else {
    w.key("dur");
    append_us(w.buffer(), l.end_ns - l.start_ns);
  }
  w.string("name", landmark_name(l, scenario, notes));
  w.string("cat", "landmark");
  w.raw(",\"args\":{");
  w.raw(fmt::format("\"step\":{},\"micro_step\":{},\"engine\":{},\"pass\":{}", l.step, l.micro_step,
                    l.engine, l.pass));
  w.string("phase", trace::format_as(l.phase));
  if (l.module != model::kNone) {
    w.string("module", module_display_name(scenario, l.module));
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

void write_bytes_counter(Writer& w, int32_t rank, Tick t, std::string_view name, int64_t bytes) {
  w.begin("C", rank, 0);
  w.ts(t);
  w.string("name", name);
  w.raw(fmt::format(",\"args\":{{\"bytes\":{}}}", bytes));
  w.end();
}

// In-flight bytes of one rank: a collective counts from its issue to the end of its all-gather;
// one sample per distinct time, after every change at that time. A rank's gathers are issued in
// slice order at non-decreasing times and end no earlier than they are issued, so a change
// earlier than the latest issue is final: only the gathers still in flight are kept.
template <typename Source>
void write_in_flight(Writer& w, Source& source, int32_t rank) {
  using Change = std::pair<Tick, int64_t>;
  std::priority_queue<Change, std::vector<Change>, std::greater<>> pending;
  int64_t in_flight = 0;
  const auto emit_before = [&](Tick limit) {
    while (!pending.empty() && pending.top().first < limit) {
      const Tick t = pending.top().first;
      while (!pending.empty() && pending.top().first == t) {
        in_flight += pending.top().second;
        pending.pop();
      }
      write_bytes_counter(w, rank, t, "in-flight bytes", in_flight);
    }
  };
  source.for_each_slice([&](const Slice& s) {
    if (s.rank != rank || s.stream != Stream::Comm || !is_gather(s.kind)) {
      return;
    }
    emit_before(s.issue_ns);
    pending.emplace(s.issue_ns, s.bytes);
    pending.emplace(s.start_ns + s.dur_ns, -s.bytes);
  });
  emit_before(std::numeric_limits<Tick>::max());
}

// Stream utilisation of one rank: the busy share of each stream in 100 equal windows of the
// rank's run (at least 1 us each); a stream runs one operation at a time, so busy time is a sum.
template <typename Source>
void write_utilisation(Writer& w, Source& source, int32_t rank) {
  Tick end = 0;
  source.for_each_slice(
      [&](const Slice& s) { end = s.rank == rank ? std::max(end, s.start_ns + s.dur_ns) : end; });
  if (end == 0) {
    return;
  }
  const Tick window = std::max<Tick>(1'000, (end + 99) / 100);
  const size_t windows = static_cast<size_t>((end + window - 1) / window);
  std::vector<std::array<Tick, kStreamCount>> busy(windows);
  source.for_each_slice([&](const Slice& s) {
    if (s.rank != rank) {
      return;
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
  });
  for (size_t k = 0; k < windows; ++k) {
    w.begin("C", rank, 0);
    w.ts(static_cast<Tick>(k) * window);
    w.string("name", "stream utilisation %");
    w.raw(",\"args\":{");
    for (int tid = 0; tid < kStreamCount; ++tid) {
      w.raw(fmt::format("{}\"{}\":{}", tid == 0 ? "" : ",", format_as(static_cast<Stream>(tid)),
                        busy[k][static_cast<size_t>(tid)] * 100 / window));
    }
    w.raw("}");
    w.end();
  }
}

// The whole document from a source of the recording's parts, each read in production order (the
// slices several times).
template <typename Source>
void render(Writer& w, Source& source, const ChromeTraceIndex& index,
            const model::Scenario& scenario, const ChromeTraceNotes& notes) {
  w.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  write_track_names(w, index.ranks());
  // Labels without the prefix every name shares; the full names stay in args.
  const std::string prefix = index.label_prefix();
  source.for_each_slice_with_params([&](const Slice& s, std::span<const model::ParamIndex> params) {
    write_slice(w, s, params, scenario, prefix);
  });
  uint64_t id = 1;
  source.for_each_flow([&](const FlowEnds& f) { write_flow(w, f, id++); });
  source.for_each_landmark([&](const Landmark& l) { write_landmark(w, l, scenario, notes); });
  source.for_each_live_bytes([&](const CounterSample& c) {
    write_bytes_counter(w, c.rank, c.t_ns, "live gathered bytes", c.live_bytes);
  });
  for (int32_t rank : index.ranks()) {
    write_in_flight(w, source, rank);
  }
  for (int32_t rank : index.ranks()) {
    write_utilisation(w, source, rank);
  }
  w.raw("\n]}\n");
}

// The parts of an in-memory Recording.
class RecordingSource {
 public:
  explicit RecordingSource(const Recording& recording) : r_(recording) {}
  template <typename F>
  void for_each_slice(F visit) {
    std::for_each(r_.slices.begin(), r_.slices.end(), visit);
  }
  template <typename F>
  void for_each_slice_with_params(F visit) {
    for (const Slice& s : r_.slices) {
      visit(s, params_of(s));
    }
  }
  template <typename F>
  void for_each_flow(F visit) {
    for (const Flow& f : r_.flows) {
      visit(flow_ends(r_.slices[f.from_slice], r_.slices[f.to_slice]));
    }
  }
  template <typename F>
  void for_each_landmark(F visit) {
    std::for_each(r_.landmarks.begin(), r_.landmarks.end(), visit);
  }
  template <typename F>
  void for_each_live_bytes(F visit) {
    std::for_each(r_.live_bytes.begin(), r_.live_bytes.end(), visit);
  }
  [[nodiscard]] std::span<const model::ParamIndex> params_of(const Slice& s) const {
    if (s.params_count == 0) {
      return {};
    }
    return {r_.slice_params.data() + s.params_begin, s.params_count};
  }

 private:
  const Recording& r_;
};

// The parts a ChromeTraceWriter spilled, read back from its temporary files.
class SpillSource {
 public:
  SpillSource(io::SpillLog<Slice>& slices, io::SpillLog<model::ParamIndex>& slice_params,
              io::SpillLog<FlowEnds>& flows, io::SpillLog<Landmark>& landmarks,
              io::SpillLog<CounterSample>& live_bytes)
      : slices_(slices),
        slice_params_(slice_params),
        flows_(flows),
        landmarks_(landmarks),
        live_bytes_(live_bytes) {}
  template <typename F>
  void for_each_slice(F visit) {
    each(slices_, visit);
  }
  template <typename F>
  void for_each_slice_with_params(F visit) {
    auto params = slice_params_.read_all();
    std::vector<model::ParamIndex> mine;
    each(slices_, [&](const Slice& s) {
      mine.resize(s.params_count);
      for (model::ParamIndex& p : mine) {
        if (!params.next(p)) {
          p = model::kNone;  // a failed read; the writer reports it
        }
      }
      visit(s, std::span<const model::ParamIndex>(mine));
    });
  }
  template <typename F>
  void for_each_flow(F visit) {
    each(flows_, visit);
  }
  template <typename F>
  void for_each_landmark(F visit) {
    each(landmarks_, visit);
  }
  template <typename F>
  void for_each_live_bytes(F visit) {
    each(live_bytes_, visit);
  }

 private:
  template <typename T, typename F>
  static void each(io::SpillLog<T>& log, F&& visit) {
    auto cursor = log.read_all();
    T record;
    while (cursor.next(record)) {
      visit(record);
    }
  }
  io::SpillLog<Slice>& slices_;
  io::SpillLog<model::ParamIndex>& slice_params_;
  io::SpillLog<FlowEnds>& flows_;
  io::SpillLog<Landmark>& landmarks_;
  io::SpillLog<CounterSample>& live_bytes_;
};

}  // namespace

void ChromeTraceIndex::add_rank(int32_t rank) {
  if (!ranks_.empty() && ranks_.back() == rank) {
    return;
  }
  const auto at = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
  if (at == ranks_.end() || *at != rank) {
    ranks_.insert(at, rank);
  }
}

void ChromeTraceIndex::add_slice(const Slice& slice, const model::Scenario& scenario,
                                 model::ParamIndex first) {
  add_rank(slice.rank);
  const std::string_view label = slice_label(slice, scenario, first);
  if (!any_label_) {
    any_label_ = true;
    common_ = label;
    return;
  }
  size_t n = 0;
  while (n < common_.size() && n < label.size() && common_[n] == label[n]) {
    ++n;
  }
  common_ = common_.substr(0, n);
}

std::string ChromeTraceIndex::label_prefix() const {
  const size_t dot = common_.rfind('.');
  return dot == std::string_view::npos ? "" : std::string(common_.substr(0, dot + 1));
}

std::string chrome_trace_json(const Recording& recording, const model::Scenario& scenario,
                              const ChromeTraceNotes& notes) {
  RecordingSource source(recording);
  ChromeTraceIndex index;
  for (const Slice& s : recording.slices) {
    const std::span<const model::ParamIndex> params = source.params_of(s);
    index.add_slice(s, scenario, params.empty() ? model::kNone : params[0]);
  }
  for (const CounterSample& c : recording.live_bytes) {
    index.add_rank(c.rank);
  }
  for (const Landmark& l : recording.landmarks) {
    index.add_rank(l.rank);
  }
  fmt::memory_buffer out;
  Writer w(out, nullptr);
  render(w, source, index, scenario, notes);
  return fmt::to_string(out);
}

ChromeTraceWriter::ChromeTraceWriter(const model::Scenario& scenario,
                                     const std::string& spill_directory)
    : scenario_(scenario),
      slices_(spill_directory),
      slice_params_(spill_directory),
      flows_(spill_directory),
      landmarks_(spill_directory),
      live_bytes_(spill_directory) {}

void ChromeTraceWriter::on_gather_params(std::span<const model::ParamIndex> params) {
  gather_params_.assign(params.begin(), params.end());  // reuses its capacity
}

void ChromeTraceWriter::on_slice(const Slice& slice) {
  Slice kept = slice;
  if (named_by_module(slice)) {
    kept.params_count = 0;
  }
  kept.params_count =
      static_cast<uint32_t>(std::min<size_t>(kept.params_count, gather_params_.size()));
  kept.params_begin = 0;
  slices_.push_back(kept);
  for (uint32_t i = 0; i < kept.params_count; ++i) {
    slice_params_.push_back(gather_params_[i]);
  }
  index_.add_slice(slice, scenario_, kept.params_count > 0 ? gather_params_[0] : model::kNone);
}

void ChromeTraceWriter::on_flow(uint64_t /*from_index*/, const Slice& from, uint64_t /*to_index*/,
                                const Slice& to) {
  flows_.push_back(flow_ends(from, to));
}

void ChromeTraceWriter::on_live_bytes(const CounterSample& sample) {
  live_bytes_.push_back(sample);
  index_.add_rank(sample.rank);
}

void ChromeTraceWriter::on_landmark(const Landmark& landmark) {
  landmarks_.push_back(landmark);
  index_.add_rank(landmark.rank);
}

std::string ChromeTraceWriter::error() const {
  for (const std::string* e : {&slices_.error(), &slice_params_.error(), &flows_.error(),
                               &landmarks_.error(), &live_bytes_.error()}) {
    if (!e->empty()) {
      return *e;
    }
  }
  return "";
}

bool ChromeTraceWriter::write(std::FILE* out, const ChromeTraceNotes& notes) {
  SpillSource source(slices_, slice_params_, flows_, landmarks_, live_bytes_);
  fmt::memory_buffer buffer;
  Writer w(buffer, out);
  render(w, source, index_, scenario_, notes);
  w.flush();
  return error().empty();
}

}  // namespace zfetch::sim
