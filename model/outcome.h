// The words of an expect block that name a run: the discovery policy it runs under and the kind
// of outcome it ends with. The simulator returns these kinds and `zfetch check` compares them, so
// each name is written once, here.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "base/enum_names.h"

namespace zfetch::model {

/// How the parameter getter discovers external accesses (semantics 5.2 and 5.7).
enum class Discovery : uint8_t {
  ResidentSkip,          ///< DeepSpeed up to 0.19.9: only NOT_AVAILABLE params are discovered
  ResidencyIndependent,  ///< PR #8875: discovered whatever their residency
};

/// How a run ended.
enum class OutcomeKind : uint8_t {
  Pass,                ///< every step completed, the trace was never invalidated
  TraceInvalidated,    ///< completed, with N soft trace invalidations (3.4 #1/#2)
  FetchQueueMismatch,  ///< the hard `tracing error at step N` (3.4 #3)
  InflightParams,      ///< an in-flight / status assertion (3.4 #9-#11)
  RankDivergence,      ///< ranks disagree at an agreement check (3.4 #8)
  Hang,                ///< ranks issue different collectives: DeepSpeed would hang
  NotAvailable,        ///< a module computed with a parameter that was not gathered
  Error,               ///< any other DeepSpeed error (message says which)
};

/// resident-skip, residency-independent: the keys of an expect block and `--discovery` values.
inline constexpr base::EnumNames<Discovery::ResidencyIndependent> kDiscoveryNames(
    "resident-skip", "residency-independent");
/// pass, trace-invalidated, fetch-queue-mismatch, ...: the `outcome` values of expect blocks.
inline constexpr base::EnumNames<OutcomeKind::Error> kOutcomeNames("pass", "trace-invalidated",
                                                                   "fetch-queue-mismatch",
                                                                   "inflight-params",
                                                                   "rank-divergence", "hang",
                                                                   "not-available", "error");

inline std::string_view format_as(Discovery discovery) {
  return kDiscoveryNames[discovery];
}
inline std::string_view format_as(OutcomeKind kind) {
  return kOutcomeNames[kind];
}

}  // namespace zfetch::model

// fmt 10 formats an enum through format_as() returning a string; fmt 9 only through an integral
// format_as, so give it the equivalent formatters.
#if FMT_VERSION < 100000
template <typename Enum>
requires std::is_same_v<Enum, zfetch::model::Discovery> ||
    std::is_same_v<Enum, zfetch::model::OutcomeKind>
struct fmt::formatter<Enum> : fmt::formatter<std::string_view> {
  auto format(Enum value, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(zfetch::model::format_as(value), ctx);
  }
};
#endif
