// Renders diagnostics the way clang and ninja do (style.md 7.5).
#include "tools/diagnostic_render.h"

#include <fmt/format.h>

namespace zfetch::tools {

namespace {

std::string location(const std::string& file, model::SourceLoc loc) {
  if (loc.line == 0) {
    return file;
  }
  return fmt::format("{}:{}:{}", file, loc.line, loc.col);
}

// The quoted line and a caret under column `col`. Tabs before the caret are copied so the
// caret lines up in a terminal whatever its tab width.
void quote(std::string& out, const std::string& line, uint32_t col, uint32_t length) {
  out += line;
  out += '\n';
  for (size_t i = 0; i + 1 < col; ++i) {
    out += i < line.size() && line[i] == '\t' ? '\t' : ' ';
  }
  out += '^';
  out.append(length > 1 ? length - 1 : 0, '~');
  out += '\n';
}

}  // namespace

std::string render_diagnostic(const model::Diagnostic& diagnostic) {
  std::string out =
      fmt::format("{}: error: {}\n", location(diagnostic.file, diagnostic.loc), diagnostic.message);
  if (diagnostic.loc.line != 0 && !diagnostic.source_line.empty()) {
    quote(out, diagnostic.source_line, diagnostic.loc.col, diagnostic.length);
  }
  for (const model::Note& note : diagnostic.notes) {
    const std::string& file = note.file.empty() ? diagnostic.file : note.file;
    out += fmt::format("{}: note: {}\n", location(file, note.loc), note.message);
    if (note.loc.line != 0 && !note.source_line.empty()) {
      quote(out, note.source_line, note.loc.col, note.length);
    }
  }
  return out;
}

}  // namespace zfetch::tools
