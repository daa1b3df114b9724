// Renders diagnostics the way clang and ninja do (style.md 7.5).
#include "diag/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

#include "base/enum_names.h"
#include "base/text_bytes.h"

namespace zfetch::diag {

namespace {

// `text` with each byte that is not printable text shown as '?' (one byte for one, so the caret
// still lines up): a NUL, a control byte other than a tab or newline, a byte of invalid UTF-8. A
// quoted line, and a name or path in a message, come from the user's input and must not put
// invalid text or terminal controls (an escape sequence) into ours.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x80) {
      const size_t length = base::utf8_length_at(text.substr(i));
      out.append(length == 0 ? std::string_view("?") : text.substr(i, length));
      i += std::max<size_t>(length, 1);
      continue;
    }
    out += (byte < 0x20 && byte != '\t' && byte != '\n') || byte == 0x7F ? '?'
                                                                         : static_cast<char>(byte);
    ++i;
  }
  return out;
}

std::string location(const std::string& file, SourceLoc loc) {
  if (loc.line == 0) {
    return printable(file);
  }
  if (loc.col == 0) {
    return fmt::format("{}:{}", printable(file), loc.line);
  }
  return fmt::format("{}:{}:{}", printable(file), loc.line, loc.col);
}

constexpr base::EnumNames<Severity::Note> kSeverityNames("error", "warning", "note");

// The most of a source line quoted: a longer line (a minified JSON file, a generated scenario)
// is shown as the part around the column, "..." marking what is cut.
constexpr size_t kMaxQuotedBytes = 160;

// The part of `line` quoted for a caret at byte `column` (0-based): [begin, end), at most
// kMaxQuotedBytes, centred on the column where the line allows, cut between UTF-8 characters.
std::pair<size_t, size_t> quoted_part(const std::string& line, size_t column) {
  if (line.size() <= kMaxQuotedBytes) {
    return {0, line.size()};
  }
  size_t begin = column > kMaxQuotedBytes / 2 ? column - kMaxQuotedBytes / 2 : 0;
  begin = std::min(begin, line.size() - kMaxQuotedBytes);
  size_t end = begin + kMaxQuotedBytes;
  auto continuation = [&](size_t i) {
    return i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80;
  };
  while (begin > 0 && continuation(begin)) {
    --begin;
  }
  while (end < line.size() && continuation(end)) {
    --end;
  }
  return {begin, end};
}

// The quoted line and a caret under column `col`. Tabs before the caret are copied so the
// caret lines up in a terminal whatever its tab width.
void quote(std::string& out, const std::string& line, SourceLoc loc, uint32_t length) {
  if (loc.line == 0 || line.empty()) {
    return;
  }
  const size_t column = loc.col == 0 ? 0 : loc.col - 1;
  const auto [begin, end] = quoted_part(line, column);
  const std::string_view cut_mark = "...";
  const std::string_view head = begin > 0 ? cut_mark : "";
  out += head;
  out += printable(std::string_view(line).substr(begin, end - begin));
  out += end < line.size() ? cut_mark : "";
  out += '\n';
  if (loc.col == 0) {
    return;
  }
  out.append(head.size(), ' ');
  for (size_t i = begin; i < column; ++i) {
    out += i < line.size() && line[i] == '\t' ? '\t' : ' ';
  }
  out += '^';
  // A cut line: the tildes stop where its quoted part does.
  const size_t room = end == line.size() ? SIZE_MAX : end > column + 1 ? end - column - 1 : 0;
  out.append(std::min<size_t>(length > 1 ? length - 1 : 0, room), '~');
  out += '\n';
}

}  // namespace

std::string render(const Diagnostic& diagnostic) {
  std::string out = fmt::format("{}: {}: {}\n", location(diagnostic.file, diagnostic.loc),
                                kSeverityNames[diagnostic.severity], printable(diagnostic.message));
  quote(out, diagnostic.source_line, diagnostic.loc, diagnostic.length);
  for (const Note& note : diagnostic.notes) {
    const std::string& file = note.file.empty() ? diagnostic.file : note.file;
    out += fmt::format("{}: note: {}\n", location(file, note.loc), printable(note.message));
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
  return fmt::format("{}: {}", location(diagnostic.file, diagnostic.loc),
                     printable(diagnostic.message));
}

}  // namespace zfetch::diag
