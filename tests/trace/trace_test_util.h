// Helpers for the trace tests: events covering every kind and field, and whole-file reads.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "diag/render.h"
#include "io/input_file.h"
#include "trace/event.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace zfetch::trace::testing {

/// An Event whose names are owned, so that it can outlive the reader's line.
struct OwnedEvent {
  Event event;
  std::string module;
  std::string param;

  explicit OwnedEvent(const Event& e) : event(e), module(e.module), param(e.param) {}
  bool operator==(const OwnedEvent& other) const {
    const Event& a = event;
    const Event& b = other.event;
    return a.seq == b.seq && a.t_ns == b.t_ns && a.rank == b.rank && a.engine == b.engine &&
           a.step == b.step && a.micro_step == b.micro_step && a.phase == b.phase &&
           a.kind == b.kind && a.trace_step == b.trace_step && a.module_id == b.module_id &&
           module == other.module && a.param_id == b.param_id && param == other.param &&
           a.status == b.status && a.numel == b.numel && a.bytes == b.bytes && a.group == b.group;
  }
};

/// An event with every optional field set (a recompute gather on rank 1, engine 1).
inline Event every_field_event() {
  Event e;
  e.seq = 7;
  e.t_ns = 1500;
  e.rank = 1;
  e.engine = 1;
  e.step = 0;
  e.micro_step = 1;
  e.phase = Phase::Recompute;
  e.kind = EventKind::Gather;
  e.trace_step = 6;
  e.module_id = 5;
  e.module = "adapter";
  e.param_id = 3;
  e.param = "adapter.adapter_A.weight";
  e.status = Status::Inflight;
  e.numel = 16;
  e.bytes = 64;
  e.group = 2;
  return e;
}

/// One event of every kind, cycling through phases and statuses and setting each optional
/// field on some of them; names include the root (`<root>`), dots, quotes and a control
/// character. The last event names the root "", as traces did before it was named `<root>`.
inline std::vector<Event> sample_events() {
  static const char* const kModules[] = {"<root>", "adapter", "adapter.adapter_A",
                                         "odd \"name\"\t1"};
  static const char* const kParams[] = {"adapter.base.weight", "adapter.adapter_A.weight", "w\\x\n",
                                        "\xc3\xa9t\xc3\xa9"};
  std::vector<Event> events;
  for (int i = 0; i <= static_cast<int>(EventKind::Compute); ++i) {
    Event e;
    e.seq = static_cast<uint64_t>(i) * 3 + 1;
    e.t_ns = int64_t{1'000'000'007} * i;
    e.rank = i % 2;
    e.engine = i / 20;
    e.step = i / 4;
    e.micro_step = i % 4;
    e.phase = static_cast<Phase>(i % 7);
    e.kind = static_cast<EventKind>(i);
    e.trace_step = i % 3 == 0 ? -1 : i;
    if (i % 2 == 0) {
      e.module_id = i;
      e.module = kModules[(i / 2) % 4];
    }
    if (i % 3 != 1) {
      e.param_id = 100 + i;
      e.param = kParams[i % 4];
    }
    e.status = static_cast<Status>(i % 4);
    e.numel = i % 5 == 0 ? -1 : int64_t{1} << (i + 2);
    e.bytes = i % 5 == 1 ? -1 : int64_t{4} << (i + 2);
    e.group = i % 2 == 1 ? i : -1;
    events.push_back(e);
  }
  Event big;  // extremes of every integer field
  big.seq = 1'000'000'000'000;
  big.t_ns = INT64_MAX;
  big.rank = INT32_MAX;
  big.engine = INT32_MIN;
  big.step = -7;
  big.micro_step = INT32_MAX;
  big.kind = EventKind::Gather;
  big.trace_step = 0;
  big.module_id = 0;
  big.module = "";
  big.param_id = 0;
  big.numel = 0;
  big.bytes = INT64_MAX;
  big.group = 0;
  events.push_back(big);
  return events;
}

inline TraceHeader sample_header() {
  return TraceHeader{1, "resident-adapter-resume", 2, "resident-skip"};
}

/// Writes `events` after `header` through a TraceWriter and returns the file's bytes.
inline std::string write_trace(const TraceHeader& header, const std::vector<Event>& events) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&data, &size);
  {
    TraceWriter writer(out, header);
    for (const Event& e : events) {
      writer.on_event(e);
    }
    writer.flush();
  }
  std::fclose(out);
  std::string text(data, size);
  std::free(data);
  return text;
}

/// Everything a reader produced from `text` read under the name "input".
struct ReadResult {
  bool header_ok = false;
  TraceHeader header;
  std::vector<OwnedEvent> events;
  std::string error;           ///< the first line of the rendered error, empty if none
  std::string rendered_error;  ///< the whole rendered error: message, quoted line, caret, notes
};

/// Everything `reader` produces, header first.
inline ReadResult read_all(TraceReader& reader) {
  ReadResult result;
  result.header_ok = reader.read_header();
  result.header = reader.header();
  while (const Event* e = reader.next()) {
    result.events.emplace_back(*e);
  }
  if (const auto& error = reader.error()) {
    result.rendered_error = diag::render(*error);
    result.error = result.rendered_error.substr(0, result.rendered_error.find('\n'));
  }
  return result;
}

/// A file of the test's own (named after the process, as test binaries run in parallel),
/// removed when this goes.
class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : path_((std::filesystem::temp_directory_path() /
               ("zfetch_trace_test_" + std::to_string(::getpid()) + ".jsonl"))
                  .string()) {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// `text` read from a regular file, which the reader maps instead of streaming.
inline ReadResult read_trace_file(const std::string& text) {
  const TempFile file(text);
  io::InputStream in(file.path());
  TraceReader reader(in, "input");
  return read_all(reader);
}

/// `text` read under the name "input", from a stream and from a file: the two must agree in
/// every event and in the error, caret and notes included.
inline ReadResult read_trace(const std::string& text) {
  std::istringstream in(text);
  TraceReader reader(in, "input");
  ReadResult result = read_all(reader);
  const ReadResult mapped = read_trace_file(text);
  CHECK(mapped.header_ok == result.header_ok);
  CHECK(mapped.header.scenario == result.header.scenario);
  CHECK(mapped.header.world_size == result.header.world_size);
  CHECK(mapped.header.discovery == result.header.discovery);
  CHECK(mapped.events == result.events);
  CHECK(mapped.rendered_error == result.rendered_error);
  return result;
}

}  // namespace zfetch::trace::testing
