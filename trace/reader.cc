// TraceReader: reads the stream in large chunks, splits lines with memchr, and parses each line
// in place, so memory stays constant and names are views into the current line.
#include "trace/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <vector>

#include "trace/flat_json.h"
#include "trace/json_escape.h"
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

// The fast path reads the writer's own form of an event line: the keys in the writer's order,
// no whitespace, integers without a sign where the field cannot be negative, names without
// escapes. Anything else (another writer, a hand-edited line, an error) returns false and the
// general parser reads the line, so the fast path only has to be right about lines it accepts.
class FastEventParser {
 public:
  FastEventParser(const char* first, const char* last) : p_(first), end_(last) {}

  bool parse(Event& e) {
    uint64_t u = 0;
    if (!literal(R"({"seq":)") || !unsigned_integer(u)) {
      return false;
    }
    e.seq = u;
    if (!literal(R"(,"t_ns":)") || !signed_integer(e.t_ns)) {
      return false;
    }
    if (!literal(R"(,"rank":)") || !unsigned_integer(u) || u > kInt32Max) {
      return false;
    }
    e.rank = static_cast<int32_t>(u);
    if (!literal(R"(,"engine":)") || !int32(e.engine) || !literal(R"(,"step":)") ||
        !int32(e.step) || !literal(R"(,"micro_step":)") || !int32(e.micro_step)) {
      return false;
    }
    std::string_view name;
    if (!literal(R"(,"phase":)") || !string(name)) {
      return false;
    }
    if (auto phase = parse_phase(name)) {
      e.phase = *phase;
    } else {
      return false;
    }
    if (!literal(R"(,"kind":)") || !string(name)) {
      return false;
    }
    if (auto kind = parse_event_kind(name)) {
      e.kind = *kind;
    } else {
      return false;
    }
    if (optional_key(R"(,"trace_step":)")) {
      if (!unsigned_integer(u) || u > kInt32Max) {
        return false;
      }
      e.trace_step = static_cast<int32_t>(u);
    }
    if (optional_key(R"(,"module_id":)")) {
      if (!unsigned_integer(u) || !literal(R"(,"module":)") || !string(e.module)) {
        return false;
      }
      e.module_id = static_cast<int64_t>(u);
    }
    if (optional_key(R"(,"param_id":)")) {
      if (!unsigned_integer(u) || !literal(R"(,"param":)") || !string(e.param)) {
        return false;
      }
      e.param_id = static_cast<int64_t>(u);
    }
    if (optional_key(R"(,"status":)")) {
      if (!string(name)) {
        return false;
      }
      if (auto status = parse_status(name)) {
        e.status = *status;
      } else {
        return false;
      }
    }
    if (optional_key(R"(,"numel":)")) {
      if (!unsigned_integer(u)) {
        return false;
      }
      e.numel = static_cast<int64_t>(u);
    }
    if (optional_key(R"(,"bytes":)")) {
      if (!unsigned_integer(u)) {
        return false;
      }
      e.bytes = static_cast<int64_t>(u);
    }
    if (optional_key(R"(,"group":)")) {
      if (!unsigned_integer(u)) {
        return false;
      }
      e.group = static_cast<int64_t>(u);
    }
    return end_ - p_ == 1 && *p_ == '}';
  }

 private:
  static constexpr uint64_t kInt32Max = std::numeric_limits<int32_t>::max();

  // Compares 8 bytes at a time with loads the compiler can fold the literal into; memcmp is
  // an out-of-line call here, and the keys are most of a line.
  template <size_t N>
  [[gnu::always_inline]] bool literal(const char (&text)[N]) {
    constexpr size_t kSize = N - 1;
    if (static_cast<size_t>(end_ - p_) < kSize) {
      return false;
    }
    uint64_t differ = 0;
    size_t i = 0;
    for (; i + 8 <= kSize; i += 8) {
      differ |= load8(p_ + i) ^ load8(text + i);
    }
    for (; i < kSize; ++i) {
      differ |= static_cast<uint64_t>(static_cast<unsigned char>(p_[i] ^ text[i]));
    }
    if (differ != 0) {
      return false;
    }
    p_ += kSize;
    return true;
  }

  // How many of the 8 bytes of `word`, from the lowest, are ASCII digits (SWAR: a byte is a
  // digit when its high nibble is 3 and adding 6 keeps it so). A carry only runs upwards from
  // a byte that is not a digit, so the lowest flagged byte is exact.
  static int leading_digits(uint64_t word) {
    constexpr uint64_t kHighNibbles = 0xF0F0F0F0F0F0F0F0ULL;
    constexpr uint64_t kThrees = 0x3030303030303030ULL;
    const uint64_t not_digit = ((word & kHighNibbles) ^ kThrees) |
                               (((word + 0x0606060606060606ULL) & kHighNibbles) ^ kThrees);
    constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
    const uint64_t flags = (((not_digit & kLow7) + kLow7) | not_digit) & ~kLow7;
    return flags == 0 ? 8 : std::countr_zero(flags) / 8;
  }

  // The value of the first `n` (1..8) digits of `word`, the first digit the most significant
  // (Lemire, "Quickly parsing eight digits"). Shifting the digits to the top fills the low
  // bytes with zeros, which are leading zero digits.
  static uint64_t eight_digits(uint64_t word, int n) {
    uint64_t d = (word - 0x3030303030303030ULL) << (8 * (8 - n));
    d = d * 10 + (d >> 8);
    d = (((d & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((d >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >>
        32;
    return d;
  }

  static constexpr uint64_t kPowersOf10[] = {1,       10,        100,        1'000,      10'000,
                                             100'000, 1'000'000, 10'000'000, 100'000'000};

  static uint64_t load8(const char* at) {
    uint64_t word = 0;
    std::memcpy(&word, at, 8);
    return word;
  }

  // Like literal, for a key the writer leaves out when the field is absent: its first two
  // bytes (`,"` then the key's first letter) decide cheaply whether it is there.
  template <size_t N>
  [[gnu::always_inline]] bool optional_key(const char (&text)[N]) {
    if (end_ - p_ < 3 || p_[2] != text[2]) {
      return false;
    }
    return literal(text);
  }

  // Up to 18 digits, no leading zero: larger values, signs and floats go to the general
  // parser, which checks their range or reports them.
  [[gnu::always_inline]] bool unsigned_integer(uint64_t& out) {
    // Most values of a line are integers of several digits; read up to 16 of them 8 at a time
    // (only within the line: the last fields have fewer than 16 bytes after them).
    if (end_ - p_ >= 8) {
      // rank, engine, step and micro_step are mostly one digit: no need for the word trick.
      if (static_cast<unsigned char>(p_[1] - '0') >= 10 &&
          static_cast<unsigned char>(p_[0] - '0') < 10) {
        out = static_cast<uint64_t>(p_[0] - '0');
        ++p_;
        return true;
      }
      const uint64_t first = load8(p_);
      const int n = leading_digits(first);
      if (n == 0 || (n > 1 && *p_ == '0')) {
        return false;
      }
      if (n < 8) {
        out = eight_digits(first, n);
        p_ += n;
        return true;
      }
      if (end_ - p_ >= 16) {
        const uint64_t second = load8(p_ + 8);
        const int m = leading_digits(second);
        if (m < 8) {
          out = eight_digits(first, 8) * kPowersOf10[m] + (m == 0 ? 0 : eight_digits(second, m));
          p_ += 8 + m;
          return true;
        }
      }
    }
    const char* const start = p_;
    uint64_t value = 0;
    while (p_ != end_ && static_cast<unsigned char>(*p_ - '0') < 10) {
      value = value * 10 + static_cast<uint64_t>(*p_ - '0');
      ++p_;
    }
    const auto digits = p_ - start;
    if (digits == 0 || digits > 18 || (*start == '0' && digits > 1)) {
      return false;
    }
    out = value;
    return true;
  }

  bool signed_integer(int64_t& out) {
    const bool negative = p_ != end_ && *p_ == '-';
    if (negative) {
      ++p_;
    }
    uint64_t magnitude = 0;
    if (!unsigned_integer(magnitude)) {
      return false;
    }
    out = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
    return true;
  }

  bool int32(int32_t& out) {
    int64_t value = 0;
    if (!signed_integer(value) || value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max()) {
      return false;
    }
    out = static_cast<int32_t>(value);
    return true;
  }

  // A quoted string with no escape and no control byte, as a view into the line.
  [[gnu::always_inline]] bool string(std::string_view& out) {
    if (p_ == end_ || *p_ != '"') {
      return false;
    }
    const char* const start = p_ + 1;
    const char* p = start;
    while (end_ - p >= 8) {
      uint64_t word = 0;
      std::memcpy(&word, p, 8);
      const uint64_t mask = json_special_mask(word);
      if (mask != 0) {
        p += std::countr_zero(mask) / 8;  // the lowest flagged byte is exact
        break;
      }
      p += 8;
    }
    if (end_ - p < 8) {
      while (p != end_ && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) {
        ++p;
      }
    }
    if (p == end_ || *p != '"') {
      return false;
    }
    out = std::string_view(start, static_cast<size_t>(p - start));
    p_ = p + 1;
    return true;
  }

  const char* p_;
  const char* end_;
};

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
  uint64_t last_seq_line = 0;
  TraceHeader header;
  Event event;
  std::optional<diag::Diagnostic> error;
  // The line being parsed as it was read: parsing unescapes strings in place, and an error
  // quotes the line as the user wrote it.
  std::string original_line;

  State(std::istream& stream, std::string name) : in(stream), file(std::move(name)) {}

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
    return false;
  }

  // Remembers the line about to be parsed, for the error's quote.
  void keep_line(const char* first, const char* last) {
    original_line.assign(first, static_cast<size_t>(last - first));
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
          keep_line(buffer.data() + begin, buffer.data() + end);
          fail("truncated last line",
               static_cast<uint32_t>(std::min<size_t>(end - begin + 1, UINT32_MAX)));
          error->notes.push_back(
              {{},
               "the file ends without a newline: was the trace still being written?",
               "",
               1,
               ""});
          return false;
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
  // The writer's form, without copying the line; false leaves the line to parse_event.
  bool parse_fast(const char* first, const char* last) {
    Event e;
    if (!FastEventParser(first, last).parse(e) || (have_seq && e.seq <= last_seq)) {
      return false;
    }
    have_seq = true;
    last_seq = e.seq;
    last_seq_line = line;
    event = e;
    return true;
  }
  bool parse_event(char* first, char* last);
};

bool TraceReader::State::parse_header(char* first, char* last) {
  keep_line(first, last);
  FlatJsonParser parser(first, last);
  std::string_view key;
  JsonValue value;
  uint32_t seen = 0;
  while (true) {
    const auto result = parser.next(key, value);
    if (result == FlatJsonParser::Result::Error) {
      return fail(parser.error(), parser.error_column());
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
      return fail(fmt::format("unknown key '{}' in the header", key), parser.key_column(),
                  static_cast<uint32_t>(key.size() + 2));
    }
    const uint32_t bit = 1U << index;
    if ((seen & bit) != 0) {
      return fail(fmt::format("duplicate key '{}' in the header", key), parser.key_column(),
                  static_cast<uint32_t>(key.size() + 2));
    }
    seen |= bit;
    const bool wants_integer = index == kVersion || index == kWorldSize;
    const auto wanted = wants_integer ? JsonValue::Type::Integer : JsonValue::Type::String;
    if (value.type != wanted) {
      return fail(fmt::format("expected {} for '{}', got {}", type_name(wanted), key,
                              type_name(value.type)),
                  parser.value_column(), parser.value_length());
    }
    switch (index) {
    case kFormat:
      if (value.text != "zfetch-trace") {
        return fail(fmt::format("unknown trace format '{}' (expected 'zfetch-trace')", value.text),
                    parser.value_column(), parser.value_length());
      }
      break;
    case kVersion:
      if (value.integer != kTraceFormatVersion) {
        fail(fmt::format("unsupported trace version {} (this build reads {})", value.integer,
                         kTraceFormatVersion),
             parser.value_column(), parser.value_length());
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
      break;
    case kScenario:
      header.scenario = value.text;
      break;
    case kWorldSize:
      if (value.integer < 1) {
        return fail(
            fmt::format("expected a positive integer for 'world_size', got {}", value.integer),
            parser.value_column(), parser.value_length());
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
      return fail(fmt::format("missing key '{}' in the header", kHeaderKeyNames[i]),
                  static_cast<uint32_t>(last - first));
    }
  }
  return true;
}

bool TraceReader::State::parse_event(char* first, char* last) {
  keep_line(first, last);
  if (first == last) {
    return fail("empty line (expected an event object)");
  }
  FlatJsonParser parser(first, last);
  std::string_view key;
  JsonValue value;
  uint32_t seen = 0;
  uint32_t seq_column = 0;
  uint32_t seq_length = 1;
  Event e;
  while (true) {
    const auto result = parser.next(key, value);
    if (result == FlatJsonParser::Result::Error) {
      return fail(parser.error(), parser.error_column());
    }
    if (result == FlatJsonParser::Result::End) {
      break;
    }
    const int index = find_key(kKeyNames, key);
    if (index < 0) {
      return fail(unknown_name_message("key", key, kKeyNames, false), parser.key_column(),
                  static_cast<uint32_t>(key.size() + 2));
    }
    const uint32_t bit = 1U << index;
    if ((seen & bit) != 0) {
      return fail(fmt::format("duplicate key '{}'", key), parser.key_column(),
                  static_cast<uint32_t>(key.size() + 2));
    }
    seen |= bit;
    const bool wants_string = index == kPhase || index == kKind || index == kModule ||
                              index == kParam || index == kStatus;
    const auto wanted = wants_string ? JsonValue::Type::String : JsonValue::Type::Integer;
    if (value.type != wanted) {
      return fail(fmt::format("expected {} for '{}', got {}", type_name(wanted), key,
                              type_name(value.type)),
                  parser.value_column(), parser.value_length());
    }
    // Range checks: int32 fields must fit; fields that are absent when negative must not be
    // written negative (the writer never does, and -1 would read back as "absent").
    const int64_t v = value.integer;
    const auto check_range = [&](int64_t low, int64_t high) {
      if (v < low || v > high) {
        return fail(fmt::format("integer {} out of range for '{}'", v, key), parser.value_column(),
                    parser.value_length());
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
      seq_column = parser.value_column();
      seq_length = parser.value_length();
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
        return fail(unknown_name_message("phase", value.text, phase_names(), true),
                    parser.value_column(), parser.value_length());
      }
      break;
    case kKind:
      if (auto kind = parse_event_kind(value.text)) {
        e.kind = *kind;
      } else {
        return fail(unknown_name_message("kind", value.text, event_kind_names(), false),
                    parser.value_column(), parser.value_length());
      }
      break;
    case kStatus:
      if (auto status = parse_status(value.text)) {
        e.status = *status;
      } else {
        return fail(unknown_name_message("status", value.text, status_names(), true),
                    parser.value_column(), parser.value_length());
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
      return fail(fmt::format("missing key '{}'", kKeyNames[i]),
                  static_cast<uint32_t>(last - first));
    }
  }
  // module_id and module (and param_id and param) come in pairs.
  const auto check_pair = [&](Key id, Key name) {
    const bool has_id = (seen & (1U << id)) != 0;
    const bool has_name = (seen & (1U << name)) != 0;
    if (has_id != has_name) {
      return fail(fmt::format("missing key '{}' (it goes with '{}')", kKeyNames[has_id ? name : id],
                              kKeyNames[has_id ? id : name]),
                  static_cast<uint32_t>(last - first));
    }
    return true;
  };
  if (!check_pair(kModuleId, kModule) || !check_pair(kParamId, kParam)) {
    return false;
  }
  if (have_seq && e.seq <= last_seq) {
    fail(fmt::format("seq {} is not greater than the previous seq {}", e.seq, last_seq), seq_column,
         seq_length);
    error->notes.push_back(
        {{static_cast<uint32_t>(std::min<uint64_t>(last_seq_line, UINT32_MAX)), 0},
         fmt::format("the previous event, seq {}", last_seq),
         "",
         1,
         ""});
    return false;
  }
  have_seq = true;
  last_seq = e.seq;
  last_seq_line = line;
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
  if (s.parse_fast(first, last)) {
    return &s.event;
  }
  return s.parse_event(first, last) ? &s.event : nullptr;
}

const std::optional<diag::Diagnostic>& TraceReader::error() const {
  return state_->error;
}

uint64_t TraceReader::line() const {
  return state_->line;
}

}  // namespace zfetch::trace
