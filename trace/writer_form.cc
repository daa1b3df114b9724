// parse_writer_form: one pass over the line with no allocation and no copy.
//
// Why it is written the way it is (tools/bench trace_reader): parsing a line is one chain of
// dependent steps, each field starting where the previous one ended. Finding a number's end by
// word tricks (SWAR) puts a load and a dozen arithmetic steps on that chain per field; a plain
// loop over the digits lets the branch predictor guess the length (the lengths of a field
// change rarely from line to line), so the next field's position is known before its digits
// are even loaded. Keys are compared 8 bytes at a time against constants folded in at compile
// time, names are scanned 16 bytes at a time (SSE2, part of every x86-64), and the kind, phase
// and status names are found in a hash table of whole words, where the general parser would
// compare them one by one.
#include "trace/writer_form.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>

#if defined(__SSE2__)
#  include <emmintrin.h>
#endif

#include "trace/json_escape.h"
#include "trace/names.h"

namespace zfetch::trace {
namespace {

static_assert(std::endian::native == std::endian::little, "the key words assume little-endian");

[[gnu::always_inline]] inline uint64_t load8(const char* at) {
  uint64_t word = 0;
  std::memcpy(&word, at, 8);
  return word;
}

constexpr uint64_t low_bytes(size_t n) {
  return n >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * n)) - 1;
}

#if defined(__SSE2__)
// The bits of the bytes of [at, at + 16) that end a name in the writer's form: a quote, a
// backslash, a control byte or a non-ASCII byte (whose UTF-8 the general parser checks).
[[gnu::always_inline]] inline uint32_t special_bytes(const char* at) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
  const __m128i control =
      _mm_cmpeq_epi8(_mm_max_epu8(bytes, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
  const __m128i quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'));
  // A non-ASCII byte has its top bit set already, which is what movemask collects.
  return static_cast<uint32_t>(_mm_movemask_epi8(
      _mm_or_si128(bytes, _mm_or_si128(control, _mm_or_si128(quote, backslash)))));
}
#endif

// A string literal as a template argument, so that its 8-byte words are compile-time constants.
template <size_t N>
struct Literal {
  char text[N] = {};
  constexpr Literal(const char (&from)[N]) {  // NOLINT(google-explicit-constructor): by design
    for (size_t i = 0; i < N; ++i) {
      text[i] = from[i];
    }
  }
  static constexpr size_t kSize = N - 1;
  // The bytes [at, at + 8) of the text, little-endian, zero past its end.
  [[nodiscard]] constexpr uint64_t word(size_t at) const {
    uint64_t w = 0;
    for (size_t i = 0; i < 8 && at + i < kSize; ++i) {
      w |= uint64_t{static_cast<unsigned char>(text[at + i])} << (8 * i);
    }
    return w;
  }
};

// The kind, phase or status names in a small hash table keyed by their bytes, so that a lookup
// is one hash and, most often, one compare of whole words.
class NameTable {
 public:
  explicit NameTable(std::span<const std::string_view> names) {
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string_view name = names[i];
      if (name.empty() || name.size() >= kMaxSize ||
          name.find_first_of("\"\\") != std::string_view::npos) {
        continue;  // never found: the general parser handles it
      }
      std::array<char, kMaxSize + 8> bytes{};
      std::memcpy(bytes.data(), name.data(), name.size());
      const Key key = key_of(load8(bytes.data()), load8(bytes.data() + 8), load8(bytes.data() + 16),
                             name.size());
      size_t slot = hash(key);
      while (slots_[slot].size != 0) {
        slot = (slot + 1) % kSlots;
      }
      slots_[slot] = {key, static_cast<uint8_t>(i), static_cast<uint8_t>(name.size())};
      if (name.size() < 16 && i < kMaxNames) {
        // The name and its closing quote, compared as two words under a mask.
        std::array<char, 16> quoted{};
        std::memcpy(quoted.data(), name.data(), name.size());
        quoted[name.size()] = '"';
        Quoted& q = quoted_[i];
        q.words = {load8(quoted.data()), load8(quoted.data() + 8)};
        q.masks = {low_bytes(name.size() + 1),
                   name.size() + 1 > 8 ? low_bytes(name.size() - 7) : 0};
        q.size = static_cast<uint8_t>(name.size());
      }
    }
  }

  // Whether the name at `at`, up to its closing quote, is name `index` (its size then in
  // `size`); false for an index out of the table. Reads 16 bytes.
  [[gnu::always_inline]] [[nodiscard]] bool is_at(const char* at, int index, size_t& size) const {
    if (static_cast<unsigned>(index) >= kMaxNames) {
      return false;
    }
    const Quoted& q = quoted_[static_cast<size_t>(index)];
    size = q.size;
    return q.size != 0 && (((load8(at) ^ q.words[0]) & q.masks[0]) |
                           ((load8(at + 8) ^ q.words[1]) & q.masks[1])) == 0;
  }

  // The index of the name from `at` to the next quote (and its size), or -1; reads 24 bytes.
  [[gnu::always_inline]] [[nodiscard]] int find(const char* at, size_t& size) const {
    constexpr uint64_t kQuotes = 0x2222222222222222ULL;
    const auto quote_in = [](uint64_t w) {
      w ^= kQuotes;
      return (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;  // exact lowest
    };
    const uint64_t w0 = load8(at);
    if (const uint64_t q = quote_in(w0); q != 0) {
      // A name of fewer than 8 bytes (most of them): one word, so one compare.
      size = static_cast<size_t>(std::countr_zero(q)) / 8;
      const uint64_t key = w0 & low_bytes(size);
      for (size_t slot = hash({key, 0, 0}); slots_[slot].size != 0; slot = (slot + 1) % kSlots) {
        const Slot& s = slots_[slot];
        if (s.key[0] == key && s.size == size) {
          return s.index;
        }
      }
      return -1;
    }
    const uint64_t w1 = load8(at + 8);
    const uint64_t w2 = load8(at + 16);
    if (const uint64_t q1 = quote_in(w1); q1 != 0) {
      size = 8 + static_cast<size_t>(std::countr_zero(q1)) / 8;
    } else if (const uint64_t q2 = quote_in(w2); q2 != 0) {
      size = 16 + static_cast<size_t>(std::countr_zero(q2)) / 8;
    } else {
      return -1;
    }
    const Key key = key_of(w0, w1, w2, size);
    for (size_t slot = hash(key); slots_[slot].size != 0; slot = (slot + 1) % kSlots) {
      const Slot& s = slots_[slot];
      if (((s.key[0] ^ key[0]) | (s.key[1] ^ key[1]) | (s.key[2] ^ key[2])) == 0 &&
          s.size == size) {
        return s.index;
      }
    }
    return -1;
  }

 private:
  static constexpr size_t kMaxSize = 24;
  static constexpr size_t kSlots = 128;  // a power of two, well above the 30 kinds
  using Key = std::array<uint64_t, 3>;
  struct Slot {
    Key key{};
    uint8_t index = 0;
    uint8_t size = 0;  // 0: empty (no name is empty)
  };

  // The first `size` bytes of the words w0, w1, w2 (zero after them).
  [[gnu::always_inline]] static Key key_of(uint64_t w0, uint64_t w1, uint64_t w2, size_t size) {
    return {w0 & low_bytes(size), size > 8 ? w1 & low_bytes(size - 8) : 0,
            size > 16 ? w2 & low_bytes(size - 16) : 0};
  }
  [[gnu::always_inline]] static size_t hash(const Key& key) {
    const uint64_t mixed = (key[0] ^ (key[1] * 31) ^ (key[2] * 961)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(mixed >> 57);  // 7 bits: kSlots
  }
  std::array<Slot, kSlots> slots_{};
  // is_at()'s names: those of fewer than 16 bytes among the first kMaxNames (size 0: none).
  static constexpr size_t kMaxNames = 16;
  struct Quoted {
    std::array<uint64_t, 2> words{};
    std::array<uint64_t, 2> masks{};
    uint8_t size = 0;
  };
  std::array<Quoted, kMaxNames> quoted_{};
};

const NameTable kKinds(event_kind_names());
const NameTable kPhases(phase_names());
const NameTable kStatuses(status_names());

class WriterFormParser {
 public:
  explicit WriterFormParser(const char* first) : p_(first) {}

  // The line's newline, or nullptr.
  const char* parse(Event& e) {
    uint64_t u = 0;
    if (!literal<R"({"seq":)">() || !digits(u)) {
      return nullptr;
    }
    e.seq = u;
    if (!literal<R"(,"t_ns":)">() || !signed_digits(e.t_ns)) {
      return nullptr;
    }
    if (!literal<R"(,"rank":)">() || !int32(e.rank) || !literal<R"(,"engine":)">() ||
        !int32(e.engine) || !literal<R"(,"step":)">() || !int32(e.step) ||
        !literal<R"(,"micro_step":)">() || !int32(e.micro_step)) {
      return nullptr;
    }
    if (!literal<R"(,"phase":")">() || !enum_name<Phase, 0, true>(kPhases, e.phase) ||
        !literal<R"(,"kind":")">() || !enum_name(kKinds, e.kind)) {
      return nullptr;
    }
    return optional_fields(e) && p_[0] == '}' && p_[1] == '\n' ? p_ + 1 : nullptr;
  }

 private:
  // The fields after `kind`, each absent when the writer left it out.
  bool optional_fields(Event& e) {
    e.trace_step = -1;
    if (starts<R"(,"trace_step":)">() &&
        (!literal<R"(,"trace_step":)">() || !int32(e.trace_step))) {
      return false;
    }
    if (!id_and_name<R"(,"module_id":)", R"(,"module":")">(e.module_id, e.module) ||
        !id_and_name<R"(,"param_id":)", R"(,"param":")">(e.param_id, e.param)) {
      return false;
    }
    if (starts<R"(,"status":")">()) {
      if (!literal<R"(,"status":")">() || !enum_name<Status, 1, true>(kStatuses, e.status)) {
        return false;
      }
    } else {
      e.status = Status::None;
    }
    return optional_integer<R"(,"numel":)">(e.numel) && optional_integer<R"(,"bytes":)">(e.bytes) &&
           optional_integer<R"(,"group":)">(e.group);
  }

  // Consumes `key` if the line has it here; the bytes compared never include the line's
  // newline unless they differ, so a match never runs past the line.
  template <Literal key>
  [[gnu::always_inline]] bool literal() {
    constexpr size_t n = key.kSize;
    static_assert(n >= 1 && n <= 16, "keys are compared as one or two words");
    bool same = false;
    if constexpr (n <= 8) {
      same = ((load8(p_) ^ key.word(0)) & low_bytes(n)) == 0;
    } else {
      same = ((load8(p_) ^ key.word(0)) | (load8(p_ + n - 8) ^ key.word(n - 8))) == 0;
    }
    p_ += n;
    return same;
  }

  // Whether an optional key is here: its first three bytes (`,"` and its first letter) are
  // distinct among the keys that can follow.
  template <Literal key>
  [[gnu::always_inline]] [[nodiscard]] bool starts() const {
    return ((load8(p_) ^ key.word(0)) & low_bytes(3)) == 0;
  }

  // 1 to 18 digits, no leading zero (larger values and signs go to the general parser).
  [[gnu::always_inline]] bool digits(uint64_t& out) {
    const auto first = static_cast<unsigned char>(p_[0] - '0');
    const auto second = static_cast<unsigned char>(p_[1] - '0');
    if (first >= 10) {
      return false;
    }
    // One digit (rank, engine, micro_step and most steps and ids): no loop, and a leading zero
    // is ruled out by the same test.
    if (second >= 10) {
      p_ += 1;
      out = first;
      return true;
    }
    if (first == 0) {
      return false;  // a leading zero
    }
    uint64_t value = uint64_t{first} * 10 + second;
    size_t n = 2;
    while (true) {
      const auto d0 = static_cast<unsigned char>(p_[n] - '0');
      if (d0 >= 10) {
        break;
      }
      const auto d1 = static_cast<unsigned char>(p_[n + 1] - '0');
      if (d1 >= 10) {
        value = value * 10 + d0;
        ++n;
        break;
      }
      value = value * 100 + d0 * 10U + d1;
      n += 2;
    }
    if (n > kMaxDigits) {
      return false;
    }
    p_ += n;
    out = value;
    return true;
  }

  [[gnu::always_inline]] bool signed_digits(int64_t& out) {
    const bool negative = *p_ == '-';
    p_ += negative ? 1 : 0;
    uint64_t magnitude = 0;
    if (!digits(magnitude)) {
      return false;
    }
    out = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
    return true;
  }

  // rank, engine, step, micro_step, trace_step: never negative in the writer's form.
  [[gnu::always_inline]] bool int32(int32_t& out) {
    uint64_t value = 0;
    if (!digits(value) || value > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return false;
    }
    out = static_cast<int32_t>(value);
    return true;
  }

  template <Literal key>
  [[gnu::always_inline]] bool optional_integer(int64_t& out) {
    out = -1;
    if (!starts<key>()) {
      return true;
    }
    uint64_t value = 0;
    if (!literal<key>() || !digits(value)) {
      return false;
    }
    out = static_cast<int64_t>(value);
    return true;
  }

  template <Literal id_key, Literal name_key>
  [[gnu::always_inline]] bool id_and_name(int64_t& id, std::string_view& name) {
    id = -1;
    name = {};
    if (!starts<id_key>()) {
      return true;
    }
    uint64_t value = 0;
    if (!literal<id_key>() || !digits(value) || !literal<name_key>() || !quoted_rest(name)) {
      return false;
    }
    id = static_cast<int64_t>(value);
    return true;
  }

  // The rest of a string whose opening quote the key consumed, up to its closing quote; an
  // escape, a control byte (the newline included) or a non-ASCII byte (whose UTF-8 the slow
  // path checks) is not the writer's form.
  [[gnu::always_inline]] bool quoted_rest(std::string_view& out) {
    const char* q = p_;
#if defined(__SSE2__)
    // 16 bytes at a time: the line's newline stops the scan within the padding.
    uint32_t mask = 0;
    while ((mask = special_bytes(q)) == 0) {
      q += 16;
    }
    q += std::countr_zero(mask);
#else
    uint64_t mask = 0;
    while ((mask = json_special_or_non_ascii_mask(load8(q))) == 0) {
      q += 8;
    }
    q += std::countr_zero(mask) / 8;  // the lowest flagged byte is exact
#endif
    if (*q != '"') {
      return false;
    }
    out = std::string_view(p_, static_cast<size_t>(q - p_));
    p_ = q + 1;
    return true;
  }

  // `Offset`: status_names() leaves out Status::None. `Repeats`: the name is most often the
  // previous line's, which `out` still holds when the reader parses into the same event; one
  // compare then finds it (a wrong guess costs a compare: `out` is only a guess).
  template <typename Enum, int Offset = 0, bool Repeats = false>
  [[gnu::always_inline]] bool enum_name(const NameTable& names, Enum& out) {
    size_t size = 0;
    if (Repeats && names.is_at(p_, static_cast<int>(out) - Offset, size)) {
      p_ += size + 1;
      return true;
    }
    const int index = names.find(p_, size);
    if (index < 0) {
      return false;
    }
    p_ += size + 1;
    out = static_cast<Enum>(index + Offset);
    return true;
  }

  static constexpr size_t kMaxDigits = 18;
  const char* p_;
};

}  // namespace

const char* parse_writer_form(const char* first, Event& e) {
  return WriterFormParser(first).parse(e);
}

}  // namespace zfetch::trace
