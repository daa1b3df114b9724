// Perftest: TraceReader events/s on a trace file written by TraceWriter, and its peak RSS
// (the reader streams, so RSS must not grow with the file). The file is mapped, as zfetch reads
// a trace file; with `stream` as third argument it is read through an istream instead, as
// zfetch reads a pipe. A fourth argument reads the file that many times and reports the
// fastest read (the file is written once). With ZFETCH_KEEP set the file is kept; with
// ZFETCH_EXISTING set the file at PATH is read as it is, not written.
//
//   trace_reader_perftest [EVENTS] [PATH] [mapped|stream] [READS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "io/input_file.h"
#include "tests/perf/perf_events.h"
#include "tests/perf/perf_util.h"
#include "trace/reader.h"
#include "trace/writer.h"

int main(int argc, char** argv) {
  using zfetch::perf::report;
  const uint64_t total = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const std::string path = argc > 2 ? argv[2] : "/tmp/zfetch_reader_perftest.jsonl";
  // `stream`: read the file through an istream, the path of a pipe, instead of mapping it.
  const bool through_stream = argc > 3 && std::string_view(argv[3]) == "stream";
  // ZFETCH_EXISTING: read PATH as it is (a trace of EVENTS events another program wrote, or
  // copied, which the page cache may hold differently), instead of writing it first.
  const bool existing = std::getenv("ZFETCH_EXISTING") != nullptr;
  if (!existing) {
    zfetch::perf::EventNames names;
    std::vector<zfetch::trace::Event> window = zfetch::perf::make_events(6 * 48 * 16, names);
    std::FILE* out = std::fopen(path.c_str(), "wb");
    if (out == nullptr) {
      std::perror(path.c_str());
      return 1;
    }
    zfetch::trace::TraceWriter writer(out, {1, "bench", 2, "resident-skip"});
    for (uint64_t i = 0; i < total; ++i) {
      zfetch::trace::Event& e = window[i % window.size()];
      e.seq = i;
      writer.on_event(e);
    }
    if (!writer.flush()) {
      std::fprintf(stderr, "%s: write failed\n", path.c_str());
      return 1;
    }
    std::fclose(out);
  }
  const int reads = argc > 4 ? std::max(1, std::atoi(argv[4])) : 1;
  const double rss_before = zfetch::perf::peak_rss_mib();
  double seconds = 0;  // the fastest read, in CPU time
  double wall_seconds = 0;
  int64_t checksum = 0;  // keeps the loop from being optimized away
  for (int read = 0; read < reads; ++read) {
    zfetch::io::InputStream in(path);
    std::ifstream stream(path, std::ios::binary);
    zfetch::trace::TraceReader reader = through_stream ? zfetch::trace::TraceReader(stream, path)
                                                       : zfetch::trace::TraceReader(in, path);
    const double cpu_start = zfetch::perf::thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    uint64_t count = 0;
    if (reader.read_header()) {
      while (const zfetch::trace::Event* e = reader.next()) {
        checksum += e->t_ns + static_cast<int64_t>(e->module.size());
        ++count;
      }
    }
    const double read_wall_seconds = zfetch::perf::seconds_since(start);
    const double read_seconds = zfetch::perf::thread_cpu_seconds() - cpu_start;
    if (reader.error() || count != total) {
      std::fprintf(stderr, "%s: read %llu of %llu events%s%s\n", path.c_str(),
                   static_cast<unsigned long long>(count), static_cast<unsigned long long>(total),
                   reader.error() ? ": " : "",
                   reader.error() ? reader.error()->message.c_str() : "");
      return 1;
    }
    if (read == 0 || read_seconds < seconds) {
      seconds = read_seconds;
      wall_seconds = read_wall_seconds;
    }
  }
  if (std::getenv("ZFETCH_KEEP") == nullptr && !existing) {
    std::remove(path.c_str());
  }
  const std::string_view name = existing         ? "reader_copied"
                                : through_stream ? "reader_stream"
                                                 : "trace_reader";
  const auto count = static_cast<double>(total);
  report(name, "events/s", count / seconds, "ev/s");
  report(name, "ns/event", seconds * 1e9 / count, "ns");
  report(name, "events/s (wall clock)", count / wall_seconds, "ev/s");
  report(name, "peak RSS growth", zfetch::perf::peak_rss_mib() - rss_before, "MiB");
  return checksum == 0 ? 1 : 0;
}
