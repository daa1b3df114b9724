// The projection a diff compares events on: which fields, which kinds, which ranks, ids or not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trace/event.h"

namespace zfetch::trace {

/// A field an event can be compared on. The bit of field f in a mask is 1 << f.
enum class Field : uint8_t {
  Engine,
  Step,
  MicroStep,
  Phase,
  Kind,
  TraceStep,
  Module,  ///< the module's name, and its id unless ids are ignored
  Param,   ///< the param's name, and its id unless ids are ignored
  Status,
  Numel,
  Bytes,
  Rank,
  TNs,
  Count,
};

using FieldMask = uint32_t;
constexpr FieldMask field_bit(Field f) {
  return FieldMask{1} << static_cast<unsigned>(f);
}

/// What two events are compared on. Within the chosen fields, an event is compared only on
/// those its kind identifies itself by (kind_fields): a gather by its param, a fetch by its
/// module, so that a field one side writes and the other leaves out never makes a difference.
struct Projection {
  /// engine, step, micro_step, phase, kind, module, param.
  static constexpr FieldMask kDefaultFields = field_bit(Field::Engine) | field_bit(Field::Step) |
                                              field_bit(Field::MicroStep) |
                                              field_bit(Field::Phase) | field_bit(Field::Kind) |
                                              field_bit(Field::Module) | field_bit(Field::Param);

  FieldMask fields = kDefaultFields;
  uint32_t kinds = ~uint32_t{0};  ///< bit per EventKind: the kinds compared; others are skipped
  bool ignore_ids = false;        ///< compare module and param by name only
  /// Leave out `access` events of a module's own params: a recorder of a real run sees only
  /// reads of another module's params (set by the `recorded` kind list).
  bool skip_own_access = false;
  int32_t rank = -1;  ///< compare only this rank's events; -1: every rank

  /// True if `event` takes part in the comparison (its kind, its rank).
  [[nodiscard]] bool selects(const Event& event) const;
  /// The fields compared for an event of `kind`: `fields` within what the kind identifies.
  [[nodiscard]] FieldMask fields_of(EventKind kind) const;
  /// True if `a` and `b` are the same under this projection.
  [[nodiscard]] bool equal(const Event& a, const Event& b) const;
  /// A strict order under this projection, for comparing sets of events by sorting them.
  [[nodiscard]] bool less(const Event& a, const Event& b) const;
};

/// Every field a kind is identified by (besides engine, step, micro_step, phase, kind, rank and
/// t_ns, which every event has): the fields that a simulated trace and one recorded from real
/// DeepSpeed both write for it.
FieldMask kind_fields(EventKind kind);

/// True if events of `kind` that come one after the other with the same group (and the same
/// engine, step, micro-step, phase) form a set: DeepSpeed takes the params of one coalesced
/// gather, wait or release from a Python set, whose order no run reproduces.
bool is_set_kind(EventKind kind);

/// Parses a comma-separated field list (`engine,step,param`); the names are those of the
/// trace file (`module`, `trace_step`, ...). On failure returns nullopt and sets `error`.
std::optional<FieldMask> parse_fields(std::string_view list, std::string& error);

/// Parses a comma-separated kind list (`fetch,release`); `recorded` stands for the kinds that
/// a recorder of a real DeepSpeed run writes the way the simulator does. Sets `skip_own_access`
/// when `recorded` is used. On failure returns nullopt and sets `error`.
std::optional<uint32_t> parse_kinds(std::string_view list, bool& skip_own_access,
                                    std::string& error);

/// The name of a field as in the trace file and --fields.
std::string_view field_name(Field field);

}  // namespace zfetch::trace
