// Streaming reader of JSON Lines traces: one event at a time, errors as located diagnostics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>

#include "diag/diagnostic.h"
#include "io/input_file.h"
#include "trace/event.h"
#include "trace/header.h"

namespace zfetch::trace {

/// The longest line the reader accepts, newline excluded: as much as an input file may hold
/// (64 MiB). A trace line is one event of a few hundred bytes; input that never ends a line
/// (/dev/zero, a binary file) stops here with an error instead of a buffer that grows with it.
inline constexpr size_t kMaxTraceLineBytes = io::kMaxInputFileBytes;

/// Reads a trace line by line. Events returned by next() stay valid until the next call.
/// After an error, every event before the bad line has been returned.
class TraceReader {
 public:
  /// Reads from `in`; `file_name` is used in errors.
  TraceReader(std::istream& in, std::string file_name);
  /// Reads the file `in` opened: mapped a window at a time when it is a regular file (no copy
  /// of its bytes), read through in.stream() otherwise. `in` must outlive the reader.
  TraceReader(io::InputStream& in, std::string file_name);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  /// Parses the header line; false (and error() set) if it is missing, malformed or of
  /// another version.
  bool read_header();
  [[nodiscard]] const TraceHeader& header() const;

  /// The next event, or nullptr at the end of the file or at an error (then error() is set).
  const Event* next();

  /// The problem that stopped the reader: `file:line:col`, the message, the offending line
  /// with a caret under the key or value at fault, and notes where another line is involved.
  [[nodiscard]] const std::optional<diag::Diagnostic>& error() const;
  /// 1-based number of the last line read.
  [[nodiscard]] uint64_t line() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace zfetch::trace
