// A regular file read through one read-only memory map at a time, moved along the file: the
// bytes are read where the kernel keeps them, with no copy into a buffer, and the memory used
// stays at one window however long the file is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace zfetch::io {

/// A window of a regular file. map() replaces the window; the previous one's bytes are gone.
class MappedWindow {
 public:
  /// Maps from `fd` (a regular file, which the caller keeps open while this lives).
  explicit MappedWindow(int fd) : fd_(fd) {}
  ~MappedWindow();
  MappedWindow(const MappedWindow&) = delete;
  MappedWindow& operator=(const MappedWindow&) = delete;

  /// Maps at least `length` bytes from `offset`, or up to the end of the file if that comes
  /// first (the size is read again on each call, so a file still being written is read as far
  /// as it has grown). False, with error() set, if the file cannot be mapped.
  bool map(uint64_t offset, size_t length);
  /// The byte at the `offset` of the last map(), and how many follow it in the window.
  [[nodiscard]] const char* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }
  /// The window ends where the file did when it was mapped.
  [[nodiscard]] bool reaches_end() const { return reaches_end_; }
  /// The file offset of data().
  [[nodiscard]] uint64_t offset() const { return offset_; }
  /// What the last failed map() found wrong, as strerror says it.
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  void unmap();
  int fd_;
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  const char* data_ = nullptr;
  size_t size_ = 0;
  uint64_t offset_ = 0;
  bool reaches_end_ = false;
  std::string error_;
};

}  // namespace zfetch::io
