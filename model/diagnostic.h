// Diagnostics about user input: a location, a message and notes; tools/ renders them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zfetch::model {

/// A 1-based position in an input file. line == 0 means "no position" (whole file).
struct SourceLoc {
  uint32_t line = 0;
  uint32_t col = 0;
};

/// A follow-up line of a diagnostic, with its own location (`note: did you mean 'x'?`).
struct Note {
  SourceLoc loc;
  std::string message;
  std::string source_line;  ///< the text of line `loc.line`, empty if none
  uint32_t length = 1;      ///< caret width under `source_line`
  std::string file;         ///< where `loc` is, when not the diagnostic's own file
};

/// One error about the input. `source_line` is the offending line of the file so that the
/// renderer can print it with a caret under `loc.col`, `length` characters wide (at least 1).
struct Diagnostic {
  std::string file;
  SourceLoc loc;
  uint32_t length = 1;
  std::string message;
  std::string source_line;
  std::vector<Note> notes;
};

using DiagnosticList = std::vector<Diagnostic>;

}  // namespace zfetch::model
