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
/// bytes. Allocates nothing per event: lines are built in one buffer that is written to `out`
/// in chunks of about kChunkBytes and cleared, keeping its capacity.
class TraceWriter final : public EventSink {
 public:
  static constexpr size_t kChunkBytes = 1 << 16;

  /// Writes to `out` (not owned; the caller closes it). The header line is buffered at once.
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
  /// Bytes produced so far (header included), whether or not they reached `out` yet.
  [[nodiscard]] uint64_t bytes_written() const { return bytes_ + buffer_.size(); }

 private:
  void write_chunk();

  std::FILE* out_;
  fmt::memory_buffer buffer_;
  uint64_t bytes_ = 0;
  bool ok_ = true;
};

}  // namespace zfetch::trace
