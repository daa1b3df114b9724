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

void SpillFile::flush() {
  size_t done = 0;
  while (fd_ >= 0 && error_.empty() && done < buffer_.size()) {
    const ssize_t n = ::pwrite(fd_, buffer_.data() + done, buffer_.size() - done,
                               static_cast<off_t>(written_ + done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      fail(std::string("cannot write a temporary file: ") +
           (n < 0 ? std::strerror(errno) : "no progress"));
      break;
    }
    done += static_cast<size_t>(n);
  }
  written_ += buffer_.size();
  buffer_.clear();
}

bool SpillFile::read_at(uint64_t offset, void* data, size_t bytes) {
  auto* p = static_cast<char*>(data);
  size_t done = 0;
  while (fd_ >= 0 && error_.empty() && done < bytes) {
    const ssize_t n = ::pread(fd_, p + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      fail(std::string("cannot read a temporary file back: ") +
           (n < 0 ? std::strerror(errno) : "it is shorter than what was written"));
      break;
    }
    done += static_cast<size_t>(n);
  }
  return done == bytes;
}

}  // namespace zfetch::io
