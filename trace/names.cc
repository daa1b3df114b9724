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

template <typename Enum, size_t N>
std::optional<Enum> find_name(const std::array<std::string_view, N>& table, std::string_view name,
                              size_t first) {
  for (size_t i = first; i < N; ++i) {
    if (table[i] == name) {
      return static_cast<Enum>(i);
    }
  }
  return std::nullopt;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0U : 1U)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

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
  return find_name<EventKind>(kKindNames, name, 0);
}
std::optional<Phase> parse_phase(std::string_view name) {
  return find_name<Phase>(kPhaseNames, name, 0);
}
std::optional<Status> parse_status(std::string_view name) {
  return find_name<Status>(kStatusNames, name, 1);
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

std::optional<std::string_view> closest_name(std::string_view word,
                                             std::span<const std::string_view> candidates) {
  constexpr size_t kMaxDistance = 3;
  std::optional<std::string_view> best;
  size_t best_distance = kMaxDistance + 1;
  for (std::string_view candidate : candidates) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {  // strict: the first of equals wins
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace zfetch::trace
