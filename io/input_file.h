// Reading an input file whole, with a size cap: a directory, a device or an endless stream is an
// error that says what the path is, never a hang or an unbounded allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace zfetch::io {

/// The most zfetch reads from one scenario, ds_config or calibration file: 64 MiB. Far above
/// any real model description (a 10^5-module scenario is about 6 MB), far below what would
/// exhaust a machine's memory while it is parsed.
inline constexpr size_t kMaxInputFileBytes = size_t{64} << 20;

/// The text of a file, or why it could not be read.
struct InputText {
  std::optional<std::string> text;
  /// When `text` is empty: what is wrong, phrased to follow the path ("is a directory",
  /// "is larger than the 64 MiB limit for input files", "No such file or directory"), or
  /// for a byte no text input holds, what it is ("a NUL byte ...": see base/text_bytes.h).
  std::string error;
  /// For such a byte: its 1-based line and column (in bytes), and that line for quoting. Line 0
  /// for every other error.
  uint32_t error_line = 0;
  uint32_t error_col = 0;
  std::string error_source_line;
};

/// Reads the whole file at `path`, at most `limit` bytes, as UTF-8 text: a NUL byte or invalid
/// UTF-8 is an error with its position (error_line). A directory is refused (never read
/// as an empty file); a FIFO, a character device or any other non-regular file is read up to
/// `limit` bytes, and more than that is an error (so /dev/zero fails fast). A FIFO without a
/// writer reads as empty instead of blocking.
InputText read_input_file(const std::string& path, size_t limit = kMaxInputFileBytes);

/// The same check for text that did not come from a file (a test, a fuzzer, an embedding
/// program): nothing when `text` is UTF-8 without NUL bytes, else the error as read_input_file
/// gives it.
std::optional<InputText> check_text(std::string_view text);

/// A file opened for streaming (a trace, read line by line): what the reader caps is the
/// length of a line, not the file. Opened as read_input_file does, so a directory is an
/// error and a FIFO without a writer reads as empty instead of blocking.
class InputStream {
 public:
  /// Opens `path`; check error() before reading.
  explicit InputStream(const std::string& path);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  /// Empty when the file is open; otherwise what is wrong, phrased as read_input_file's.
  [[nodiscard]] const std::string& error() const { return error_; }
  /// The content; reading fails (badbit) on a read error.
  [[nodiscard]] std::istream& stream();
  /// The descriptor of the file when it is a regular one, which a reader may map instead of
  /// reading it through stream() (io/mapped_window.h); -1 for a FIFO, a device or an error.
  [[nodiscard]] int regular_file_descriptor() const { return regular_fd_; }

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::istream> stream_;
  std::string error_;
  int regular_fd_ = -1;
};

/// True when `path` is a regular file (so its first bytes can be looked at without waiting).
bool is_regular_file(const std::string& path);

/// "64 MiB": a byte count as a person reads a limit.
std::string describe_limit(size_t bytes);

}  // namespace zfetch::io
