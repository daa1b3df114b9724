// A located diagnostic: where in which file, how severe, what, and notes with their own
// locations. model/, trace/ and the diff all report bad input as these; diag/render.h
// turns them into compiler-style text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zfetch::diag {

/// A 1-based position in an input file. line == 0 means "no position" (whole file);
/// col == 0 means "the whole line" (the renderer prints `file:line:` and no caret).
struct SourceLoc {
  uint32_t line = 0;
  uint32_t col = 0;
};

enum class Severity : uint8_t { Error, Warning, Note };

/// A follow-up line of a diagnostic, with its own location (`note: did you mean 'x'?`).
struct Note {
  SourceLoc loc;
  std::string message;
  std::string source_line;  ///< the text of line `loc.line`, empty if none
  uint32_t length = 1;      ///< caret width under `source_line`
  std::string file;         ///< where `loc` is, when not the diagnostic's own file
};

/// One problem with the input. `source_line` is the offending line of the file so that the
/// renderer can print it with a caret under `loc.col`, `length` characters wide (at least 1).
struct Diagnostic {
  std::string file;
  SourceLoc loc;
  uint32_t length = 1;
  std::string message;
  std::string source_line;
  std::vector<Note> notes;
  Severity severity = Severity::Error;
};

using DiagnosticList = std::vector<Diagnostic>;

}  // namespace zfetch::diag
