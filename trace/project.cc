// Projection: the per-kind field table and the comparison of two events under a projection.
#include "trace/project.h"

#include <fmt/format.h>

#include <array>

#include "base/spellcheck.h"
#include "trace/names.h"

namespace zfetch::trace {
namespace {

constexpr FieldMask bit(Field f) {
  return field_bit(f);
}

constexpr std::array<std::string_view, static_cast<size_t>(Field::Count)> kFieldNames = {
    "engine", "step",   "micro_step", "phase", "kind", "trace_step", "module",
    "param",  "status", "numel",      "bytes", "rank", "t_ns",
};

constexpr FieldMask kEveryEvent = bit(Field::Engine) | bit(Field::Step) | bit(Field::MicroStep) |
                                  bit(Field::Phase) | bit(Field::Kind) | bit(Field::Rank) |
                                  bit(Field::TNs);

// The kinds a recorder of a real run writes as the simulator does (docs/deepspeed-validation.md,
// "Recorder"). Left out: engine_init, restart and checkpoint_* (bookkeeping placed differently by
// design), compute and transpose (not recorded), error (the outcome is compared instead).
constexpr std::array kRecordedKinds = {
    EventKind::PassStart,
    EventKind::TraceRecord,
    EventKind::TraceComplete,
    EventKind::TraceInvalidate,
    EventKind::ModulePre,
    EventKind::ModulePost,
    EventKind::BackwardPre,
    EventKind::BackwardPost,
    EventKind::Fetch,
    EventKind::Mismatch,
    EventKind::Gather,
    EventKind::Prefetch,
    EventKind::Wait,
    EventKind::QueuePop,
    EventKind::Release,
    EventKind::PartitionAll,
    EventKind::RecomputeAttach,
    EventKind::Access,
    EventKind::RegisterExternal,
    EventKind::GetterGather,
    EventKind::OptimizerStep,
    EventKind::PersistentGather,
};

uint32_t kind_bit(EventKind kind) {
  return uint32_t{1} << static_cast<unsigned>(kind);
}

// The module that owns `param` by its name: `a.b.weight` belongs to `a.b`, `weight` to the root
// (named as events name it, `<root>`).
std::string_view owner_of(std::string_view param) {
  const size_t dot = param.rfind('.');
  return dot == std::string_view::npos ? kRootModuleName : param.substr(0, dot);
}

}  // namespace

FieldMask kind_fields(EventKind kind) {
  const FieldMask module = bit(Field::Module);
  const FieldMask param = bit(Field::Param);
  const FieldMask step = bit(Field::TraceStep);
  const FieldMask sizes = bit(Field::Numel) | bit(Field::Bytes);
  switch (kind) {
  case EventKind::EngineInit:
  case EventKind::Restart:
  case EventKind::PassStart:
  case EventKind::TraceRecord:
  case EventKind::OptimizerStep:
  case EventKind::CheckpointSave:
  case EventKind::CheckpointLoad:
  case EventKind::EmptyPartitionCache:
    return 0;
  case EventKind::TraceComplete:
    return bit(Field::Numel);
  case EventKind::TraceInvalidate:
  case EventKind::ModulePre:
  case EventKind::ModulePost:
  case EventKind::BackwardPre:
  case EventKind::BackwardPost:
  case EventKind::Fetch:
  case EventKind::Mismatch:
  case EventKind::Error:
    return step | module;
  case EventKind::Gather:
  case EventKind::Prefetch:
  case EventKind::GetterGather:
  case EventKind::PersistentGather:
    return param | sizes;
  case EventKind::Wait:
  case EventKind::Release:
  case EventKind::PartitionAll:
    return param;
  case EventKind::QueuePop:
    return step | param;
  case EventKind::RecomputeAttach:
    return module | param;
  case EventKind::Access:
  case EventKind::RegisterExternal:
    return module | param | bit(Field::Status);
  case EventKind::Transpose:
    return param | bit(Field::Numel);
  case EventKind::Compute:
    return module;
  }
  return 0;
}

bool is_set_kind(EventKind kind) {
  return kind == EventKind::Gather || kind == EventKind::Prefetch || kind == EventKind::Wait ||
         kind == EventKind::Release;
}

bool Projection::selects(const Event& event) const {
  if ((kinds & kind_bit(event.kind)) == 0 || (rank >= 0 && event.rank != rank)) {
    return false;
  }
  return !(skip_own_access && event.kind == EventKind::Access &&
           owner_of(event.param) == event.module);
}

FieldMask Projection::fields_of(EventKind kind) const {
  return fields & (kEveryEvent | kind_fields(kind));
}

bool Projection::equal(const Event& a, const Event& b) const {
  if (a.kind != b.kind) {  // the kind is always compared: it says what the other fields mean
    return false;
  }
  const FieldMask f = fields_of(a.kind);
  const auto differs = [f](Field field, auto x, auto y) { return (f & bit(field)) != 0 && x != y; };
  if (differs(Field::Engine, a.engine, b.engine) || differs(Field::Step, a.step, b.step) ||
      differs(Field::MicroStep, a.micro_step, b.micro_step) ||
      differs(Field::Phase, a.phase, b.phase) ||
      differs(Field::TraceStep, a.trace_step, b.trace_step) ||
      differs(Field::Status, a.status, b.status) || differs(Field::Numel, a.numel, b.numel) ||
      differs(Field::Bytes, a.bytes, b.bytes) || differs(Field::Rank, a.rank, b.rank) ||
      differs(Field::TNs, a.t_ns, b.t_ns)) {
    return false;
  }
  if ((f & bit(Field::Module)) != 0 &&
      (a.module != b.module || (!ignore_ids && a.module_id != b.module_id))) {
    return false;
  }
  return (f & bit(Field::Param)) == 0 ||
         (a.param == b.param && (ignore_ids || a.param_id == b.param_id));
}

bool Projection::less(const Event& a, const Event& b) const {
  if (a.kind != b.kind) {
    return a.kind < b.kind;
  }
  const FieldMask f = fields_of(a.kind);
  if ((f & bit(Field::Param)) != 0 && a.param != b.param) {
    return a.param < b.param;
  }
  if ((f & bit(Field::Module)) != 0 && a.module != b.module) {
    return a.module < b.module;
  }
  const auto key = [&](const Event& e) {
    const auto pick = [f](Field field, int64_t v) { return (f & bit(field)) != 0 ? v : 0; };
    return std::array<int64_t, 12>{
        pick(Field::Engine, e.engine),
        pick(Field::Step, e.step),
        pick(Field::MicroStep, e.micro_step),
        pick(Field::Phase, static_cast<int64_t>(e.phase)),
        pick(Field::TraceStep, e.trace_step),
        pick(Field::Status, static_cast<int64_t>(e.status)),
        pick(Field::Numel, e.numel),
        pick(Field::Bytes, e.bytes),
        pick(Field::Rank, e.rank),
        pick(Field::TNs, e.t_ns),
        ignore_ids ? 0 : pick(Field::Param, e.param_id),
        ignore_ids ? 0 : pick(Field::Module, e.module_id),
    };
  };
  return key(a) < key(b);
}

std::string_view field_name(Field field) {
  return kFieldNames[static_cast<size_t>(field)];
}

std::optional<FieldMask> parse_fields(std::string_view list, std::string& error) {
  FieldMask mask = 0;
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    bool found = false;
    for (size_t i = 0; i < kFieldNames.size(); ++i) {
      if (kFieldNames[i] == name) {
        mask |= FieldMask{1} << i;
        found = true;
      }
    }
    if (!found) {
      error = fmt::format("unknown field '{}'", name);
      if (auto suggestion = base::closest_word(name, kFieldNames)) {
        error += fmt::format("; did you mean '{}'?", *suggestion);
      } else {
        error += fmt::format("; valid fields are: {}", fmt::join(kFieldNames, ", "));
      }
      return std::nullopt;
    }
    if (comma == std::string_view::npos) {
      return mask;
    }
    list.remove_prefix(comma + 1);
  }
}

std::optional<uint32_t> parse_kinds(std::string_view list, bool& skip_own_access,
                                    std::string& error) {
  uint32_t kinds = 0;
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    if (name == "recorded") {
      for (EventKind kind : kRecordedKinds) {
        kinds |= kind_bit(kind);
      }
      skip_own_access = true;
    } else if (auto kind = parse_event_kind(name)) {
      kinds |= kind_bit(*kind);
    } else {
      error = fmt::format("unknown kind '{}'", name);
      if (auto suggestion = base::closest_word(name, event_kind_names())) {
        error += fmt::format("; did you mean '{}'?", *suggestion);
      }
      return std::nullopt;
    }
    if (comma == std::string_view::npos) {
      return kinds;
    }
    list.remove_prefix(comma + 1);
  }
}

}  // namespace zfetch::trace
