// The names of discovery policies and outcome kinds (see outcome.h).
#include "model/outcome.h"

#include <array>

namespace zfetch::model {
namespace {

constexpr std::array<std::string_view, 2> kDiscoveryNames = {"resident-skip",
                                                             "residency-independent"};
static_assert(static_cast<size_t>(Discovery::ResidencyIndependent) + 1 == kDiscoveryNames.size(),
              "every Discovery needs a name");

constexpr std::array<std::string_view, 8> kOutcomeNames = {
    "pass",
    "trace-invalidated",
    "fetch-queue-mismatch",
    "inflight-params",
    "rank-divergence",
    "hang",
    "not-available",
    "error",
};
static_assert(static_cast<size_t>(OutcomeKind::Error) + 1 == kOutcomeNames.size(),
              "every OutcomeKind needs a name");

template <typename Enum, size_t N>
std::optional<Enum> find_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) {
      return static_cast<Enum>(i);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view format_as(Discovery discovery) {
  return kDiscoveryNames[static_cast<size_t>(discovery)];
}

std::string_view format_as(OutcomeKind kind) {
  return kOutcomeNames[static_cast<size_t>(kind)];
}

std::optional<Discovery> parse_discovery(std::string_view name) {
  return find_name<Discovery>(kDiscoveryNames, name);
}

std::optional<OutcomeKind> parse_outcome(std::string_view name) {
  return find_name<OutcomeKind>(kOutcomeNames, name);
}

std::span<const std::string_view> discovery_names() {
  return kDiscoveryNames;
}

std::span<const std::string_view> outcome_names() {
  return kOutcomeNames;
}

}  // namespace zfetch::model
