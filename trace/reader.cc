// TraceReader: reads the stream in large chunks, splits lines with memchr, and parses each line
// in place, so memory stays constant and names are views into the current line.
#include "trace/reader.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "trace/flat_json.h"
#include "trace/names.h"

namespace zfetch::trace {
namespace {

constexpr size_t kReadChunk = 1 << 20;

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
  if (auto suggestion = closest_name(name, valid)) {
    message += fmt::format("; did you mean '{}'?", *suggestion);
  } else if (list_valid) {
    message += fmt::format("; valid values are: {}", fmt::join(valid, ", "));
  }
  return message;
}

}  // namespace

struct TraceReader::State {
  std::istream& in;
  std::string file;
  std::vector<char> buffer = std::vector<char>(kReadChunk);
  size_t begin = 0;  // start of the unread bytes in `buffer`
  size_t end = 0;    // end of the bytes read so far
  bool eof = false;
  uint64_t line = 0;
  bool header_read = false;
  bool failed = false;
  bool have_seq = false;
  uint64_t last_seq = 0;
  TraceHeader header;
  Event event;
  std::optional<ReadError> error;

  State(std::istream& stream, std::string name) : in(stream), file(std::move(name)) {}

  bool fail(std::string message) {
    error = ReadError{file, line, std::move(message)};
    failed = true;
    return false;
  }

  // Sets [first, last) to the next line without its newline; false at the end of the input
  // (error unset) or on a truncated last line (error set).
  bool next_line(char*& first, char*& last) {
    while (true) {
      void* newline = std::memchr(buffer.data() + begin, '\n', end - begin);
      if (newline != nullptr) {
        first = buffer.data() + begin;
        last = static_cast<char*>(newline);
        begin = static_cast<size_t>(last - buffer.data()) + 1;
        ++line;
        return true;
      }
      if (eof) {
        if (begin != end) {
          ++line;
          return fail("truncated last line");
        }
        return false;
      }
      // Keep the partial line, and grow only when a single line fills the whole buffer.
      std::memmove(buffer.data(), buffer.data() + begin, end - begin);
      end -= begin;
      begin = 0;
      if (end == buffer.size()) {
        buffer.resize(buffer.size() * 2);
      }
      in.read(buffer.data() + end, static_cast<std::streamsize>(buffer.size() - end));
      const auto count = static_cast<size_t>(in.gcount());
      end += count;
      if (count == 0 || !in) {
        eof = true;
      }
    }
  }

  bool parse_header(char* first, char* last);
  bool parse_event(char* first, char* last);
};

bool TraceReader::State::parse_header(char* first, char* last) {
  FlatJsonParser parser(first, last);
  std::string_view key;
  JsonValue value;
  uint32_t seen = 0;
  while (true) {
    const auto result = parser.next(key, value);
    if (result == FlatJsonParser::Result::Error) {
      return fail(parser.error());
    }
    if (result == FlatJsonParser::Result::End) {
      break;
    }
    const int index = find_key(kHeaderKeyNames, key);
    if (index < 0) {
      // An event line where the header belongs is the likely mistake; say so.
      if (key == "seq" && seen == 0) {
        return fail("missing trace header (expected {\"format\":\"zfetch-trace\",...} on line 1)");
      }
      return fail(fmt::format("unknown key '{}' in the header", key));
    }
    const uint32_t bit = 1U << index;
    if ((seen & bit) != 0) {
      return fail(fmt::format("duplicate key '{}' in the header", key));
    }
    seen |= bit;
    const bool wants_integer = index == kVersion || index == kWorldSize;
    const auto wanted = wants_integer ? JsonValue::Type::Integer : JsonValue::Type::String;
    if (value.type != wanted) {
      return fail(fmt::format("expected {} for '{}', got {}", type_name(wanted), key,
                              type_name(value.type)));
    }
    switch (index) {
    case kFormat:
      if (value.text != "zfetch-trace") {
        return fail(fmt::format("unknown trace format '{}' (expected 'zfetch-trace')", value.text));
      }
      break;
    case kVersion:
      if (value.integer != kTraceFormatVersion) {
        return fail(fmt::format("unsupported trace version {} (this build reads {})", value.integer,
                                kTraceFormatVersion));
      }
      header.version = kTraceFormatVersion;
      break;
    case kScenario:
      header.scenario = value.text;
      break;
    case kWorldSize:
      if (value.integer < 1) {
        return fail(
            fmt::format("expected a positive integer for 'world_size', got {}", value.integer));
      }
      header.world_size = value.integer;
      break;
    case kDiscovery:
      header.discovery = value.text;
      break;
    default:
      break;
    }
  }
  if ((seen & (1U << kFormat)) == 0) {
    return fail("missing trace header (expected {\"format\":\"zfetch-trace\",...} on line 1)");
  }
  for (size_t i = 0; i < kHeaderKeyCount; ++i) {
    if ((seen & (1U << i)) == 0) {
      return fail(fmt::format("missing key '{}' in the header", kHeaderKeyNames[i]));
    }
  }
  return true;
}

bool TraceReader::State::parse_event(char* first, char* last) {
  if (first == last) {
    return fail("empty line (expected an event object)");
  }
  FlatJsonParser parser(first, last);
  std::string_view key;
  JsonValue value;
  uint32_t seen = 0;
  Event e;
  while (true) {
    const auto result = parser.next(key, value);
    if (result == FlatJsonParser::Result::Error) {
      return fail(parser.error());
    }
    if (result == FlatJsonParser::Result::End) {
      break;
    }
    const int index = find_key(kKeyNames, key);
    if (index < 0) {
      return fail(unknown_name_message("key", key, kKeyNames, false));
    }
    const uint32_t bit = 1U << index;
    if ((seen & bit) != 0) {
      return fail(fmt::format("duplicate key '{}'", key));
    }
    seen |= bit;
    const bool wants_string = index == kPhase || index == kKind || index == kModule ||
                              index == kParam || index == kStatus;
    const auto wanted = wants_string ? JsonValue::Type::String : JsonValue::Type::Integer;
    if (value.type != wanted) {
      return fail(fmt::format("expected {} for '{}', got {}", type_name(wanted), key,
                              type_name(value.type)));
    }
    // Range checks: int32 fields must fit; fields that are absent when negative must not be
    // written negative (the writer never does, and -1 would read back as "absent").
    const int64_t v = value.integer;
    const auto check_range = [&](int64_t low, int64_t high) {
      if (v < low || v > high) {
        return fail(fmt::format("integer {} out of range for '{}'", v, key));
      }
      return true;
    };
    constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
    constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
    constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
    bool ok = true;
    switch (index) {
    case kSeq:
      ok = check_range(0, kInt64Max);
      e.seq = static_cast<uint64_t>(v);
      break;
    case kTNs:
      e.t_ns = v;
      break;
    case kRank:
      ok = check_range(0, kInt32Max);
      e.rank = static_cast<int32_t>(v);
      break;
    case kEngine:
      ok = check_range(kInt32Min, kInt32Max);
      e.engine = static_cast<int32_t>(v);
      break;
    case kStep:
      ok = check_range(kInt32Min, kInt32Max);
      e.step = static_cast<int32_t>(v);
      break;
    case kMicroStep:
      ok = check_range(kInt32Min, kInt32Max);
      e.micro_step = static_cast<int32_t>(v);
      break;
    case kTraceStep:
      ok = check_range(0, kInt32Max);
      e.trace_step = static_cast<int32_t>(v);
      break;
    case kModuleId:
      ok = check_range(0, kInt64Max);
      e.module_id = v;
      break;
    case kParamId:
      ok = check_range(0, kInt64Max);
      e.param_id = v;
      break;
    case kNumel:
      ok = check_range(0, kInt64Max);
      e.numel = v;
      break;
    case kBytes:
      ok = check_range(0, kInt64Max);
      e.bytes = v;
      break;
    case kGroup:
      ok = check_range(0, kInt64Max);
      e.group = v;
      break;
    case kModule:
      e.module = value.text;
      break;
    case kParam:
      e.param = value.text;
      break;
    case kPhase:
      if (auto phase = parse_phase(value.text)) {
        e.phase = *phase;
      } else {
        return fail(unknown_name_message("phase", value.text, phase_names(), true));
      }
      break;
    case kKind:
      if (auto kind = parse_event_kind(value.text)) {
        e.kind = *kind;
      } else {
        return fail(unknown_name_message("kind", value.text, event_kind_names(), false));
      }
      break;
    case kStatus:
      if (auto status = parse_status(value.text)) {
        e.status = *status;
      } else {
        return fail(unknown_name_message("status", value.text, status_names(), true));
      }
      break;
    default:
      break;
    }
    if (!ok) {
      return false;
    }
  }
  for (size_t i = 0; i < kKeyCount; ++i) {
    if ((kRequiredKeys & (1U << i)) != 0 && (seen & (1U << i)) == 0) {
      return fail(fmt::format("missing key '{}'", kKeyNames[i]));
    }
  }
  // module_id and module (and param_id and param) come in pairs.
  const auto check_pair = [&](Key id, Key name) {
    const bool has_id = (seen & (1U << id)) != 0;
    const bool has_name = (seen & (1U << name)) != 0;
    if (has_id != has_name) {
      return fail(fmt::format("missing key '{}' (it goes with '{}')", kKeyNames[has_id ? name : id],
                              kKeyNames[has_id ? id : name]));
    }
    return true;
  };
  if (!check_pair(kModuleId, kModule) || !check_pair(kParamId, kParam)) {
    return false;
  }
  if (have_seq && e.seq <= last_seq) {
    return fail(fmt::format("seq {} is not greater than the previous seq {}", e.seq, last_seq));
  }
  have_seq = true;
  last_seq = e.seq;
  event = e;
  return true;
}

TraceReader::TraceReader(std::istream& in, std::string file_name)
    : state_(std::make_unique<State>(in, std::move(file_name))) {}

TraceReader::~TraceReader() = default;

bool TraceReader::read_header() {
  State& s = *state_;
  if (s.header_read) {
    return !s.failed;
  }
  s.header_read = true;
  char* first = nullptr;
  char* last = nullptr;
  if (!s.next_line(first, last)) {
    if (!s.failed) {
      s.line = 1;
      return s.fail("missing trace header (the file is empty)");
    }
    return false;
  }
  return s.parse_header(first, last);
}

const TraceHeader& TraceReader::header() const {
  return state_->header;
}

const Event* TraceReader::next() {
  State& s = *state_;
  if (!read_header() || s.failed) {
    return nullptr;
  }
  char* first = nullptr;
  char* last = nullptr;
  if (!s.next_line(first, last)) {
    return nullptr;
  }
  return s.parse_event(first, last) ? &s.event : nullptr;
}

const std::optional<ReadError>& TraceReader::error() const {
  return state_->error;
}

uint64_t TraceReader::line() const {
  return state_->line;
}

}  // namespace zfetch::trace
