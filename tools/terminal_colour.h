// Colour on a terminal, as compilers colour diagnostics: only when the stream is a TTY and
// NO_COLOR (https://no-color.org) is unset or empty.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace zfetch::tools {

enum class Colour : uint8_t {
  Pass,     ///< bold green
  Failure,  ///< bold red
  Warning,  ///< bold magenta, as clang's warnings
  Heading,  ///< bold
};

/// Whether text written to `stream` should be coloured.
bool colour_wanted(std::FILE* stream);

/// `text` wrapped in the ANSI sequence of `colour` and a reset when `enabled`; else `text`.
std::string paint(std::string_view text, Colour colour, bool enabled);

}  // namespace zfetch::tools
