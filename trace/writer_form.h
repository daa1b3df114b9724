// The trace reader's fast path: an event line in exactly the form TraceWriter writes it.
#pragma once

#include <cstddef>

#include "trace/event.h"

namespace zfetch::trace {

/// How many readable bytes must follow a line's newline for parse_writer_form: it loads 8 and
/// 16 bytes at a time without checking where the line ends (the newline stops every match).
inline constexpr size_t kWriterFormPadding = 32;

/// Parses [first, last) (`*last` is the line's '\n', followed by kWriterFormPadding readable
/// bytes) if it is in the writer's own form: the keys in the writer's order, no whitespace,
/// integers without a sign or leading zero where the field cannot be negative and of at most 18
/// digits, names without escapes or control bytes. Anything else returns false with `e` in an
/// unspecified state, and the general parser must read the line, so this only has to be right
/// about the lines it accepts. Names in `e` are views into the line.
bool parse_writer_form(const char* first, const char* last, Event& e);

}  // namespace zfetch::trace
