// TraceWriter: builds each line with memcpy of constant keys and a digit-pair integer writer,
// because fmt::format_to with 17 arguments per event costs several times more (tools/bench).
#include "trace/writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <string_view>

#include "trace/json_escape.h"
#include "trace/names.h"

namespace zfetch::trace {
namespace {

// Upper bound of one event line without its two names: 17 keys (< 16 bytes each with quotes,
// colon and comma), 11 integers of at most 20 digits, two padded names (kPaddedName) and the
// status, braces, newline.
constexpr size_t kFixedLineBound = 17 * 16 + 11 * 20 + 3 * 32 + 8;
constexpr size_t kFirstCapacity = size_t{64} << 10;

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

constexpr uint64_t kPowersOf10[] = {
    10ULL,
    100ULL,
    1'000ULL,
    10'000ULL,
    100'000ULL,
    1'000'000ULL,
    10'000'000ULL,
    100'000'000ULL,
    1'000'000'000ULL,
    10'000'000'000ULL,
    100'000'000'000ULL,
    1'000'000'000'000ULL,
    10'000'000'000'000ULL,
    100'000'000'000'000ULL,
    1'000'000'000'000'000ULL,
    10'000'000'000'000'000ULL,
    100'000'000'000'000'000ULL,
    1'000'000'000'000'000'000ULL,
    10'000'000'000'000'000'000ULL,
};

// Writes the digits straight into `out`, last pair first; no temporary, no memcpy call. Most
// fields (rank, engine, step, micro_step) are below 100, so those take the first branches.
[[gnu::always_inline]] inline char* write_u64(uint64_t value, char* out) {
  if (value < 10) {
    *out = static_cast<char>('0' + value);
    return out + 1;
  }
  if (value < 100) {
    std::memcpy(out, kDigitPairs + value * 2, 2);
    return out + 2;
  }
  size_t digits = 3;
  while (digits < 20 && value >= kPowersOf10[digits - 1]) {
    ++digits;
  }
  char* p = out + digits;
  while (value >= 100) {
    const auto pair = static_cast<size_t>(value % 100) * 2;
    value /= 100;
    p -= 2;
    std::memcpy(p, kDigitPairs + pair, 2);
  }
  if (value >= 10) {
    std::memcpy(p - 2, kDigitPairs + value * 2, 2);
  } else {
    p[-1] = static_cast<char>('0' + value);
  }
  return out + digits;
}

[[gnu::always_inline]] inline char* write_i64(int64_t value, char* out) {
  if (value < 0) {
    *out++ = '-';
    // Negate in unsigned arithmetic so INT64_MIN does not overflow.
    return write_u64(0 - static_cast<uint64_t>(value), out);
  }
  return write_u64(static_cast<uint64_t>(value), out);
}

template <size_t N>
char* write_literal(const char (&literal)[N], char* out) {
  std::memcpy(out, literal, N - 1);
  return out + (N - 1);
}

// Kind, phase and status names padded to a fixed 32 bytes, so that writing one is a fixed-size
// copy (two vector moves) instead of a call to memmove; the line bound leaves room for the pad.
constexpr size_t kPaddedName = 32;
struct PaddedName {
  char text[kPaddedName] = {};
  size_t size = 0;
};

constexpr size_t kMaxNames = 32;
static_assert(static_cast<size_t>(EventKind::Compute) < kMaxNames, "grow kMaxNames");

std::array<PaddedName, kMaxNames> make_padded_names(std::span<const std::string_view> names) {
  std::array<PaddedName, kMaxNames> table{};
  for (size_t i = 0; i < names.size(); ++i) {
    std::copy(names[i].begin(), names[i].end(), table[i].text);
    table[i].size = names[i].size();
  }
  return table;
}

const auto kKindTable = make_padded_names(event_kind_names());
const auto kPhaseTable = make_padded_names(phase_names());

// The descriptor of `out` when it is a regular file, else -1: only a file's chunks need to
// reach it whole (a memory stream's buffer is its content, and has no descriptor).
int regular_file_descriptor(std::FILE* out) {
  struct stat info {};
  const int fd = ::fileno(out);
  return fd >= 0 && ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) ? fd : -1;
}

char* write_padded(const PaddedName& name, char* out) {
  std::memcpy(out, name.text, kPaddedName);
  return out + name.size;
}

}  // namespace

TraceWriter::TraceWriter(std::FILE* out, const TraceHeader& header) : out_(out) {
  fd_ = regular_file_descriptor(out_);
  // What the caller wrote to `out` reaches the file first, and the descriptor's position is
  // then the stream's.
  if (fd_ >= 0 && std::fflush(out_) != 0) {
    fail(errno);
  }
  // A short trace (a test, a fuzz input) never needs the whole chunk; the buffer grows to it.
  buffer_.reserve(kFirstCapacity);
  const size_t bound = 128 + max_escaped_size(header.scenario) + max_escaped_size(header.discovery);
  buffer_.resize(bound);
  char* p = buffer_.data();
  p = write_literal(R"({"format":"zfetch-trace","version":)", p);
  p = write_i64(header.version, p);
  p = write_literal(R"(,"scenario":")", p);
  p = escape_json(header.scenario, p);
  p = write_literal(R"(","world_size":)", p);
  p = write_i64(header.world_size, p);
  p = write_literal(R"(,"discovery":")", p);
  p = escape_json(header.discovery, p);
  p = write_literal("\"}\n", p);
  buffer_.resize(static_cast<size_t>(p - buffer_.data()));
}

TraceWriter::~TraceWriter() {
  write_all();
}

void TraceWriter::on_event(const Event& e) {
  const size_t start = buffer_.size();
  // Resizing within the capacity does not allocate; the buffer grows until it holds a chunk and
  // a line (more only for a line with very long names), and the capacity it reaches is kept.
  // The root is written `<root>`, as every output names it, whoever built the event.
  const std::string_view module = display_module_name(e.module);
  buffer_.resize(start + kFixedLineBound + max_escaped_size(module) + max_escaped_size(e.param));
  char* p = buffer_.data() + start;
  p = write_literal(R"({"seq":)", p);
  p = write_u64(e.seq, p);
  p = write_literal(R"(,"t_ns":)", p);
  p = write_i64(e.t_ns, p);
  p = write_literal(R"(,"rank":)", p);
  p = write_i64(e.rank, p);
  p = write_literal(R"(,"engine":)", p);
  p = write_i64(e.engine, p);
  p = write_literal(R"(,"step":)", p);
  p = write_i64(e.step, p);
  p = write_literal(R"(,"micro_step":)", p);
  p = write_i64(e.micro_step, p);
  p = write_literal(R"(,"phase":")", p);
  p = write_padded(kPhaseTable[static_cast<size_t>(e.phase)], p);
  p = write_literal(R"(","kind":")", p);
  p = write_padded(kKindTable[static_cast<size_t>(e.kind)], p);
  *p++ = '"';
  if (e.trace_step >= 0) {
    p = write_literal(R"(,"trace_step":)", p);
    p = write_i64(e.trace_step, p);
  }
  if (e.module_id >= 0) {
    p = write_literal(R"(,"module_id":)", p);
    p = write_i64(e.module_id, p);
    p = write_literal(R"(,"module":")", p);
    p = escape_json(module, p);
    *p++ = '"';
  }
  if (e.param_id >= 0) {
    p = write_literal(R"(,"param_id":)", p);
    p = write_i64(e.param_id, p);
    p = write_literal(R"(,"param":")", p);
    p = escape_json(e.param, p);
    *p++ = '"';
  }
  if (e.status != Status::None) {
    p = write_literal(R"(,"status":")", p);
    p = write_literal("XX", p);
    std::memcpy(p - 2, format_as(e.status).data(), 2);  // AV, NA, IF: always two letters
    *p++ = '"';
  }
  if (e.numel >= 0) {
    p = write_literal(R"(,"numel":)", p);
    p = write_i64(e.numel, p);
  }
  if (e.bytes >= 0) {
    p = write_literal(R"(,"bytes":)", p);
    p = write_i64(e.bytes, p);
  }
  if (e.group >= 0) {
    p = write_literal(R"(,"group":)", p);
    p = write_i64(e.group, p);
  }
  p = write_literal("}\n", p);
  buffer_.resize(static_cast<size_t>(p - buffer_.data()));
  if (buffer_.size() >= kChunkBytes) {
    write_chunks();
  }
}

void TraceWriter::write_chunks() {
  size_t written = 0;
  while (buffer_.size() - written >= kChunkBytes) {
    write(buffer_.data() + written, kChunkBytes);
    written += kChunkBytes;
  }
  const size_t rest = buffer_.size() - written;
  std::memmove(buffer_.data(), buffer_.data() + written, rest);
  buffer_.resize(rest);
}

void TraceWriter::write_all() {
  write(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void TraceWriter::write(const char* data, size_t size) {
  bytes_ += size;
  if (!ok_) {
    return;
  }
  if (fd_ < 0) {
    errno = 0;
    if (size != 0 && std::fwrite(data, 1, size, out_) != size) {
      fail(errno);
    }
    return;
  }
  // write() may write less than asked (a signal, a nearly full disk): write the rest.
  while (size != 0) {
    const ssize_t written = ::write(fd_, data, size);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      fail(written < 0 ? errno : 0);
      return;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
}

void TraceWriter::fail(int error_number) {
  if (ok_) {
    ok_ = false;
    error_number_ = error_number;
  }
}

bool TraceWriter::flush() {
  write_all();
  errno = 0;
  // A regular file's bytes went straight to its descriptor; stdio holds none of them.
  if (ok_ && fd_ < 0 && std::fflush(out_) != 0) {
    fail(errno);
  }
  return ok_;
}

}  // namespace zfetch::trace
