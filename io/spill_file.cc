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

SpillFile::SpillFile(std::string directory) : directory_(std::move(directory)) {
  buffer_.reserve(kBufferBytes);
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
  while (bytes > 0) {
    if (buffer_.size() == kBufferBytes) {
      write_buffer();
    }
    const size_t n = std::min(bytes, kBufferBytes - buffer_.size());
    buffer_.insert(buffer_.end(), p, p + n);
    p += n;
    bytes -= n;
  }
}

void SpillFile::write_buffer() {
  if (fd_ < 0 && error_.empty()) {
    const std::string dir = directory_.empty() ? temporary_directory() : directory_;
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
  if (fd_ >= 0 && error_.empty()) {
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
  if (!error_.empty() || offset + bytes > size()) {
    fail("cannot read a temporary file back: it is shorter than what was written");
    return false;
  }
  auto* p = static_cast<char*>(data);
  // What is on disk, then what is still in the buffer.
  if (offset < written_) {
    const auto from_disk = static_cast<size_t>(std::min<uint64_t>(bytes, written_ - offset));
    errno = 0;
    const auto read = [](int fd, char* q, size_t n, off_t at) { return ::pread(fd, q, n, at); };
    if (transfer_all(read, fd_, p, from_disk, offset) != from_disk) {
      fail(std::string("cannot read a temporary file back: ") +
           (errno != 0 ? std::strerror(errno) : "it is shorter than what was written"));
      return false;
    }
    p += from_disk;
    offset += from_disk;
    bytes -= from_disk;
  }
  if (bytes > 0) {
    std::memcpy(p, buffer_.data() + (offset - written_), bytes);
  }
  return true;
}

}  // namespace zfetch::io
