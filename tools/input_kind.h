// Telling a zfetch trace from a scenario or an order file by what the file holds, whatever it is
// called: `zfetch validate`, `diff`, `run` and `check` all decide the same way.
#pragma once

#include <string>
#include <string_view>

namespace zfetch::tools {

/// True when the file at `path` starts with a zfetch trace header (a JSON object whose
/// "format" is "zfetch-trace", as trace::TraceWriter writes it or a recorder with other
/// spacing). When the file cannot be read, a name ending in ".jsonl" decides, so that the error
/// comes from the reader the user meant.
bool is_trace_file(const std::string& path);

/// The same test on text already read (a pipe, which cannot be looked at and read again).
bool is_trace_text(std::string_view text);

}  // namespace zfetch::tools
