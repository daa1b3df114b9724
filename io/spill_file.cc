// Unnamed temporary files (see spill_file.h).
#include "io/spill_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace zfetch::io {

namespace {

constexpr size_t kBufferBytes = size_t{1} << 16;

std::string temporary_directory() {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  return ec ? std::string("/tmp") : dir.string();
}

}  // namespace

SpillFile::SpillFile(const std::string& directory) {
  buffer_.reserve(kBufferBytes);
  const std::string dir = directory.empty() ? temporary_directory() : directory;
  // O_TMPFILE makes a file with no name at all; where the file system does not support it, a
  // named one is removed as soon as it is open.
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    std::string name = dir + "/.zfetch-spill-XXXXXX";
    fd_ = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd_ >= 0) {
      ::unlink(name.c_str());
    }
  }
  if (fd_ < 0) {
    fail("cannot create a temporary file in " + dir + ": " + std::strerror(errno));
  }
}

SpillFile::~SpillFile() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void SpillFile::fail(std::string what) {
  if (error_.empty()) {
    error_ = std::move(what);
  }
}

void SpillFile::append(const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  if (buffer_.size() + bytes > kBufferBytes) {
    flush();
  }
  if (bytes > kBufferBytes) {
    buffer_.insert(buffer_.end(), p, p + bytes);  // once; flushed at once below
    flush();
    return;
  }
  buffer_.insert(buffer_.end(), p, p + bytes);
}

namespace {

// Moves `bytes` between `data` and the file at `offset` with pwrite or pread, resuming short
// transfers; the bytes moved (fewer only on an error or at the end of the file).
template <typename Transfer>
size_t transfer_all(Transfer transfer, int fd, char* data, size_t bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = transfer(fd, data + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace

void SpillFile::flush() {
  if (fd_ >= 0 && error_.empty() && !buffer_.empty()) {
    errno = 0;
    const auto write = [](int fd, char* p, size_t n, off_t at) { return ::pwrite(fd, p, n, at); };
    if (transfer_all(write, fd_, buffer_.data(), buffer_.size(), written_) != buffer_.size()) {
      fail(std::string("cannot write a temporary file: ") +
           (errno != 0 ? std::strerror(errno) : "no space left"));
    }
  }
  written_ += buffer_.size();
  buffer_.clear();
}

bool SpillFile::read_at(uint64_t offset, void* data, size_t bytes) {
  if (fd_ < 0 || !error_.empty()) {
    return false;
  }
  errno = 0;
  const auto read = [](int fd, char* p, size_t n, off_t at) { return ::pread(fd, p, n, at); };
  if (transfer_all(read, fd_, static_cast<char*>(data), bytes, offset) != bytes) {
    fail(std::string("cannot read a temporary file back: ") +
         (errno != 0 ? std::strerror(errno) : "it is shorter than what was written"));
    return false;
  }
  return true;
}

}  // namespace zfetch::io
