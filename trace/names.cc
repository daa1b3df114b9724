// Name tables for EventKind, Phase and Status; the order of each table is the enum's order.
#include "trace/names.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace zfetch::trace {
namespace {

constexpr std::array<std::string_view, 30> kKindNames = {
    "engine_init",
    "restart",
    "pass_start",
    "trace_record",
    "trace_complete",
    "trace_invalidate",
    "module_pre",
    "module_post",
    "backward_pre",
    "backward_post",
    "fetch",
    "gather",
    "prefetch",
    "wait",
    "queue_pop",
    "release",
    "recompute_attach",
    "access",
    "register_external",
    "getter_gather",
    "transpose",
    "mismatch",
    "error",
    "optimizer_step",
    "partition_all",
    "persistent_gather",
    "checkpoint_save",
    "checkpoint_load",
    "empty_partition_cache",
    "compute",
};
static_assert(static_cast<size_t>(EventKind::Compute) + 1 == kKindNames.size(),
              "every EventKind needs a name");

constexpr std::array<std::string_view, 7> kPhaseNames = {
    "none", "fwd", "bwd", "recompute", "eval", "optimizer", "checkpoint",
};
static_assert(static_cast<size_t>(Phase::Checkpoint) + 1 == kPhaseNames.size(),
              "every Phase needs a name");

// Index 0 is Status::None, which is never written; the parser skips it.
constexpr std::array<std::string_view, 4> kStatusNames = {"", "AV", "NA", "IF"};
static_assert(static_cast<size_t>(Status::Inflight) + 1 == kStatusNames.size(),
              "every Status needs a name");

// The names of a table grouped by length, so that a lookup (the reader does two per event)
// compares only the few names of the right length, byte by byte without a call to memcmp.
template <size_t N>
class NameIndex {
 public:
  constexpr NameIndex(const std::array<std::string_view, N>& table, size_t first) : table_(table) {
    for (size_t i = first; i < N; ++i) {
      const size_t size = table[i].size();
      if (size < kMaxSize) {
        by_size_[size][count_[size]++] = static_cast<uint8_t>(i);
      }
    }
  }

  [[nodiscard]] constexpr int find(std::string_view name) const {
    const size_t size = name.size();
    if (size >= kMaxSize) {
      return -1;
    }
    // Most lengths hold one name; the first and last letters then rule out a wrong name
    // before the full comparison.
    for (size_t k = 0; k < count_[size]; ++k) {
      const std::string_view candidate = table_[by_size_[size][k]];
      if (size == 0 || (candidate[0] == name[0] && candidate[size - 1] == name[size - 1] &&
                        same_middle(candidate, name))) {
        return by_size_[size][k];
      }
    }
    return -1;
  }

 private:
  // A plain loop: names are short, and std::equal becomes a call to memcmp.
  static constexpr bool same_middle(std::string_view a, std::string_view b) {
    for (size_t i = 1; i + 1 < a.size(); ++i) {
      if (a[i] != b[i]) {
        return false;
      }
    }
    return true;
  }

  static constexpr size_t kMaxSize = 24;
  static constexpr size_t kMaxPerSize = 6;
  const std::array<std::string_view, N>& table_;
  std::array<std::array<uint8_t, kMaxPerSize>, kMaxSize> by_size_{};
  std::array<uint8_t, kMaxSize> count_{};
};

template <typename Enum, size_t N>
std::optional<Enum> find_name(const NameIndex<N>& index, std::string_view name) {
  const int i = index.find(name);
  if (i < 0) {
    return std::nullopt;
  }
  return static_cast<Enum>(i);
}

constexpr NameIndex kKindIndex(kKindNames, 0);
constexpr NameIndex kPhaseIndex(kPhaseNames, 0);
constexpr NameIndex kStatusIndex(kStatusNames, 1);

}  // namespace

std::string_view format_as(EventKind kind) {
  return kKindNames[static_cast<size_t>(kind)];
}
std::string_view format_as(Phase phase) {
  return kPhaseNames[static_cast<size_t>(phase)];
}
std::string_view format_as(Status status) {
  return kStatusNames[static_cast<size_t>(status)];
}

std::optional<EventKind> parse_event_kind(std::string_view name) {
  return find_name<EventKind>(kKindIndex, name);
}
std::optional<Phase> parse_phase(std::string_view name) {
  return find_name<Phase>(kPhaseIndex, name);
}
std::optional<Status> parse_status(std::string_view name) {
  return find_name<Status>(kStatusIndex, name);
}

std::span<const std::string_view> event_kind_names() {
  return kKindNames;
}
std::span<const std::string_view> phase_names() {
  return kPhaseNames;
}
std::span<const std::string_view> status_names() {
  return std::span<const std::string_view>(kStatusNames).subspan(1);
}

}  // namespace zfetch::trace
