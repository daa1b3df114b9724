// Tests of parse_writer_form, the reader's fast path: it accepts the writer's own lines, and any
// line it accepts is exactly the line the writer would write for the event it read (so the fast
// path can never read a line differently from the general parser, which accepts a superset).
#include "trace/writer_form.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/trace/trace_test_util.h"

namespace zfetch::trace {
namespace {

// The event lines of a written trace (the header dropped), each without its newline.
std::vector<std::string> event_lines(const std::vector<Event>& events) {
  const std::string text = testing::write_trace(testing::sample_header(), events);
  std::vector<std::string> lines;
  size_t start = text.find('\n') + 1;
  while (start < text.size()) {
    const size_t newline = text.find('\n', start);
    lines.push_back(text.substr(start, newline - start));
    start = newline + 1;
  }
  return lines;
}

// Runs the fast path on `line` as the reader's buffer holds it: newline, then padding. The
// event's names point into `buffer`, which must outlive every use of the event.
bool parse(const std::string& line, std::string& buffer, Event& e) {
  buffer = line + '\n' + std::string(kWriterFormPadding, 'x');
  return parse_writer_form(buffer.data(), e) == buffer.data() + line.size();
}

// Whether a written line is in the part of the writer's form the fast path takes: no escape, no
// non-ASCII byte (its UTF-8 is checked by the general parser), no
// negative number, no number of more than 18 digits (those are the general parser's).
bool in_fast_form(const std::string& line) {
  size_t digits = 0;
  for (char c : line) {
    if (c == '\\' || c == '-' || static_cast<unsigned char>(c) >= 0x80) {
      return false;
    }
    digits = c >= '0' && c <= '9' ? digits + 1 : 0;
    if (digits > 18) {
      return false;
    }
  }
  return true;
}

// The writer's line for `e`, without its newline.
std::string written(const Event& e) {
  return event_lines({e}).front();
}

TEST_CASE(
    "writer form: the writer's lines take the fast path unless escaped, non-ASCII or extreme") {
  size_t fast = 0;
  const std::vector<Event> events = testing::sample_events();
  const std::vector<std::string> lines = event_lines(events);
  REQUIRE(lines.size() == events.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    Event e;
    std::string buffer;
    const bool fast_form = in_fast_form(lines[i]);
    CHECK_MESSAGE(parse(lines[i], buffer, e) == fast_form, lines[i]);
    if (fast_form) {
      ++fast;
      CHECK(testing::OwnedEvent(e) == testing::OwnedEvent(events[i]));
    }
  }
  CHECK(fast > events.size() / 2);
}

TEST_CASE("writer form: a line it accepts is the writer's line for what it read") {
  // Every single-byte change of every sample line: replaced by one of a few telling bytes,
  // or deleted. Most are refused; those accepted must round-trip byte for byte. One event takes
  // every parse, as in the reader: what the previous line left in it is only a guess.
  const std::string replacements = std::string("0 9-\"\\,:{}a\t") + '\0';
  size_t accepted = 0;
  size_t refused = 0;
  Event e;
  for (const std::string& line : event_lines(testing::sample_events())) {
    for (size_t at = 0; at < line.size(); ++at) {
      std::vector<std::string> variants;
      variants.push_back(line.substr(0, at) + line.substr(at + 1));
      for (char c : replacements) {
        std::string changed = line;
        changed[at] = c;
        variants.push_back(changed);
      }
      for (const std::string& variant : variants) {
        std::string buffer;
        if (parse(variant, buffer, e)) {
          ++accepted;
          CHECK_MESSAGE(written(e) == variant, variant);
        } else {
          ++refused;
        }
      }
    }
  }
  CHECK(accepted > 0);
  CHECK(refused > accepted);
}

TEST_CASE("writer form: a phase or status unlike the previous line's is read as itself") {
  // The parser first tries the name the event still holds; every change must be seen, a
  // name that merely starts with the previous one included.
  const Phase phases[] = {Phase::Fwd,       Phase::Fwd,        Phase::Recompute, Phase::Fwd,
                          Phase::Optimizer, Phase::Checkpoint, Phase::None,      Phase::Bwd};
  const Status statuses[] = {Status::Inflight, Status::Available,    Status::Available,
                             Status::None,     Status::NotAvailable, Status::Inflight,
                             Status::Inflight, Status::None};
  Event e;
  for (size_t i = 0; i < std::size(phases); ++i) {
    Event want = testing::every_field_event();
    want.phase = phases[i];
    want.status = statuses[i];
    std::string buffer;
    REQUIRE(parse(written(want), buffer, e));
    CHECK(e.phase == phases[i]);
    CHECK(e.status == statuses[i]);
  }
}

TEST_CASE("writer form: forms the writer never writes go to the general parser") {
  Event e;
  std::string buffer;
  const std::string base =
      R"({"seq":1,"t_ns":2,"rank":0,"engine":0,"step":0,"micro_step":0,"phase":"fwd","kind":"fetch"})";
  REQUIRE(parse(base, buffer, e));
  CHECK(e.kind == EventKind::Fetch);
  CHECK(e.trace_step == -1);
  CHECK(e.module_id == -1);
  CHECK_FALSE(parse(R"({"seq":01,)" + base.substr(9), buffer, e));                   // leading zero
  CHECK_FALSE(parse(R"({"seq":1234567890123456789,)" + base.substr(9), buffer, e));  // 19 digits
  CHECK_FALSE(parse(R"({ "seq":1,)" + base.substr(9), buffer, e));                   // whitespace
  CHECK_FALSE(parse(base.substr(0, base.size() - 1) + R"(,"rank":1})", buffer, e));  // duplicate
  CHECK_FALSE(parse(base + " ", buffer, e));
  std::string unknown_kind = base;
  unknown_kind.replace(unknown_kind.find("fetch"), 5, "fetcx");
  CHECK_FALSE(parse(unknown_kind, buffer, e));
}

}  // namespace
}  // namespace zfetch::trace
