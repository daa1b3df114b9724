// diff_traces: block-wise streaming comparison with an alignment inside divergent blocks.
#include "trace/diff.h"

#include <algorithm>
#include <array>
#include <tuple>

#include "base/enum_names.h"
#include "trace/align.h"

namespace zfetch::trace {

LocatedEvent::LocatedEvent(const Event& e, uint64_t at)
    : event(e), line(at), module(e.module), param(e.param) {
  point_names();
}
LocatedEvent::LocatedEvent(const LocatedEvent& other)
    : event(other.event), line(other.line), module(other.module), param(other.param) {
  point_names();
}
LocatedEvent& LocatedEvent::operator=(const LocatedEvent& other) {
  if (this != &other) {
    event = other.event;
    line = other.line;
    module = other.module;
    param = other.param;
    point_names();
  }
  return *this;
}
LocatedEvent::LocatedEvent(LocatedEvent&& other) noexcept
    : event(other.event),
      line(other.line),
      module(std::move(other.module)),
      param(std::move(other.param)) {
  point_names();
}
LocatedEvent& LocatedEvent::operator=(LocatedEvent&& other) noexcept {
  event = other.event;
  line = other.line;
  module = std::move(other.module);
  param = std::move(other.param);
  point_names();
  return *this;
}
void LocatedEvent::assign(const Event& e, uint64_t at) {
  event = e;
  line = at;
  module.assign(e.module);
  param.assign(e.param);
  point_names();
}
void LocatedEvent::point_names() {
  event.module = module;
  event.param = param;
}

std::string_view format_as(Divergence::Type type) {
  static constexpr base::EnumNames<Divergence::Type::Changed> kNames("missing", "extra", "changed");
  return kNames[type];
}

namespace {

bool is_boundary_kind(EventKind kind) {
  return kind == EventKind::PassStart || kind == EventKind::EngineInit ||
         kind == EventKind::Restart;
}

// (engine, step, micro_step): blocks of one key are paired; a block whose key comes first
// on one side only is all extra (or all missing).
using BlockKey = std::tuple<int32_t, int32_t, int32_t>;
BlockKey key_of(const Event& e) {
  return {e.engine, e.step, e.micro_step};
}

// One side of the comparison: the reader, the selected event at its head, and whether that
// event starts a new block.
class Side {
 public:
  Side(TraceReader& reader, const Projection& projection)
      : reader_(reader), projection_(projection) {
    advance();
  }

  [[nodiscard]] const Event* head() const { return head_; }
  [[nodiscard]] uint64_t head_line() const { return head_line_; }
  [[nodiscard]] bool starts_block() const { return starts_block_; }
  void enter_block() { starts_block_ = false; }
  [[nodiscard]] uint64_t count() const { return count_; }
  [[nodiscard]] uint64_t last_line() const { return reader_.line(); }
  [[nodiscard]] const std::optional<diag::Diagnostic>& error() const { return reader_.error(); }

  void advance() {
    bool crossed = false;
    while (const Event* e = reader_.next()) {
      crossed = crossed || is_boundary_kind(e->kind);
      if (!projection_.selects(*e)) {
        continue;
      }
      starts_block_ = crossed || !have_key_ || key_of(*e) != last_key_;
      last_key_ = key_of(*e);
      have_key_ = true;
      head_ = e;
      head_line_ = reader_.line();
      ++count_;
      return;
    }
    head_ = nullptr;
    starts_block_ = true;
  }

 private:
  TraceReader& reader_;
  const Projection& projection_;
  const Event* head_ = nullptr;
  uint64_t head_line_ = 0;
  bool starts_block_ = true;
  bool have_key_ = false;
  BlockKey last_key_{};
  uint64_t count_ = 0;
};

class Differ {
 public:
  Differ(TraceReader& recorded, TraceReader& expected, const DiffOptions& options)
      : options_(options), a_(recorded, options.projection), b_(expected, options.projection) {}

  DiffReport run() {
    const Projection& p = options_.projection;
    while (!read_error()) {
      const Event* a = a_.head();
      const Event* b = b_.head();
      if (a == nullptr && b == nullptr) {
        break;
      }
      if (a != nullptr && b != nullptr && !a_.starts_block() && !b_.starts_block()) {
        if (p.equal(*a, *b)) {
          remember(*a, a_.head_line());
          a_.advance();
          b_.advance();
          continue;
        }
        compare_blocks(true, true);
        continue;
      }
      const bool a_new = a == nullptr || a_.starts_block();
      const bool b_new = b == nullptr || b_.starts_block();
      if (a_new && b_new) {
        // Both sides start a block (or have ended): pair blocks of one key.
        if (b == nullptr || (a != nullptr && key_of(*a) < key_of(*b))) {
          compare_blocks(true, false);
        } else if (a == nullptr || key_of(*b) < key_of(*a)) {
          compare_blocks(false, true);
        } else {
          a_.enter_block();
          b_.enter_block();
        }
        continue;
      }
      // One side's block has ended before the other's: the rest of the other is unmatched.
      compare_blocks(!a_new, !b_new);
    }
    report_.recorded_events = a_.count();
    report_.expected_events = b_.count();
    if (a_.error()) {
      report_.error = a_.error();
    } else if (b_.error()) {
      report_.error = b_.error();
    }
    return std::move(report_);
  }

 private:
  [[nodiscard]] bool read_error() const { return a_.error() || b_.error(); }

  // The last few equal events, for context before a divergence: a ring whose entries (and
  // their strings) are reused, so that a long equal stretch neither allocates nor moves events.
  void remember(const Event& e, uint64_t line) {
    if (options_.context == 0) {
      return;
    }
    if (recent_.size() < options_.context) {
      recent_.emplace_back(e, line);
      return;
    }
    recent_[oldest_].assign(e, line);
    if (++oldest_ == recent_.size()) {
      oldest_ = 0;
    }
  }
  // Remembered event `i`, oldest first.
  [[nodiscard]] const LocatedEvent& recent(size_t i) const {
    return recent_[(oldest_ + i) % recent_.size()];
  }

  // Copies the rest of the current block of `side` (from its head) into `out`; the head is
  // left at the first event of the next block.
  static void take_block(Side& side, std::vector<LocatedEvent>& out) {
    side.enter_block();
    while (side.head() != nullptr && !side.starts_block()) {
      out.emplace_back(*side.head(), side.head_line());
      side.advance();
      if (side.error()) {
        return;
      }
    }
  }

  // Sorts each run of one coalesced gather, wait or release, so that sets compare equal.
  void canonicalize(std::vector<LocatedEvent>& events) const {
    const Projection& p = options_.projection;
    const auto same_set = [](const Event& x, const Event& y) {
      return x.kind == y.kind && x.group == y.group && x.engine == y.engine && x.step == y.step &&
             x.micro_step == y.micro_step && x.phase == y.phase;
    };
    size_t i = 0;
    while (i < events.size()) {
      size_t j = i + 1;
      if (is_set_kind(events[i].event.kind)) {
        while (j < events.size() && same_set(events[i].event, events[j].event)) {
          ++j;
        }
        std::stable_sort(events.begin() + static_cast<std::ptrdiff_t>(i),
                         events.begin() + static_cast<std::ptrdiff_t>(j),
                         [&p](const LocatedEvent& x, const LocatedEvent& y) {
                           return p.less(x.event, y.event);
                         });
      }
      i = j;
    }
  }

  void compare_blocks(bool take_a, bool take_b) {
    std::vector<LocatedEvent> a;
    std::vector<LocatedEvent> b;
    if (take_a) {
      take_block(a_, a);
    }
    if (take_b) {
      take_block(b_, b);
    }
    if (read_error()) {
      return;  // a block cut short by a bad line is not compared
    }
    canonicalize(a);
    canonicalize(b);
    const Projection& p = options_.projection;
    const std::vector<AlignRun> runs = align(
        a.size(), b.size(), [&](size_t i, size_t j) { return p.equal(a[i].event, b[j].event); });
    for (size_t r = 0; r < runs.size(); ++r) {
      const AlignRun& run = runs[r];
      if (run.type == AlignRun::Type::Equal) {
        continue;
      }
      // An OnlyA run next to an OnlyB run at the same place: changed events, pair by pair.
      size_t only_a = 0;
      size_t only_b = 0;
      size_t a_at = run.a_begin;
      size_t b_at = run.b_begin;
      if (run.type == AlignRun::Type::OnlyA) {
        only_a = run.count;
        if (r + 1 < runs.size() && runs[r + 1].type == AlignRun::Type::OnlyB) {
          only_b = runs[++r].count;
        }
      } else {
        only_b = run.count;
        if (r + 1 < runs.size() && runs[r + 1].type == AlignRun::Type::OnlyA) {
          only_a = runs[++r].count;
        }
      }
      const size_t changed = std::min(only_a, only_b);
      for (size_t k = 0; k < changed; ++k) {
        add(Divergence::Type::Changed, a, a_at + k, &b[b_at + k]);
      }
      for (size_t k = changed; k < only_a; ++k) {
        add(Divergence::Type::Extra, a, a_at + k,
            b_at + changed < b.size() ? &b[b_at + changed] : nullptr);
      }
      for (size_t k = changed; k < only_b; ++k) {
        add(Divergence::Type::Missing, a, a_at + changed, &b[b_at + k]);
      }
    }
    // Equal events at the end of the block are context for what follows.
    const size_t keep = std::min(a.size(), options_.context);
    for (size_t i = a.size() - keep; i < a.size(); ++i) {
      remember(a[i].event, a[i].line);
    }
  }

  // A divergence at position `at` of the recorded block `a`.
  void add(Divergence::Type type, const std::vector<LocatedEvent>& a, size_t at,
           const LocatedEvent* expected) {
    switch (type) {
    case Divergence::Type::Missing:
      ++report_.missing;
      break;
    case Divergence::Type::Extra:
      ++report_.extra;
      break;
    case Divergence::Type::Changed:
      ++report_.changed;
      break;
    }
    if (report_.divergences.size() >= options_.max_divergences) {
      return;
    }
    Divergence d;
    d.type = type;
    if (at < a.size()) {
      d.recorded = a[at];
      d.recorded_line = a[at].line;
    } else {
      d.recorded_line = a.empty() ? a_.last_line() : a.back().line;
    }
    if (expected != nullptr) {
      d.expected = *expected;
    }
    // Context: up to `context` events before (from this block, then the last equal ones) and
    // after (this block only).
    const size_t from_block = std::min(at, options_.context);
    const size_t from_recent = std::min(recent_.size(), options_.context - from_block);
    for (size_t i = recent_.size() - from_recent; i < recent_.size(); ++i) {
      d.before.push_back(recent(i));
    }
    for (size_t i = at - from_block; i < at; ++i) {
      d.before.push_back(a[i]);
    }
    for (size_t i = at + 1; i < a.size() && i <= at + options_.context; ++i) {
      d.after.push_back(a[i]);
    }
    report_.divergences.push_back(std::move(d));
  }

  const DiffOptions& options_;
  Side a_;
  Side b_;
  std::vector<LocatedEvent> recent_;
  size_t oldest_ = 0;  // the index of the oldest of recent_ once it is full
  DiffReport report_;
};

}  // namespace

DiffReport diff_traces(TraceReader& recorded, TraceReader& expected, const DiffOptions& options) {
  return Differ(recorded, expected, options).run();
}

}  // namespace zfetch::trace
