// Compiler-style text for model::Diagnostic: `file:line:col: error: ...`, source line, caret.
#pragma once

#include <string>

#include "model/diagnostic.h"

namespace zfetch::tools {

/// `diagnostic` as the lines a compiler prints, each ending in '\n': the error line, the
/// quoted source line with a caret line (`^~~~`, `length` wide), then each note, quoting its
/// own line when it has one. Without a location the first line is `file: error: message`.
std::string render_diagnostic(const model::Diagnostic& diagnostic);

}  // namespace zfetch::tools
