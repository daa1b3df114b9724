// Writes events as JSON Lines (docs/trace-format.md) through one reusable buffer.
#pragma once

#include <fmt/format.h>

#include <cstdio>

#include "trace/event.h"
#include "trace/header.h"
#include "trace/sink.h"

namespace zfetch::trace {

/// An EventSink that writes the header line, then one flat JSON object per event, with the
/// fixed key order of docs/trace-format.md. Byte-deterministic: the same events give the same
/// bytes. Allocates nothing per event once its buffer has grown to a chunk: lines are built in
/// one buffer, of which `out` gets whole chunks of kChunkBytes, and the rest at flush().
class TraceWriter final : public EventSink {
 public:
  /// Each write to `out` but the last is this long, so each starts at a multiple of it from the
  /// trace's start: the page cache can then keep a chunk as one 2 MiB folio, which a reader of
  /// the file maps with one page-table entry instead of 512 (docs/diff.md "Speed").
  static constexpr size_t kChunkBytes = size_t{2} << 20;

  /// Writes to `out` (not owned; the caller closes it, and may write to it before and after).
  /// A regular file is written through its descriptor, since stdio would fill its own buffer
  /// first and split every chunk: `out` is flushed here, which hands its position over to the
  /// descriptor (POSIX, "Interaction of File Descriptors and Standard I/O Streams"), and its
  /// buffering is left as the caller set it. Anything else (a pipe, a memory stream) is
  /// written through `out`. The header line is buffered at once.
  TraceWriter(std::FILE* out, const TraceHeader& header);
  /// Flushes what is buffered; a write error there is lost, so call flush() to see it.
  ~TraceWriter() override;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void on_event(const Event& event) override;

  /// Writes everything buffered to `out` and fflush()es it; false if any write so far failed.
  bool flush();
  /// False once a write to `out` has failed (disk full, closed pipe).
  [[nodiscard]] bool ok() const { return ok_; }
  /// The errno of the first failed write; 0 while ok() or when the failure set none. A failed
  /// write to a regular file is not in ferror(out): the caller learns of it here.
  [[nodiscard]] int error_number() const { return error_number_; }
  /// Bytes produced so far (header included), whether or not they reached `out` yet.
  [[nodiscard]] uint64_t bytes_written() const { return bytes_ + buffer_.size(); }

 private:
  // Writes every whole chunk of the buffer and keeps the rest (less than a chunk).
  void write_chunks();
  // Writes the whole buffer.
  void write_all();
  void write(const char* data, size_t size);

  // Records the first failure and its errno.
  void fail(int error_number);

  std::FILE* out_;
  int fd_ = -1;  // out_'s descriptor when it is a regular file, written directly; else -1
  fmt::memory_buffer buffer_;
  uint64_t bytes_ = 0;
  bool ok_ = true;
  int error_number_ = 0;
};

}  // namespace zfetch::trace
