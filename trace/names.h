// Names of EventKind, Phase and Status as they appear in trace files, and their inverses.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

#include "trace/event.h"

namespace zfetch::trace {

/// The snake_case `kind` value of a trace line (fmt formats an EventKind through this).
std::string_view format_as(EventKind kind);
/// The `phase` value: none, fwd, bwd, recompute, eval, optimizer, checkpoint.
std::string_view format_as(Phase phase);
/// The `status` value: AV, NA, IF; "" for Status::None (never written).
std::string_view format_as(Status status);

/// Inverses of format_as; nullopt for a name that is not in the table.
std::optional<EventKind> parse_event_kind(std::string_view name);
std::optional<Phase> parse_phase(std::string_view name);
/// Accepts AV, NA, IF only (Status::None has no name).
std::optional<Status> parse_status(std::string_view name);

/// Every valid name, in enum order (for "valid values are" lists and did-you-mean).
std::span<const std::string_view> event_kind_names();
std::span<const std::string_view> phase_names();
std::span<const std::string_view> status_names();

/// How every output names the root module. Its qualified name is "" (DeepSpeed's
/// `named_modules()` name, which traces keep); what people read shows this instead.
inline constexpr std::string_view kRootModuleName = "<root>";

/// `qualified`, or kRootModuleName for the root ("").
constexpr std::string_view display_module_name(std::string_view qualified) {
  return qualified.empty() ? kRootModuleName : qualified;
}

}  // namespace zfetch::trace

// fmt 10 formats an enum through format_as() returning a string; fmt 9 (Ubuntu 24.04's) only
// through an integral format_as, so give it the equivalent formatters.
#if FMT_VERSION < 100000
template <typename Enum>
requires std::is_same_v<Enum, zfetch::trace::EventKind> ||
    std::is_same_v<Enum, zfetch::trace::Phase> || std::is_same_v<Enum, zfetch::trace::Status>
struct fmt::formatter<Enum> : fmt::formatter<std::string_view> {
  auto format(Enum value, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(zfetch::trace::format_as(value), ctx);
  }
};
#endif
