// format_event / parse_event: the key=value event text; the key order matches the JSON writer.
#include "trace/text_format.h"

#include <array>
#include <charconv>
#include <iterator>

#include "trace/names.h"

namespace zfetch::trace {
namespace {

constexpr std::string_view kRootName = "<root>";

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
  kModule,
  kModuleId,
  kParam,
  kParamId,
  kStatus,
  kNumel,
  kBytes,
  kGroup,
  kKeyCount,
};
constexpr std::array<std::string_view, kKeyCount> kKeyNames = {
    "seq",      "t_ns",   "rank",       "engine", "step",      "micro_step",
    "phase",    "kind",   "trace_step", "module", "module_id", "param",
    "param_id", "status", "numel",      "bytes",  "group",
};
constexpr uint32_t kRequiredKeys = (1U << (kKind + 1)) - 1;  // seq .. kind

bool needs_quotes(std::string_view name) {
  return name.empty() || name.find_first_of(" \t=\"\\") != std::string_view::npos ||
         name == kRootName;
}

// The root module ("") is shown as <root>; any other empty name (never a real param) as "".
void append_name(std::string_view name, bool is_module, fmt::memory_buffer& out) {
  if (is_module && name.empty()) {
    out.append(kRootName);
    return;
  }
  if (!needs_quotes(name)) {
    out.append(name);
    return;
  }
  out.push_back('"');
  for (char c : name) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  out.push_back('"');
}

}  // namespace

void append_event(const Event& e, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "seq={} t_ns={} rank={} engine={} step={} micro_step={} phase={} kind={}",
                 e.seq, e.t_ns, e.rank, e.engine, e.step, e.micro_step, format_as(e.phase),
                 format_as(e.kind));
  if (e.trace_step >= 0) {
    fmt::format_to(it, " trace_step={}", e.trace_step);
  }
  if (e.module_id >= 0) {
    out.append(std::string_view(" module="));
    append_name(e.module, true, out);
    fmt::format_to(it, " module_id={}", e.module_id);
  }
  if (e.param_id >= 0) {
    out.append(std::string_view(" param="));
    append_name(e.param, false, out);
    fmt::format_to(it, " param_id={}", e.param_id);
  }
  if (e.status != Status::None) {
    fmt::format_to(it, " status={}", format_as(e.status));
  }
  if (e.numel >= 0) {
    fmt::format_to(it, " numel={}", e.numel);
  }
  if (e.bytes >= 0) {
    fmt::format_to(it, " bytes={}", e.bytes);
  }
  if (e.group >= 0) {
    fmt::format_to(it, " group={}", e.group);
  }
}

std::string format_event(const Event& event) {
  fmt::memory_buffer out;
  append_event(event, out);
  return fmt::to_string(out);
}

std::optional<Event> parse_event(std::string_view line, std::string& scratch, std::string& error) {
  // Quoted names are unescaped into `scratch`; reserve the worst case first so that views into
  // it are not invalidated by a later append.
  scratch.clear();
  scratch.reserve(line.size());
  Event e;
  uint32_t seen = 0;
  size_t pos = 0;
  const auto fail = [&](std::string message) -> std::optional<Event> {
    error = std::move(message);
    return std::nullopt;
  };
  while (true) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) {
      ++pos;
    }
    if (pos == line.size()) {
      break;
    }
    const size_t equals = line.find('=', pos);
    const size_t space = line.find_first_of(" \t", pos);
    if (equals == std::string_view::npos || equals > space) {
      return fail(fmt::format("expected key=value, got '{}'", line.substr(pos, space - pos)));
    }
    const std::string_view key = line.substr(pos, equals - pos);
    pos = equals + 1;
    std::string_view value;
    bool quoted = false;
    if (pos < line.size() && line[pos] == '"') {
      quoted = true;
      const size_t start = scratch.size();
      ++pos;
      while (pos < line.size() && line[pos] != '"') {
        if (line[pos] == '\\' && pos + 1 < line.size()) {
          ++pos;
        }
        scratch.push_back(line[pos++]);
      }
      if (pos == line.size()) {
        return fail(fmt::format("unterminated quoted value for '{}'", key));
      }
      ++pos;  // closing quote
      value = std::string_view(scratch).substr(start);
    } else {
      const size_t stop = line.find_first_of(" \t", pos);
      value =
          line.substr(pos, stop == std::string_view::npos ? std::string_view::npos : stop - pos);
      pos = stop == std::string_view::npos ? line.size() : stop;
    }
    int index = -1;
    for (size_t i = 0; i < kKeyCount; ++i) {
      if (kKeyNames[i] == key) {
        index = static_cast<int>(i);
      }
    }
    if (index < 0) {
      if (auto suggestion = closest_name(key, kKeyNames)) {
        return fail(fmt::format("unknown key '{}'; did you mean '{}'?", key, *suggestion));
      }
      return fail(fmt::format("unknown key '{}'", key));
    }
    const uint32_t bit = 1U << index;
    if ((seen & bit) != 0) {
      return fail(fmt::format("duplicate key '{}'", key));
    }
    seen |= bit;
    const auto parse_integer = [&](auto& field) {
      using Field = std::remove_reference_t<decltype(field)>;
      Field parsed{};
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
        error = fmt::format("expected integer for '{}', got '{}'", key, value);
        return false;
      }
      field = parsed;
      return true;
    };
    bool ok = true;
    switch (index) {
    case kSeq:
      ok = parse_integer(e.seq);
      break;
    case kTNs:
      ok = parse_integer(e.t_ns);
      break;
    case kRank:
      ok = parse_integer(e.rank);
      break;
    case kEngine:
      ok = parse_integer(e.engine);
      break;
    case kStep:
      ok = parse_integer(e.step);
      break;
    case kMicroStep:
      ok = parse_integer(e.micro_step);
      break;
    case kTraceStep:
      ok = parse_integer(e.trace_step);
      break;
    case kModuleId:
      ok = parse_integer(e.module_id);
      break;
    case kParamId:
      ok = parse_integer(e.param_id);
      break;
    case kNumel:
      ok = parse_integer(e.numel);
      break;
    case kBytes:
      ok = parse_integer(e.bytes);
      break;
    case kGroup:
      ok = parse_integer(e.group);
      break;
    case kModule:
      e.module = (!quoted && value == kRootName) ? std::string_view() : value;
      break;
    case kParam:
      e.param = value;
      break;
    case kPhase:
      if (auto phase = parse_phase(value)) {
        e.phase = *phase;
      } else {
        return fail(fmt::format("unknown phase '{}'", value));
      }
      break;
    case kKind:
      if (auto kind = parse_event_kind(value)) {
        e.kind = *kind;
      } else {
        return fail(fmt::format("unknown kind '{}'", value));
      }
      break;
    case kStatus:
      if (auto status = parse_status(value)) {
        e.status = *status;
      } else {
        return fail(fmt::format("unknown status '{}'", value));
      }
      break;
    default:
      break;
    }
    if (!ok) {
      return std::nullopt;
    }
  }
  for (size_t i = 0; i < kKeyCount; ++i) {
    if ((kRequiredKeys & (1U << i)) != 0 && (seen & (1U << i)) == 0) {
      return fail(fmt::format("missing key '{}'", kKeyNames[i]));
    }
  }
  if (((seen >> kModule) & 1U) != ((seen >> kModuleId) & 1U)) {
    return fail("'module' and 'module_id' go together");
  }
  if (((seen >> kParam) & 1U) != ((seen >> kParamId) & 1U)) {
    return fail("'param' and 'param_id' go together");
  }
  return e;
}

}  // namespace zfetch::trace
