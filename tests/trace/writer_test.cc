// Tests of TraceWriter: exact bytes, key order, escaping, determinism and write errors.
#include "trace/writer.h"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/trace/trace_test_util.h"

namespace zfetch::trace {
namespace {
// The sample events `rounds` times over, each round's seq 1000 above the last's.
std::vector<Event> repeated_sample_events(int rounds) {
  std::vector<Event> events;
  for (int round = 0; round < rounds; ++round) {
    for (Event e : testing::sample_events()) {
      e.seq += static_cast<uint64_t>(round) * 1000;
      events.push_back(e);
    }
  }
  return events;
}
}  // namespace

TEST_SUITE("trace") {
  using testing::sample_header;
  using testing::write_trace;

  TEST_CASE("writer: header line and a minimal event") {
    Event e;
    e.seq = 0;
    e.kind = EventKind::EngineInit;
    CHECK(write_trace(sample_header(), {e}) ==
          "{\"format\":\"zfetch-trace\",\"version\":1,\"scenario\":\"resident-adapter-resume\","
          "\"world_size\":2,\"discovery\":\"resident-skip\"}\n"
          "{\"seq\":0,\"t_ns\":0,\"rank\":0,\"engine\":0,\"step\":0,\"micro_step\":0,"
          "\"phase\":\"none\",\"kind\":\"engine_init\"}\n");
  }

  TEST_CASE("writer: every optional field, in the fixed key order") {
    const Event e = testing::every_field_event();
    const std::string text = write_trace(sample_header(), {e});
    CHECK(text.substr(text.find('\n') + 1) ==
          "{\"seq\":7,\"t_ns\":1500,\"rank\":1,\"engine\":1,\"step\":0,\"micro_step\":1,"
          "\"phase\":\"recompute\",\"kind\":\"gather\",\"trace_step\":6,\"module_id\":5,"
          "\"module\":\"adapter\",\"param_id\":3,\"param\":\"adapter.adapter_A.weight\","
          "\"status\":\"IF\",\"numel\":16,\"bytes\":64,\"group\":2}\n");
  }

  TEST_CASE(
      "writer: the root module (\"\", named_modules()' name) is `<root>`; names are escaped") {
    Event e;
    e.kind = EventKind::ModulePre;
    e.module_id = 0;
    e.module = "";
    e.param_id = 1;
    e.param = "a\"b\\c\n\x01";
    const std::string text = write_trace(sample_header(), {e});
    CHECK(text.substr(text.find('\n') + 1) ==
          "{\"seq\":0,\"t_ns\":0,\"rank\":0,\"engine\":0,\"step\":0,\"micro_step\":0,"
          "\"phase\":\"none\",\"kind\":\"module_pre\",\"module_id\":0,\"module\":\"<root>\","
          "\"param_id\":1,\"param\":\"a\\\"b\\\\c\\n\\u0001\"}\n");
  }

  TEST_CASE("writer: extreme integers") {
    Event e;
    e.t_ns = INT64_MIN;
    e.engine = INT32_MIN;
    e.bytes = INT64_MAX;
    const std::string text = write_trace(sample_header(), {e});
    CHECK(text.find("\"t_ns\":-9223372036854775808,") != std::string::npos);
    CHECK(text.find("\"engine\":-2147483648,") != std::string::npos);
    CHECK(text.find("\"bytes\":9223372036854775807}") != std::string::npos);
  }

  TEST_CASE("writer: two writes of the same events are byte-identical") {
    const std::vector<Event> events = repeated_sample_events(3000);  // several chunks' worth
    const std::string first = write_trace(sample_header(), events);
    const std::string second = write_trace(sample_header(), events);
    CHECK(first.size() > 4 * TraceWriter::kChunkBytes);
    CHECK(first == second);
  }

  TEST_CASE("writer: a regular file gets the bytes a memory stream gets, chunk by chunk") {
    // A regular file is written unbuffered in whole chunks, with what is left of each line
    // carried into the next chunk; a name longer than two chunks makes one line span three.
    std::vector<Event> events = repeated_sample_events(3000);
    const std::string long_name(2 * TraceWriter::kChunkBytes + 7, 'm');
    events[events.size() / 2].module = long_name;
    const std::string expected = write_trace(sample_header(), events);
    REQUIRE(expected.size() > 4 * TraceWriter::kChunkBytes);
    const testing::TempFile file("");
    std::FILE* out = std::fopen(file.path().c_str(), "wb");
    REQUIRE(out != nullptr);
    uint64_t bytes_written = 0;
    {
      TraceWriter writer(out, sample_header());
      for (const Event& e : events) {
        writer.on_event(e);
      }
      CHECK(writer.flush());
      bytes_written = writer.bytes_written();
    }
    std::fclose(out);
    std::ifstream in(file.path(), std::ios::binary);
    const std::string written((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    CHECK(bytes_written == expected.size());
    CHECK(written.size() == expected.size());
    CHECK(written == expected);
  }

  TEST_CASE("writer: a caller's FILE keeps its buffering and what it wrote before and after") {
    // The caller wrote to the stream first and sets its own buffering: the trace follows what
    // it wrote, and what it writes afterwards stays in its buffer until it flushes.
    const std::vector<Event> events = repeated_sample_events(10000);
    const std::string trace = write_trace(sample_header(), events);
    REQUIRE(trace.size() > 2 * TraceWriter::kChunkBytes);
    const testing::TempFile file("");
    std::FILE* out = std::fopen(file.path().c_str(), "wb");
    REQUIRE(out != nullptr);
    std::vector<char> caller_buffer(1 << 16);
    REQUIRE(std::setvbuf(out, caller_buffer.data(), _IOFBF, caller_buffer.size()) == 0);
    std::fputs("before\n", out);
    {
      TraceWriter writer(out, sample_header());
      for (const Event& e : events) {
        writer.on_event(e);
      }
      CHECK(writer.flush());
    }
    std::fputs("after\n", out);
    struct stat info {};
    REQUIRE(::stat(file.path().c_str(), &info) == 0);
    CHECK(static_cast<size_t>(info.st_size) == std::string("before\n").size() + trace.size());
    REQUIRE(std::fclose(out) == 0);
    std::ifstream in(file.path(), std::ios::binary);
    const std::string written((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    CHECK(written == "before\n" + trace + "after\n");
  }

  TEST_CASE("writer: a failed write to a regular file is reported, with its errno") {
    // A file size limit below one chunk: the write past it fails with EFBIG (SIGXFSZ ignored).
    rlimit before{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
    constexpr rlim_t kLimit = TraceWriter::kChunkBytes / 2;
    if (before.rlim_max != RLIM_INFINITY && before.rlim_max < kLimit) {
      return;  // a lower hard limit than this test sets
    }
    const testing::TempFile file("");
    std::FILE* out = std::fopen(file.path().c_str(), "wb");
    REQUIRE(out != nullptr);
    const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = before;
    limited.rlim_cur = kLimit;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
    bool flushed = true;
    int error_number = 0;
    {
      TraceWriter writer(out, sample_header());
      Event e;
      e.module_id = 1;
      const std::string name(TraceWriter::kChunkBytes, 'x');
      e.module = name;
      writer.on_event(e);
      flushed = writer.flush();
      error_number = writer.error_number();
    }
    ::setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, previous_handler);
    std::fclose(out);
    CHECK_FALSE(flushed);
    CHECK(error_number == EFBIG);
  }

  TEST_CASE("writer: a very long name grows the buffer and is written whole") {
    const std::string name(3 * TraceWriter::kChunkBytes, 'x');
    Event e;
    e.module_id = 1;
    e.module = name;
    const std::string text = write_trace(sample_header(), {e, e});
    CHECK(text.find(name) != std::string::npos);
    CHECK(text.size() > 2 * name.size());
  }

  TEST_CASE("writer: a failed write is reported by flush and ok") {
    std::FILE* out = std::fopen("/dev/full", "w");
    if (out == nullptr) {
      return;  // no /dev/full on this system
    }
    {
      TraceWriter writer(out, sample_header());
      writer.on_event(Event{});
      CHECK_FALSE(writer.flush());
      CHECK_FALSE(writer.ok());
      CHECK(writer.error_number() == ENOSPC);
    }
    std::fclose(out);
  }

}  // TEST_SUITE
}  // namespace zfetch::trace
