// Renders diagnostics the way clang and ninja do (style.md 7.5).
#include "diag/render.h"

#include <fmt/format.h>

#include "base/enum_names.h"

namespace zfetch::diag {

namespace {

std::string location(const std::string& file, SourceLoc loc) {
  if (loc.line == 0) {
    return file;
  }
  if (loc.col == 0) {
    return fmt::format("{}:{}", file, loc.line);
  }
  return fmt::format("{}:{}:{}", file, loc.line, loc.col);
}

constexpr base::EnumNames<Severity::Note> kSeverityNames("error", "warning", "note");

// The quoted line and a caret under column `col`. Tabs before the caret are copied so the
// caret lines up in a terminal whatever its tab width.
void quote(std::string& out, const std::string& line, SourceLoc loc, uint32_t length) {
  if (loc.line == 0 || line.empty()) {
    return;
  }
  out += line;
  out += '\n';
  if (loc.col == 0) {
    return;
  }
  for (size_t i = 0; i + 1 < loc.col; ++i) {
    out += i < line.size() && line[i] == '\t' ? '\t' : ' ';
  }
  out += '^';
  out.append(length > 1 ? length - 1 : 0, '~');
  out += '\n';
}

}  // namespace

std::string render(const Diagnostic& diagnostic) {
  std::string out = fmt::format("{}: {}: {}\n", location(diagnostic.file, diagnostic.loc),
                                kSeverityNames[diagnostic.severity], diagnostic.message);
  quote(out, diagnostic.source_line, diagnostic.loc, diagnostic.length);
  for (const Note& note : diagnostic.notes) {
    const std::string& file = note.file.empty() ? diagnostic.file : note.file;
    out += fmt::format("{}: note: {}\n", location(file, note.loc), note.message);
    quote(out, note.source_line, note.loc, note.length);
  }
  return out;
}

std::string render(const DiagnosticList& diagnostics) {
  std::string out;
  for (const Diagnostic& diagnostic : diagnostics) {
    out += render(diagnostic);
  }
  return out;
}

std::string render_one_line(const Diagnostic& diagnostic) {
  return fmt::format("{}: {}", location(diagnostic.file, diagnostic.loc), diagnostic.message);
}

}  // namespace zfetch::diag
