// Temporary files of fixed-size records, written once and read back in order: for an output whose
// sections must appear in another order than the one they are produced in (a Chrome trace lists
// every slice before any counter), so that it needs disk instead of memory in proportion to the
// run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace zfetch::io {

/// An unnamed file, gone when closed. Written through a 64 KiB buffer (the file is created only
/// when that first fills, so a small spill never touches the disk); read back through any
/// number of cursors (each with its own buffer), so that sorted runs of it can be merged.
class SpillFile {
 public:
  /// The file goes in `directory` ("": the system's temporary directory, $TMPDIR).
  explicit SpillFile(std::string directory);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  /// Empty while all is well; otherwise the first failure ("cannot create a temporary file in
  /// DIR: ...", "cannot write a temporary file: No space left on device").
  [[nodiscard]] const std::string& error() const { return error_; }
  void append(const void* data, size_t bytes);
  /// Reads `bytes` at `offset` of what was appended; false (with error() set) on a failure.
  bool read_at(uint64_t offset, void* data, size_t bytes);
  /// Bytes appended so far.
  [[nodiscard]] uint64_t size() const { return written_ + buffer_.size(); }

 private:
  void write_buffer();
  void fail(std::string what);
  std::string directory_;
  int fd_ = -1;
  uint64_t written_ = 0;
  std::vector<char> buffer_;  ///< capacity fixed at construction
  std::string error_;
};

/// A SpillFile of records of one trivially copyable type.
template <typename T>
requires std::is_trivially_copyable_v<T>
class SpillLog {
 public:
  explicit SpillLog(const std::string& directory) : file_(directory) {}

  void push_back(const T& record) {
    file_.append(&record, sizeof(T));
    ++count_;
  }
  [[nodiscard]] uint64_t size() const { return count_; }
  [[nodiscard]] bool empty() const { return count_ == 0; }
  [[nodiscard]] const std::string& error() const { return file_.error(); }

  /// Reads records [first, last) in order, a block at a time.
  class Cursor {
   public:
    Cursor(SpillLog& log, uint64_t first, uint64_t last)
        : log_(&log), next_(first), last_(last), block_(kBlock) {}
    /// False at `last` or on a read error (the log's error() says which).
    bool next(T& record) {
      if (at_ == filled_) {
        const uint64_t n = std::min<uint64_t>(kBlock, last_ - next_);
        if (n == 0 || !log_->file_.read_at(next_ * sizeof(T), block_.data(), n * sizeof(T))) {
          return false;
        }
        next_ += n;
        at_ = 0;
        filled_ = static_cast<size_t>(n);
      }
      record = block_[at_++];
      return true;
    }

   private:
    static constexpr size_t kBlock = 4096 / sizeof(T) + 1;
    SpillLog* log_;
    uint64_t next_;
    uint64_t last_;
    std::vector<T> block_;
    size_t at_ = 0;
    size_t filled_ = 0;
  };
  /// A cursor over records [first, last) (of those pushed so far).
  Cursor read(uint64_t first, uint64_t last) {
    return Cursor(*this, first, std::min(last, count_));
  }
  Cursor read_all() { return read(0, count_); }

 private:
  SpillFile file_;
  uint64_t count_ = 0;
};

}  // namespace zfetch::io
