// TraceReader: maps a regular file a window at a time (io/mapped_window.h) or reads any other
// stream in large chunks, splits lines with memchr, and parses each line where it lies, so
// memory stays constant and names are views into the current line. Lines in the writer's own
// form take parse_writer_form; any other line (and every error) the general parser below,
// which locates what is wrong, on a copy of the line (it unescapes strings in place).
#include "trace/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "base/spellcheck.h"
#include "base/text_bytes.h"
#include "io/input_file.h"
#include "io/mapped_window.h"
#include "trace/flat_json.h"
#include "trace/json_escape.h"
#include "trace/names.h"
#include "trace/writer_form.h"

namespace zfetch::trace {
namespace {

// What a stream is read in (fits in the core's cache with what parsing it touches), and what a
// mapped file is mapped in (larger: each map costs a system call and a TLB flush).
constexpr size_t kReadChunk = size_t{256} << 10;
// What a stream's first read asks for; each refill doubles it up to kReadChunk, so that a short
// stream (a small trace, a fuzz input) does not pay for a whole chunk's zeroed pages.
constexpr size_t kFirstRead = size_t{4} << 10;
constexpr size_t kMapWindow = size_t{8} << 20;

// Keys of an event line, in the writer's order; the bit of key i in `seen` is 1 << i.
enum Key : uint8_t {
  kSeq,
  kTNs,
  kRank,
  kEngine,
  kStep,
  kMicroStep,
  kPhase,
  kKind,
  kTraceStep,
  kModuleId,
  kModule,
  kParamId,
  kParam,
  kStatus,
  kNumel,
  kBytes,
  kGroup,
  kKeyCount,
};
constexpr std::array<std::string_view, kKeyCount> kKeyNames = {
    "seq",   "t_ns",   "rank",       "engine",    "step",   "micro_step",
    "phase", "kind",   "trace_step", "module_id", "module", "param_id",
    "param", "status", "numel",      "bytes",     "group",
};
constexpr uint32_t kRequiredKeys = (1U << (kKind + 1)) - 1;  // seq .. kind

enum HeaderKey : uint8_t { kFormat, kVersion, kScenario, kWorldSize, kDiscovery, kHeaderKeyCount };
constexpr std::array<std::string_view, kHeaderKeyCount> kHeaderKeyNames = {
    "format", "version", "scenario", "world_size", "discovery",
};

template <size_t N>
int find_key(const std::array<std::string_view, N>& names, std::string_view key) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == key) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::string unknown_name_message(std::string_view what, std::string_view name,
                                 std::span<const std::string_view> valid, bool list_valid) {
  std::string message = fmt::format("unknown {} '{}'", what, name);
  if (auto suggestion = base::closest_word(name, valid)) {
    message += fmt::format("; did you mean '{}'?", *suggestion);
  } else if (list_valid) {
    message += fmt::format("; valid values are: {}", fmt::join(valid, ", "));
  }
  return message;
}

}  // namespace

struct TraceReader::State {
  std::istream* in = nullptr;                // the stream read, or
  std::unique_ptr<io::MappedWindow> window;  // the regular file mapped
  std::string file;
  // Stream: bytes read and not yet parsed, followed by kWriterFormPadding bytes that reads
  // never fill (so that the fast path may load past a line's newline). Mapped file: the last
  // line, copied here when fewer than kWriterFormPadding bytes of the file follow it.
  std::vector<char> buffer;
  size_t begin = 0;  // start of the unread bytes in `buffer` (stream) or the window (mapped)
  size_t end = 0;    // end of the bytes read so far (stream)
  // Mapped file: one past the window's last newline that kWriterFormPadding bytes follow; a
  // line that starts before it can be parsed in place before its end is known. 0 for a stream,
  // and once the reader has failed.
  size_t parse_in_place_end = 0;
  bool eof = false;
  uint64_t line = 0;
  bool header_read = false;
  bool failed = false;
  bool have_seq = false;
  uint64_t last_seq = 0;
  uint64_t last_seq_line = 0;
  TraceHeader header;
  Event event;
  std::optional<diag::Diagnostic> error;
  // The line being parsed as it was read: parsing unescapes strings in place, and an error
  // quotes the line as the user wrote it.
  std::string original_line;
  // The general parser's copy of the line, which it unescapes in place.
  std::string scratch;

  State(std::istream& stream, std::string name)
      : in(&stream), file(std::move(name)), buffer(kFirstRead + kWriterFormPadding) {}
  State(io::InputStream& stream, std::string name) : file(std::move(name)) {
    if (stream.regular_file_descriptor() >= 0) {
      window = std::make_unique<io::MappedWindow>(stream.regular_file_descriptor());
    } else {
      in = &stream.stream();
      buffer.resize(kFirstRead + kWriterFormPadding);
    }
  }

  // An error at column `col` (0: the whole line) of the current line, `length` wide.
  bool fail(std::string message, uint32_t col = 0, uint32_t length = 1) {
    diag::Diagnostic d;
    d.file = file;
    d.loc = {static_cast<uint32_t>(std::min<uint64_t>(line, UINT32_MAX)), col};
    d.length = length;
    d.message = std::move(message);
    // A very long line is not quoted: the caret would be lost in it.
    constexpr size_t kMaxQuoted = 512;
    if (original_line.size() <= kMaxQuoted) {
      d.source_line = original_line;
    } else {
      d.loc.col = col <= kMaxQuoted ? col : 0;
    }
    error = std::move(d);
    failed = true;
    parse_in_place_end = 0;
    return false;
  }

  // Remembers the line about to be parsed, for the error's quote.
  void keep_line(const char* first, const char* last) {
    original_line.assign(first, static_cast<size_t>(last - first));
  }

  // Sets [first, last) to the next line without its newline, followed by kWriterFormPadding
  // readable bytes; false at the end of the input (error unset) or on a truncated last line or
  // a failure to read (error set).
  bool next_line(const char*& first, const char*& last) {
    return window ? next_mapped_line(first, last) : next_read_line(first, last);
  }

  bool next_read_line(const char*& first, const char*& last) {
    while (true) {
      void* newline = std::memchr(buffer.data() + begin, '\n', end - begin);
      if (newline != nullptr) {
        first = buffer.data() + begin;
        last = static_cast<char*>(newline);
        if (static_cast<size_t>(last - first) > kMaxTraceLineBytes) {
          return fail_line_too_long();
        }
        begin = static_cast<size_t>(last - buffer.data()) + 1;
        ++line;
        return true;
      }
      if (eof) {
        return begin != end && fail_truncated(buffer.data() + begin, buffer.data() + end);
      }
      // Keep the partial line; grow up to kReadChunk, and past it only when a single line fills
      // the whole buffer.
      std::memmove(buffer.data(), buffer.data() + begin, end - begin);
      end -= begin;
      begin = 0;
      if (end > kMaxTraceLineBytes) {
        return fail_line_too_long();
      }
      const size_t capacity = buffer.size() - kWriterFormPadding;
      if (end == capacity || capacity < kReadChunk) {
        // One byte past the longest line is enough to know that a line is too long.
        buffer.resize(std::min(capacity * 2, kMaxTraceLineBytes + 1) + kWriterFormPadding);
      }
      in->read(buffer.data() + end,
               static_cast<std::streamsize>(buffer.size() - kWriterFormPadding - end));
      const auto count = static_cast<size_t>(in->gcount());
      end += count;
      if (count == 0 || !*in) {
        eof = true;
      }
    }
  }

  bool next_mapped_line(const char*& first, const char*& last) {
    if (window->data() == nullptr && !window->reaches_end() && !remap(kMapWindow)) {
      return false;
    }
    while (true) {
      const char* rest = window->data() + begin;
      const size_t available = window->size() - begin;
      const auto* newline =
          available == 0 ? nullptr : static_cast<const char*>(std::memchr(rest, '\n', available));
      const size_t after = newline == nullptr ? 0 : available - static_cast<size_t>(newline - rest);
      if ((newline == nullptr ? available : available - after) > kMaxTraceLineBytes) {
        return fail_line_too_long();  // before the window grows to hold it
      }
      if (newline != nullptr && after > kWriterFormPadding) {
        first = rest;
        last = newline;
        begin += static_cast<size_t>(newline - rest) + 1;
        ++line;
        return true;
      }
      if (window->reaches_end()) {
        if (newline == nullptr) {
          return available != 0 && fail_truncated(rest, rest + available);
        }
        // One of the last lines of the file: padded in the buffer.
        const auto length = static_cast<size_t>(newline - rest);
        buffer.assign(rest, newline + 1);
        buffer.resize(length + 1 + kWriterFormPadding);
        first = buffer.data();
        last = buffer.data() + length;
        begin += length + 1;
        ++line;
        return true;
      }
      // The line goes past the window: map again from its start, larger if it fills the window.
      if (!remap(std::max(kMapWindow, 2 * available + kWriterFormPadding))) {
        return false;
      }
    }
  }

  // Moves the window to the first unread byte.
  bool remap(size_t length) {
    const uint64_t offset = window->offset() + begin;
    begin = 0;
    parse_in_place_end = 0;
    if (!window->map(offset, length)) {
      ++line;
      original_line.clear();
      return fail(fmt::format("cannot read the file: {}", window->error()));
    }
    if (window->size() > kWriterFormPadding) {
      if (const void* newline =
              ::memrchr(window->data(), '\n', window->size() - kWriterFormPadding)) {
        parse_in_place_end =
            static_cast<size_t>(static_cast<const char*>(newline) - window->data()) + 1;
      }
    }
    return true;
  }

  // The line being read is longer than kMaxTraceLineBytes (or has grown past it unfinished).
  bool fail_line_too_long() {
    ++line;
    original_line.clear();
    return fail(
        fmt::format("a line longer than {} (a trace has one short JSON object a line: is "
                    "this a trace?)",
                    io::describe_limit(kMaxTraceLineBytes)));
  }

  // The last line of the input, [first, last), has no newline.
  bool fail_truncated(const char* first, const char* last) {
    ++line;
    keep_line(first, last);
    fail("truncated last line", static_cast<uint32_t>(std::min<size_t>(
                                    static_cast<size_t>(last - first) + 1, UINT32_MAX)));
    error->notes.push_back(
        {{}, "the file ends without a newline: was the trace still being written?", "", 1, ""});
    return false;
  }

  // What next_field found.
  enum class Field : uint8_t { Known, End, Unknown, Failed };
  template <size_t N>
  Field next_field(FlatJsonParser& parser, const std::array<std::string_view, N>& names,
                   uint32_t string_keys, std::string_view where, uint32_t& seen, int& index,
                   std::string_view& key, JsonValue& value);
  bool fail_at_key(std::string message, const FlatJsonParser& parser, std::string_view key) {
    return fail(std::move(message), parser.key_column(), static_cast<uint32_t>(key.size() + 2));
  }
  bool fail_at_value(std::string message, const FlatJsonParser& parser) {
    return fail(std::move(message), parser.value_column(), parser.value_length());
  }

  // TraceReader::read_header() and the part of next() that is not the fast path.
  bool read_header();
  const Event* next_event(bool refused_in_place);

  bool parse_header(const char* first, const char* last);
  bool store_header_field(int index, const JsonValue& value, const FlatJsonParser& parser);

  // Traces written before the root was named `<root>` (and recorders that keep named_modules()'
  // name) write it as "": every parser reads both as the root.
  static void name_root(Event& e) {
    if (e.module_id >= 0 && e.module.empty()) {
      e.module = kRootModuleName;
    }
  }
  // The writer's form, without copying the line; false leaves the line to parse_event.
  bool parse_fast(const char* first, const char* last) {
    if (parse_writer_form(first, event) != last || (have_seq && event.seq <= last_seq)) {
      return false;
    }
    accept_seq(event.seq);
    name_root(event);
    return true;
  }
  // Mapped file: the next line in the writer's form, parsed where it lies before its end is
  // known (the parse finds it, which spares a memchr per line); false leaves the line to the
  // general parser.
  bool parse_in_place() {
    const char* first = window->data() + begin;
    const char* newline = parse_writer_form(first, event);
    if (newline == nullptr || (have_seq && event.seq <= last_seq) ||
        static_cast<size_t>(newline - first) > kMaxTraceLineBytes) {
      return false;  // the general path reports a line too long
    }
    begin += static_cast<size_t>(newline - first) + 1;
    ++line;
    accept_seq(event.seq);
    name_root(event);
    return true;
  }
  // Remembers the seq of the event just read, which the next one must exceed.
  void accept_seq(uint64_t seq) {
    have_seq = true;
    last_seq = seq;
    last_seq_line = line;
  }

  // The general parser: any valid JSON form of an event line, every error located.
  bool parse_event(const char* first, const char* last);
  bool store_name(int index, std::string_view name, const FlatJsonParser& parser, Event& e);
  bool check_keys(uint32_t seen, uint32_t line_length);
  bool check_seq(uint64_t seq, uint32_t column, uint32_t length);
};

// The next field of a flat object whose keys are `names` (`string_keys`: the bits of those
// whose value is a string, the others are integers). Known: `index` is the key's; a duplicate
// key or a value of the wrong type is an error (Failed, reported); Unknown: the caller says
// what the key might have been.
template <size_t N>
TraceReader::State::Field TraceReader::State::next_field(
    FlatJsonParser& parser, const std::array<std::string_view, N>& names, uint32_t string_keys,
    std::string_view where, uint32_t& seen, int& index, std::string_view& key, JsonValue& value) {
  const auto result = parser.next(key, value);
  if (result == FlatJsonParser::Result::Error) {
    fail(parser.error(), parser.error_column());
    return Field::Failed;
  }
  if (result == FlatJsonParser::Result::End) {
    return Field::End;
  }
  index = find_key(names, key);
  if (index < 0) {
    return Field::Unknown;
  }
  const uint32_t bit = 1U << index;
  if ((seen & bit) != 0) {
    fail_at_key(fmt::format("duplicate key '{}'{}", key, where), parser, key);
    return Field::Failed;
  }
  seen |= bit;
  const auto wanted = (string_keys & bit) != 0 ? JsonValue::Type::String : JsonValue::Type::Integer;
  if (value.type != wanted) {
    fail_at_value(
        fmt::format("expected {} for '{}', got {}", type_name(wanted), key, type_name(value.type)),
        parser);
    return Field::Failed;
  }
  return Field::Known;
}

bool TraceReader::State::parse_header(const char* first, const char* last) {
  keep_line(first, last);
  scratch = original_line;
  FlatJsonParser parser(scratch.data(), scratch.data() + scratch.size());
  constexpr uint32_t kStringKeys = (1U << kFormat) | (1U << kScenario) | (1U << kDiscovery);
  uint32_t seen = 0;
  while (true) {
    int index = -1;
    std::string_view key;
    JsonValue value;
    const Field field =
        next_field(parser, kHeaderKeyNames, kStringKeys, " in the header", seen, index, key, value);
    if (field == Field::End) {
      break;
    }
    if (field == Field::Failed) {
      return false;
    }
    if (field == Field::Unknown) {
      // An event line where the header belongs is the likely mistake; say so.
      if (key == "seq" && seen == 0) {
        return fail("missing trace header (expected {\"format\":\"zfetch-trace\",...} on line 1)");
      }
      return fail_at_key(fmt::format("unknown key '{}' in the header", key), parser, key);
    }
    if (!store_header_field(index, value, parser)) {
      return false;
    }
  }
  if ((seen & (1U << kFormat)) == 0) {
    return fail("missing trace header (expected {\"format\":\"zfetch-trace\",...} on line 1)");
  }
  for (size_t i = 0; i < kHeaderKeyCount; ++i) {
    if ((seen & (1U << i)) == 0) {
      return fail(fmt::format("missing key '{}' in the header", kHeaderKeyNames[i]),
                  static_cast<uint32_t>(last - first));
    }
  }
  return true;
}

bool TraceReader::State::store_header_field(int index, const JsonValue& value,
                                            const FlatJsonParser& parser) {
  switch (index) {
  case kFormat:
    if (value.text != "zfetch-trace") {
      return fail_at_value(
          fmt::format("unknown trace format '{}' (expected 'zfetch-trace')", value.text), parser);
    }
    return true;
  case kVersion:
    if (value.integer != kTraceFormatVersion) {
      fail_at_value(fmt::format("unsupported trace version {} (this build reads {})", value.integer,
                                kTraceFormatVersion),
                    parser);
      error->notes.push_back({{},
                              fmt::format("write the trace again with this build, or read it "
                                          "with the zfetch that wrote version {}",
                                          value.integer),
                              "",
                              1,
                              ""});
      return false;
    }
    header.version = kTraceFormatVersion;
    return true;
  case kScenario:
    header.scenario = value.text;
    return true;
  case kWorldSize:
    if (value.integer < 1) {
      return fail_at_value(
          fmt::format("expected a positive integer for 'world_size', got {}", value.integer),
          parser);
    }
    header.world_size = value.integer;
    return true;
  default:  // kDiscovery
    header.discovery = value.text;
    return true;
  }
}

namespace {

constexpr uint32_t kStringKeys =
    (1U << kPhase) | (1U << kKind) | (1U << kModule) | (1U << kParam) | (1U << kStatus);

// The values each integer key accepts: int32 fields must fit; fields that are absent when
// negative must not be written negative (the writer never does, and -1 would read back as
// "absent"). Unused for the string keys.
struct Range {
  int64_t low = 0;
  int64_t high = 0;
};
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr Range kSigned32{kInt32Min, kInt32Max};
constexpr Range kNatural32{0, kInt32Max};
constexpr Range kNatural64{0, kInt64Max};
constexpr std::array<Range, kKeyCount> kRanges = {
    kNatural64,                   // seq
    Range{kInt64Min, kInt64Max},  // t_ns
    kNatural32,                   // rank
    kSigned32,                    // engine
    kSigned32,                    // step
    kSigned32,                    // micro_step
    Range{},                      // phase
    Range{},                      // kind
    kNatural32,                   // trace_step
    kNatural64,                   // module_id
    Range{},                      // module
    kNatural64,                   // param_id
    Range{},                      // param
    Range{},                      // status
    kNatural64,                   // numel
    kNatural64,                   // bytes
    kNatural64,                   // group
};

// The event of a line whose integer fields are `integers` (by key; -1 where absent) and
// whose names and enums are already in `e`.
void store_integers(const std::array<int64_t, kKeyCount>& integers, Event& e) {
  e.seq = static_cast<uint64_t>(integers[kSeq]);
  e.t_ns = integers[kTNs];
  e.rank = static_cast<int32_t>(integers[kRank]);
  e.engine = static_cast<int32_t>(integers[kEngine]);
  e.step = static_cast<int32_t>(integers[kStep]);
  e.micro_step = static_cast<int32_t>(integers[kMicroStep]);
  e.trace_step = static_cast<int32_t>(integers[kTraceStep]);
  e.module_id = integers[kModuleId];
  e.param_id = integers[kParamId];
  e.numel = integers[kNumel];
  e.bytes = integers[kBytes];
  e.group = integers[kGroup];
}

}  // namespace

bool TraceReader::State::parse_event(const char* first, const char* last) {
  keep_line(first, last);
  if (first == last) {
    return fail("empty line (expected an event object)");
  }
  scratch = original_line;
  FlatJsonParser parser(scratch.data(), scratch.data() + scratch.size());
  uint32_t seen = 0;
  uint32_t seq_column = 0;
  uint32_t seq_length = 1;
  std::array<int64_t, kKeyCount> integers{};
  integers.fill(-1);
  Event e;
  while (true) {
    int index = -1;
    std::string_view key;
    JsonValue value;
    const Field field = next_field(parser, kKeyNames, kStringKeys, "", seen, index, key, value);
    if (field == Field::End) {
      break;
    }
    if (field == Field::Failed) {
      return false;
    }
    if (field == Field::Unknown) {
      return fail_at_key(unknown_name_message("key", key, kKeyNames, false), parser, key);
    }
    if (((1U << index) & kStringKeys) != 0) {
      if (!store_name(index, value.text, parser, e)) {
        return false;
      }
      continue;
    }
    const Range range = kRanges[static_cast<size_t>(index)];
    if (value.integer < range.low || value.integer > range.high) {
      return fail_at_value(fmt::format("integer {} out of range for '{}'", value.integer, key),
                           parser);
    }
    integers[static_cast<size_t>(index)] = value.integer;
    if (index == kSeq) {
      seq_column = parser.value_column();
      seq_length = parser.value_length();
    }
  }
  if (!check_keys(seen, static_cast<uint32_t>(last - first))) {
    return false;
  }
  store_integers(integers, e);
  if (!check_seq(e.seq, seq_column, seq_length)) {
    return false;
  }
  name_root(e);
  event = e;
  return true;
}

// phase, kind and status must be names of their tables; module and param are any string.
bool TraceReader::State::store_name(int index, std::string_view name, const FlatJsonParser& parser,
                                    Event& e) {
  // The enum of `name`, or an error naming the valid values.
  const auto store_enum = [&](auto parsed, auto& out, std::string_view what,
                              std::span<const std::string_view> valid, bool list_valid) {
    if (!parsed) {
      return fail_at_value(unknown_name_message(what, name, valid, list_valid), parser);
    }
    out = *parsed;
    return true;
  };
  switch (index) {
  case kPhase:
    return store_enum(parse_phase(name), e.phase, "phase", phase_names(), true);
  case kKind:
    return store_enum(parse_event_kind(name), e.kind, "kind", event_kind_names(), false);
  case kStatus:
    return store_enum(parse_status(name), e.status, "status", status_names(), true);
  case kModule:
    e.module = name;
    return true;
  default:  // kParam
    e.param = name;
    return true;
  }
}

// Every required key is there, and module_id and module (and param_id and param) come in pairs.
bool TraceReader::State::check_keys(uint32_t seen, uint32_t line_length) {
  for (size_t i = 0; i < kKeyCount; ++i) {
    if ((kRequiredKeys & (1U << i)) != 0 && (seen & (1U << i)) == 0) {
      return fail(fmt::format("missing key '{}'", kKeyNames[i]), line_length);
    }
  }
  for (const auto& [id, name] : {std::pair{kModuleId, kModule}, std::pair{kParamId, kParam}}) {
    const bool has_id = (seen & (1U << id)) != 0;
    const bool has_name = (seen & (1U << name)) != 0;
    if (has_id != has_name) {
      return fail(fmt::format("missing key '{}' (it goes with '{}')", kKeyNames[has_id ? name : id],
                              kKeyNames[has_id ? id : name]),
                  line_length);
    }
  }
  return true;
}

// seq increases strictly from line to line.
bool TraceReader::State::check_seq(uint64_t seq, uint32_t column, uint32_t length) {
  if (have_seq && seq <= last_seq) {
    fail(fmt::format("seq {} is not greater than the previous seq {}", seq, last_seq), column,
         length);
    error->notes.push_back(
        {{static_cast<uint32_t>(std::min<uint64_t>(last_seq_line, UINT32_MAX)), 0},
         fmt::format("the previous event, seq {}", last_seq),
         "",
         1,
         ""});
    return false;
  }
  accept_seq(seq);
  return true;
}

TraceReader::TraceReader(std::istream& in, std::string file_name)
    : state_(std::make_unique<State>(in, std::move(file_name))) {}

TraceReader::TraceReader(io::InputStream& in, std::string file_name)
    : state_(std::make_unique<State>(in, std::move(file_name))) {}

TraceReader::~TraceReader() = default;

bool TraceReader::read_header() {
  return state_->read_header();
}

bool TraceReader::State::read_header() {
  if (header_read) {
    return !failed;
  }
  header_read = true;
  const char* first = nullptr;
  const char* last = nullptr;
  if (!next_line(first, last)) {
    if (!failed) {
      line = 1;
      return fail("missing trace header (the file is empty)");
    }
    return false;
  }
  const std::string_view header_line =
      base::without_byte_order_mark(std::string_view(first, static_cast<size_t>(last - first)));
  return parse_header(header_line.data(), last);
}

const TraceHeader& TraceReader::header() const {
  return state_->header;
}

const Event* TraceReader::next() {
  State& s = *state_;
  // Most events: a line of a mapped file in the writer's form, parsed where it lies. The rest
  // is out of line, so that this path saves no more registers than it uses.
  const bool in_place = s.begin < s.parse_in_place_end;
  if (in_place && s.parse_in_place()) {
    return &s.event;
  }
  return s.next_event(in_place);
}

// next() for the first event, a stream, a line the fast path refused (`refused_in_place`), or
// the end of a window.
const Event* TraceReader::State::next_event(bool refused_in_place) {
  if (!read_header() || failed) {
    return nullptr;
  }
  const bool in_place = window && begin < parse_in_place_end;
  if (in_place && !refused_in_place && parse_in_place()) {
    return &event;
  }
  const char* first = nullptr;
  const char* last = nullptr;
  if (!next_line(first, last)) {
    return nullptr;
  }
  if (!in_place && parse_fast(first, last)) {
    return &event;
  }
  return parse_event(first, last) ? &event : nullptr;
}

const std::optional<diag::Diagnostic>& TraceReader::error() const {
  return state_->error;
}

uint64_t TraceReader::line() const {
  return state_->line;
}

}  // namespace zfetch::trace
