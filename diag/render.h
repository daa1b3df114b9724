// Compiler-style text for diag::Diagnostic: `file:line:col: error: ...`, source line, caret.
#pragma once

#include <string>

#include "diag/diagnostic.h"

namespace zfetch::diag {

/// `diagnostic` as the lines a compiler prints, each ending in '\n': the error line, the
/// quoted source line with a caret line (`^~~~`, `length` wide), then each note, quoting its
/// own line when it has one. Without a location the first line is `file: error: message`;
/// with a line but no column it is `file:line: error: message` and no caret.
std::string render(const Diagnostic& diagnostic);

/// Every diagnostic of `diagnostics`, rendered one after the other.
std::string render(const DiagnosticList& diagnostics);

/// One line, `file:line:col: message` (or `file: message`), for places such as a table cell
/// where a multi-line rendering does not fit; notes are left out.
std::string render_one_line(const Diagnostic& diagnostic);

}  // namespace zfetch::diag
