// Perftest: TraceWriter events/s to /dev/null, allocations per event, and an fmt::format_to
// writer of the same lines as the baseline it was measured against.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <new>
#include <string>

#include "tests/perf/perf_events.h"
#include "tests/perf/perf_util.h"
#include "trace/names.h"
#include "trace/writer.h"

namespace {

// Counts every allocation of the process so that "nothing per event" is measured, not assumed.
std::atomic<uint64_t> g_allocations{0};

// The same bytes as TraceWriter, formatted with one fmt::format_to call per field group.
void write_with_fmt(const zfetch::trace::Event& e, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 R"({{"seq":{},"t_ns":{},"rank":{},"engine":{},"step":{},"micro_step":{},)"
                 R"("phase":"{}","kind":"{}")",
                 e.seq, e.t_ns, e.rank, e.engine, e.step, e.micro_step, format_as(e.phase),
                 format_as(e.kind));
  if (e.trace_step >= 0) {
    fmt::format_to(it, R"(,"trace_step":{})", e.trace_step);
  }
  if (e.module_id >= 0) {
    fmt::format_to(it, R"(,"module_id":{},"module":"{}")", e.module_id, e.module);
  }
  if (e.param_id >= 0) {
    fmt::format_to(it,
                   R"(,"param_id":{},"param":"{}","status":"{}","numel":{},"bytes":{},)"
                   R"("group":{})",
                   e.param_id, e.param, format_as(e.status), e.numel, e.bytes, e.group);
  }
  fmt::format_to(it, "}}\n");
}

}  // namespace

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) {
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

int main(int argc, char** argv) {
  using zfetch::perf::report;
  const uint64_t total = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 50'000'000;
  zfetch::perf::EventNames names;
  // A window of distinct events replayed with increasing seq, so memory stays small.
  std::vector<zfetch::trace::Event> window = zfetch::perf::make_events(6 * 48 * 16, names);
  std::FILE* out = std::fopen("/dev/null", "wb");
  if (out == nullptr) {
    std::perror("/dev/null");
    return 1;
  }
  uint64_t bytes = 0;
  double writer_seconds = 0;  // CPU time
  double wall_seconds = 0;
  uint64_t allocations = 0;
  {
    zfetch::trace::TraceWriter writer(out, {1, "bench", 2, "resident-skip"});
    const double cpu_start = zfetch::perf::thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    const uint64_t before = g_allocations.load();
    size_t index = 0;  // wraps without a division, so the loop measures the writer
    for (uint64_t i = 0; i < total; ++i) {
      zfetch::trace::Event& e = window[index];
      index = index + 1 == window.size() ? 0 : index + 1;
      e.seq = i;
      writer.on_event(e);
    }
    writer.flush();
    allocations = g_allocations.load() - before;
    wall_seconds = zfetch::perf::seconds_since(start);
    writer_seconds = zfetch::perf::thread_cpu_seconds() - cpu_start;
    bytes = writer.bytes_written();
  }
  const double events = static_cast<double>(total);
  report("trace_writer", "events/s", events / writer_seconds, "ev/s");
  report("trace_writer", "throughput", static_cast<double>(bytes) / writer_seconds / 1e6, "MB/s");
  report("trace_writer", "ns/event", writer_seconds * 1e9 / events, "ns");
  report("trace_writer", "events/s (wall clock)", events / wall_seconds, "ev/s");
  report("trace_writer", "allocations", static_cast<double>(allocations), "total");

  // Baseline: fmt::format_to per field group, same buffering (a tenth of the events).
  const uint64_t baseline_total = total / 10;
  fmt::memory_buffer buffer;
  const double baseline_start = zfetch::perf::thread_cpu_seconds();
  for (uint64_t i = 0; i < baseline_total; ++i) {
    zfetch::trace::Event& e = window[i % window.size()];
    e.seq = i;
    write_with_fmt(e, buffer);
    if (buffer.size() >= (1 << 16)) {
      std::fwrite(buffer.data(), 1, buffer.size(), out);
      buffer.clear();
    }
  }
  std::fwrite(buffer.data(), 1, buffer.size(), out);
  const double baseline_seconds = zfetch::perf::thread_cpu_seconds() - baseline_start;
  report("trace_writer", "fmt::format_to baseline",
         static_cast<double>(baseline_total) / baseline_seconds, "ev/s");
  std::fclose(out);
  return 0;
}
