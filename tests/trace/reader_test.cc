// Tests of TraceReader: write -> read round trips, tolerance, and every error with its line.
#include "trace/reader.h"

#include <doctest/doctest.h>

#include "tests/trace/trace_test_util.h"

namespace zfetch::trace {
TEST_SUITE("trace") {
  using testing::OwnedEvent;
  using testing::read_trace;
  using testing::sample_events;
  using testing::sample_header;
  using testing::write_trace;

  namespace {

  const std::string kHeader =
      R"({"format":"zfetch-trace","version":1,"scenario":"s","world_size":2,"discovery":"resident-skip"})"
      "\n";

  // A minimal valid event line with sequence number `seq` and `extra` spliced before the '}'.
  std::string event_line(int seq, const std::string& extra = "") {
    return R"({"seq":)" + std::to_string(seq) +
           R"(,"t_ns":0,"rank":0,"engine":0,"step":0,"micro_step":0,"phase":"fwd","kind":"fetch")" +
           extra + "}\n";
  }

  // The error for a file made of the header, one good event, then `bad` (which must fail).
  std::string error_after_one_event(const std::string& bad) {
    const auto result = read_trace(kHeader + event_line(1) + bad);
    CHECK(result.events.size() == 1);
    return result.error;
  }

  }  // namespace

  TEST_CASE("reader: round trip of events covering every kind and field") {
    const std::vector<Event> events = sample_events();
    const auto result = read_trace(write_trace(sample_header(), events));
    CHECK(result.header_ok);
    CHECK(result.error.empty());
    CHECK(result.header.scenario == "resident-adapter-resume");
    CHECK(result.header.world_size == 2);
    CHECK(result.header.discovery == "resident-skip");
    REQUIRE(result.events.size() == events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      CAPTURE(i);
      OwnedEvent expected(events[i]);
      if (events[i].module_id >= 0 && events[i].module.empty()) {
        expected.module = "<root>";  // the root's old name "" is written and read as `<root>`
      }
      CHECK(result.events[i] == expected);
    }
  }

  TEST_CASE("reader: a trace naming the root \"\" (older traces, recorders) reads it as <root>") {
    const std::string old_style = write_trace(sample_header(), {testing::every_field_event()});
    std::string text = old_style;
    const std::string from = "\"module\":\"adapter\"";
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), "\"module\":\"\"");
    const auto result = read_trace(text);
    CHECK(result.error.empty());
    REQUIRE(result.events.size() == 1);
    CHECK(result.events[0].module == "<root>");
    std::vector<Event> again = {result.events[0].event};
    again[0].module = result.events[0].module;
    again[0].param = result.events[0].param;
    const std::string rewritten = write_trace(result.header, again);
    CHECK(rewritten.find("\"module\":\"<root>\"") != std::string::npos);
    CHECK(rewritten.find("\"module\":\"\"") == std::string::npos);
  }

  TEST_CASE("reader: write -> read -> write is byte-identical") {
    const std::string first = write_trace(sample_header(), sample_events());
    const auto result = read_trace(first);
    std::vector<Event> again;
    for (const OwnedEvent& owned : result.events) {
      Event e = owned.event;
      e.module = owned.module;
      e.param = owned.param;
      again.push_back(e);
    }
    CHECK(write_trace(result.header, again) == first);
  }

  TEST_CASE("reader: whitespace, any key order, escapes and CRLF are accepted") {
    const std::string text =
        kHeader +
        " { \"kind\" : \"gather\" , \"phase\":\"bwd\",\"micro_step\":3,\"step\":2,\"engine\":1,"
        "\"rank\":1,\"t_ns\":-5,\"seq\":9, \"param\":\"a\\u00e9\\/\\ud83d\\ude00\",\"param_id\":4,"
        "\"module\":\"\",\"module_id\":0 }\t\r\n";
    const auto result = read_trace(text);
    CHECK(result.error.empty());
    REQUIRE(result.events.size() == 1);
    const Event& e = result.events[0].event;
    CHECK(e.seq == 9);
    CHECK(e.t_ns == -5);
    CHECK(e.kind == EventKind::Gather);
    CHECK(e.phase == Phase::Bwd);
    CHECK(e.step == 2);
    CHECK(e.micro_step == 3);
    CHECK(result.events[0].param == "a\xc3\xa9/\xf0\x9f\x98\x80");
    CHECK(result.events[0].module == "<root>");
    CHECK(e.module_id == 0);
    CHECK(e.trace_step == -1);
    CHECK(e.numel == -1);
  }

  TEST_CASE("reader: a header alone is an empty trace") {
    const auto result = read_trace(kHeader);
    CHECK(result.header_ok);
    CHECK(result.events.empty());
    CHECK(result.error.empty());
  }

  TEST_CASE("reader: a UTF-8 byte order mark before the header is skipped, and only there") {
    const auto result = read_trace("\xEF\xBB\xBF" + kHeader + event_line(1));
    CHECK(result.header_ok);
    CHECK(result.error.empty());
    CHECK(result.events.size() == 1);
    // Anywhere else it is a byte of the line, and the line is not JSON.
    CHECK_FALSE(error_after_one_event("\xEF\xBB\xBF" + event_line(2)).empty());
  }

  TEST_CASE("reader: lines longer than the read chunk") {
    Event e;
    const std::string name(3 << 20, 'm');
    e.module_id = 1;
    e.module = name;
    const auto result = read_trace(write_trace(sample_header(), {e}));
    CHECK(result.error.empty());
    REQUIRE(result.events.size() == 1);
    CHECK(result.events[0].module == name);
  }

  TEST_CASE("reader: a file longer than its map window, with a line longer than the window") {
    // The reader maps a regular file 8 MiB at a time: lines cross the window's end at every
    // offset, and a 9 MiB line makes the window grow (read_trace compares with the stream).
    std::vector<std::string> names;
    for (size_t i = 0; i < 97; ++i) {
      names.push_back("model.layers." + std::string(i, 'x'));
    }
    names.emplace_back(size_t{9} << 20, 'm');
    std::vector<Event> events;
    for (size_t i = 0; i < 60'000; ++i) {
      Event e;
      e.seq = i;
      e.kind = EventKind::Fetch;
      e.module_id = static_cast<int64_t>(i % 97);
      e.module = i == 20'000 ? names.back() : names[i % 97];
      events.push_back(e);
    }
    const auto result = read_trace(write_trace(sample_header(), events));
    CHECK(result.error.empty());
    REQUIRE(result.events.size() == events.size());
    CHECK(result.events[20'000].module.size() == names.back().size());
    CHECK(result.events.back().module == names[59'999 % 97]);
  }

  TEST_CASE("reader: a truncated or empty file reads as its stream does") {
    // read_trace checks that the mapped file and the stream agree, error included.
    CHECK(read_trace(kHeader + event_line(1) + R"({"seq":2)").error ==
          "input:3:9: error: truncated last line");
    CHECK(read_trace("").error == "input:1: error: missing trace header (the file is empty)");
    CHECK(read_trace(kHeader.substr(0, kHeader.size() - 1)).error ==
          "input:1:" + std::to_string(kHeader.size()) + ": error: truncated last line");
  }

  TEST_CASE("reader: header errors") {
    CHECK(read_trace("").error == "input:1: error: missing trace header (the file is empty)");
    CHECK(read_trace(event_line(1)).error ==
          "input:1: error: missing trace header (expected {\"format\":\"zfetch-trace\",...} on "
          "line 1)");
    CHECK(read_trace("# zfetch trace v1\n").error ==
          "input:1:1: error: malformed JSON: expected '{' to start an object, got '#'");
    CHECK(
        read_trace(
            R"({"format":"chrome-trace","version":1,"scenario":"s","world_size":1,"discovery":"x"})"
            "\n")
            .error ==
        "input:1:11: error: unknown trace format 'chrome-trace' (expected 'zfetch-trace')");
    CHECK(
        read_trace(
            R"({"format":"zfetch-trace","version":2,"scenario":"s","world_size":1,"discovery":"x"})"
            "\n")
            .error == "input:1:36: error: unsupported trace version 2 (this build reads 1)");
    CHECK(read_trace(R"({"format":"zfetch-trace","version":1,"scenario":"s","world_size":1})"
                     "\n")
              .error == "input:1:67: error: missing key 'discovery' in the header");
    CHECK(
        read_trace(
            R"({"format":"zfetch-trace","version":"1","scenario":"s","world_size":1,"discovery":"x"})"
            "\n")
            .error == "input:1:36: error: expected integer for 'version', got string");
    CHECK(
        read_trace(
            R"({"format":"zfetch-trace","version":1,"scenario":"s","world_size":0,"discovery":"x"})"
            "\n")
            .error == "input:1:66: error: expected a positive integer for 'world_size', got 0");
    CHECK(
        read_trace(
            R"({"format":"zfetch-trace","version":1,"seed":3,"scenario":"s","world_size":1,"discovery":"x"})"
            "\n")
            .error == "input:1:38: error: unknown key 'seed' in the header");
    CHECK(read_trace(R"({"format":"zfetch-trace","version":1)").error ==
          "input:1:37: error: truncated last line");
    const auto result = read_trace("");
    CHECK_FALSE(result.header_ok);
  }

  TEST_CASE("reader: event errors name the line, after every good event before it") {
    SUBCASE("malformed JSON") {
      CHECK(error_after_one_event("{\"seq\":2 \"t_ns\":0}\n") ==
            "input:3:10: error: malformed JSON: expected ',' or '}', got '\"'");
      CHECK(error_after_one_event("{\"seq\":2,\"module\":\"abc}\n") ==
            "input:3:19: error: malformed JSON: unterminated string");
      CHECK(error_after_one_event(event_line(2, "}")) ==
            "input:3:92: error: malformed JSON: unexpected '}' after the object");
      CHECK(error_after_one_event("{\"seq\":02}\n") ==
            "input:3:8: error: malformed JSON: number with a leading zero");
      CHECK(error_after_one_event("{\"seq\":2,\"param\":\"\\q\"}\n") ==
            "input:3:19: error: malformed JSON: invalid escape '\\q' in a string");
      CHECK(error_after_one_event("{\"seq\":2,\"t_ns\":}\n") ==
            "input:3:17: error: malformed JSON: expected a value, got '}'");
    }
    SUBCASE("unknown names") {
      CHECK(error_after_one_event(event_line(2, ",\"modul\":\"x\"")) ==
            "input:3:92: error: unknown key 'modul'; did you mean 'module'?");
      CHECK(error_after_one_event(event_line(2, ",\"colour\":1")) ==
            "input:3:92: error: unknown key 'colour'");
      CHECK(
          error_after_one_event(
              R"({"seq":2,"t_ns":0,"rank":0,"engine":0,"step":0,"micro_step":0,"phase":"fwd","kind":"fetc"})"
              "\n") == "input:3:84: error: unknown kind 'fetc'; did you mean 'fetch'?");
      CHECK(
          error_after_one_event(
              R"({"seq":2,"t_ns":0,"rank":0,"engine":0,"step":0,"micro_step":0,"phase":"fwd","kind":"teleport"})"
              "\n") == "input:3:84: error: unknown kind 'teleport'");
      CHECK(
          error_after_one_event(
              R"({"seq":2,"t_ns":0,"rank":0,"engine":0,"step":0,"micro_step":0,"phase":"forward","kind":"fetch"})"
              "\n") ==
          "input:3:71: error: unknown phase 'forward'; valid values are: none, fwd, bwd, "
          "recompute, "
          "eval, optimizer, checkpoint");
      CHECK(error_after_one_event(event_line(2, ",\"status\":\"ready\"")) ==
            "input:3:101: error: unknown status 'ready'; valid values are: AV, NA, IF");
      CHECK(error_after_one_event(event_line(2, ",\"status\":\"A\"")) ==
            "input:3:101: error: unknown status 'A'; did you mean 'AV'?");
    }
    SUBCASE("missing, duplicate and paired keys") {
      CHECK(error_after_one_event(
                R"({"seq":2,"t_ns":0,"rank":0,"engine":0,"step":0,"micro_step":0,"phase":"fwd"})"
                "\n") == "input:3:76: error: missing key 'kind'");
      CHECK(error_after_one_event("{\"seq\":2,\"seq\":3}\n") ==
            "input:3:10: error: duplicate key 'seq'");
      CHECK(error_after_one_event(event_line(2, ",\"module_id\":4")) ==
            "input:3:105: error: missing key 'module' (it goes with 'module_id')");
      CHECK(error_after_one_event(event_line(2, ",\"param\":\"w\"")) ==
            "input:3:103: error: missing key 'param_id' (it goes with 'param')");
    }
    SUBCASE("wrong types and ranges") {
      CHECK(error_after_one_event("{\"seq\":2,\"t_ns\":1.5}\n") ==
            "input:3:17: error: expected integer for 't_ns', got float");
      CHECK(error_after_one_event("{\"seq\":2,\"t_ns\":1e3}\n") ==
            "input:3:17: error: expected integer for 't_ns', got float");
      CHECK(error_after_one_event("{\"seq\":2,\"step\":\"0\"}\n") ==
            "input:3:17: error: expected integer for 'step', got string");
      CHECK(error_after_one_event("{\"seq\":2,\"kind\":7}\n") ==
            "input:3:17: error: expected string for 'kind', got integer");
      CHECK(error_after_one_event("{\"seq\":2,\"module\":true}\n") ==
            "input:3:19: error: expected string for 'module', got boolean");
      CHECK(error_after_one_event("{\"seq\":2,\"numel\":null}\n") ==
            "input:3:18: error: expected integer for 'numel', got null");
      CHECK(error_after_one_event("{\"seq\":2,\"numel\":{\"a\":1}}\n") ==
            "input:3:18: error: expected integer for 'numel', got object");
      CHECK(error_after_one_event("{\"seq\":2,\"numel\":[1]}\n") ==
            "input:3:18: error: expected integer for 'numel', got array");
      CHECK(error_after_one_event("{\"seq\":2,\"rank\":4294967296}\n") ==
            "input:3:17: error: integer 4294967296 out of range for 'rank'");
      CHECK(error_after_one_event("{\"seq\":99999999999999999999}\n") ==
            "input:3:8: error: integer 99999999999999999999 out of range for 'seq'");
      CHECK(error_after_one_event(event_line(2, ",\"numel\":-1")) ==
            "input:3:100: error: integer -1 out of range for 'numel'");
    }
    SUBCASE("line structure and ordering") {
      CHECK(error_after_one_event("\n") == "input:3: error: empty line (expected an event object)");
      CHECK(error_after_one_event(event_line(1)) ==
            "input:3:8: error: seq 1 is not greater than the previous seq 1");
      std::string truncated = event_line(2);
      truncated.pop_back();
      CHECK(error_after_one_event(truncated) == "input:3:92: error: truncated last line");
    }
  }

  TEST_CASE("reader: an error quotes its line, with a caret under the value and notes") {
    const auto result = read_trace(kHeader + event_line(4) + event_line(3));
    CHECK(result.rendered_error ==
          "input:3:8: error: seq 3 is not greater than the previous seq 4\n" +
              event_line(3).substr(0, event_line(3).size() - 1) +
              "\n"
              "       ^\n"
              "input:2: note: the previous event, seq 4\n");
    const auto unknown = read_trace(kHeader + event_line(1, ",\"colour\":1"));
    CHECK(unknown.rendered_error.ends_with("\n" + std::string(91, ' ') + "^~~~~~~~\n"));
  }

  TEST_CASE("reader: integers of every length read back exactly") {
    // The fast path reads up to 16 digits 8 at a time; 1 to 19 digits cross each of its cases.
    std::vector<Event> events;
    int64_t power = 1;
    for (int digits = 1; digits <= 19; ++digits) {
      for (const int64_t value : {power, power * 9 + (power - 1)}) {
        Event e;
        e.seq = events.size();
        e.t_ns = value;
        e.numel = value;
        e.bytes = value;
        e.group = value;
        events.push_back(e);
      }
      power = digits < 18 ? power * 10 : power;
    }
    const auto result = read_trace(write_trace(sample_header(), events));
    CHECK(result.error.empty());
    REQUIRE(result.events.size() == events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      CAPTURE(i);
      CHECK(result.events[i].event.t_ns == events[i].t_ns);
      CHECK(result.events[i].event.numel == events[i].numel);
      CHECK(result.events[i].event.group == events[i].group);
    }
  }

  TEST_CASE("reader: lines in another form than the writer's read the same") {
    // The writer's form takes the fast path; spaces, another key order and escapes take the
    // general parser. Both must give the same event.
    const std::string fast = event_line(2, R"(,"module_id":3,"module":"a.b","numel":5)");
    const std::string spaced =
        R"({ "seq": 2, "t_ns": 0, "rank": 0, "engine": 0, "step": 0, "micro_step": 0, )"
        R"("phase": "fwd", "kind": "fetch", "module_id": 3, "module": "a.b", "numel": 5 })"
        "\n";
    const std::string reordered =
        R"({"kind":"fetch","phase":"fwd","numel":5,"module":"a\u002eb","module_id":3,)"
        R"("micro_step":0,"step":0,"engine":0,"rank":0,"t_ns":0,"seq":2})"
        "\n";
    const auto a = read_trace(kHeader + fast);
    const auto b = read_trace(kHeader + spaced);
    const auto c = read_trace(kHeader + reordered);
    REQUIRE(a.events.size() == 1);
    REQUIRE(b.events.size() == 1);
    REQUIRE(c.events.size() == 1);
    CHECK(a.events[0].module == "a.b");
    CHECK(a.events[0].event.numel == 5);
    CHECK(a.events[0] == b.events[0]);
    CHECK(a.events[0] == c.events[0]);
    // A value the fast path does not take (a sign, a leading zero, 19 digits) is still checked.
    CHECK(read_trace(kHeader + event_line(2, R"(,"numel":-5)")).error ==
          "input:2:100: error: integer -5 out of range for 'numel'");
    CHECK(read_trace(kHeader + event_line(2, R"(,"numel":05)")).error ==
          "input:2:100: error: malformed JSON: number with a leading zero");
    CHECK(read_trace(kHeader + event_line(2, R"(,"numel":1234567890123456789)"))
              .events[0]
              .event.numel == 1234567890123456789);
  }

  TEST_CASE("reader: streaming stops at the first error and stays stopped") {
    std::istringstream in(kHeader + event_line(1) + event_line(2) + "oops\n" + event_line(3));
    TraceReader reader(in, "input");
    REQUIRE(reader.read_header());
    REQUIRE(reader.next() != nullptr);
    CHECK(reader.line() == 2);
    REQUIRE(reader.next() != nullptr);
    CHECK(reader.next() == nullptr);
    REQUIRE(reader.error().has_value());
    CHECK(reader.error()->loc.line == 4);
    CHECK(reader.next() == nullptr);
    CHECK(reader.line() == 4);
  }

  TEST_CASE("reader: next() reads the header itself when read_header was not called") {
    std::istringstream in(kHeader + event_line(5));
    TraceReader reader(in, "input");
    const Event* e = reader.next();
    REQUIRE(e != nullptr);
    CHECK(e->seq == 5);
    CHECK(reader.header().world_size == 2);
  }

}  // TEST_SUITE
}  // namespace zfetch::trace
