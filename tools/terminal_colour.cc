// ANSI colour for terminals (see terminal_colour.h).
#include "tools/terminal_colour.h"

#include <unistd.h>

#include <cstdlib>

namespace zfetch::tools {

bool colour_wanted(std::FILE* stream) {
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && no_colour[0] != '\0') {
    return false;
  }
  return isatty(fileno(stream)) != 0;
}

std::string paint(std::string_view text, Colour colour, bool enabled) {
  if (!enabled) {
    return std::string(text);
  }
  std::string_view start;
  switch (colour) {
  case Colour::Pass:
    start = "\x1b[1;32m";
    break;
  case Colour::Failure:
    start = "\x1b[1;31m";
    break;
  case Colour::Warning:
    start = "\x1b[1;35m";
    break;
  case Colour::Heading:
    start = "\x1b[1m";
    break;
  }
  std::string out;
  out.reserve(start.size() + text.size() + 4);
  out.append(start);
  out.append(text);
  out.append("\x1b[0m");
  return out;
}

}  // namespace zfetch::tools
