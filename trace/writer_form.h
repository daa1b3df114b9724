// The trace reader's fast path: an event line in exactly the form TraceWriter writes it.
#pragma once

#include <cstddef>

#include "trace/event.h"

namespace zfetch::trace {

/// How many readable bytes must follow a line's newline for parse_writer_form: it loads 8 and
/// 16 bytes at a time without checking where the line ends (the newline stops every match).
inline constexpr size_t kWriterFormPadding = 32;

/// Parses the line at `first` if it is in the writer's own form, and returns its end (the
/// '\n' after it); the line's newline must be followed by kWriterFormPadding readable bytes,
/// and nothing past those is read, so the caller need not have found the line's end first. The
/// writer's form: the keys in the writer's order, no whitespace, integers without a sign or
/// leading zero where the field cannot be negative and of at most 18 digits, names without
/// escapes or control bytes. Anything else returns nullptr with `e` in an unspecified state,
/// and the general parser must read the line, so this only has to be right about the lines it
/// accepts. Names in `e` are views into the line.
const char* parse_writer_form(const char* first, Event& e);

}  // namespace zfetch::trace
