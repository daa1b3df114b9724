// Bounded whole-file reads (see input_file.h).
#include "io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ios>
#include <streambuf>

#include "base/text_bytes.h"

namespace zfetch::io {

namespace {

// Closes the descriptor on every path out of read_input_file.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

// Fills `result`'s error and position for `bad`, with its line for the quote (the renderer shows
// the bytes that are not text as '?').
void describe_non_text_byte(std::string_view text, const base::NonTextByte& bad,
                            InputText& result) {
  const size_t newline =
      bad.offset == 0 ? std::string_view::npos : text.rfind('\n', bad.offset - 1);
  const size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
  const size_t line_end = std::min(text.find('\n', bad.offset), text.size());
  result.error = bad.what;
  result.error_line = static_cast<uint32_t>(
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n'));
  result.error_col = static_cast<uint32_t>(bad.offset - line_start + 1);
  result.error_source_line = text.substr(line_start, line_end - line_start);
}

std::string too_large(size_t limit) {
  return "is larger than the " + describe_limit(limit) + " limit for input files";
}

}  // namespace

std::string describe_limit(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= (size_t{1} << 10) && bytes % (size_t{1} << 10) == 0) {
    return std::to_string(bytes >> 10) + " KiB";
  }
  return std::to_string(bytes) + " bytes";
}

InputText read_input_file(const std::string& path, size_t limit) {
  InputText result;
  // O_NONBLOCK: opening a FIFO that has no writer must not wait for one.
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    result.error = std::strerror(errno);
    return result;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    result.error = std::strerror(errno);
    return result;
  }
  if (S_ISDIR(info.st_mode)) {
    result.error = "is a directory";
    return result;
  }
  if (S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > limit) {
    result.error = too_large(limit);
    return result;
  }
  // Blocking again: a FIFO with a writer (`<(cat file)`) is read to its end.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) {
    ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  }
  std::string text;
  // A regular file's size is known; anything else grows in chunks up to the limit.
  text.reserve(S_ISREG(info.st_mode) ? static_cast<size_t>(info.st_size) : size_t{1} << 16);
  char chunk[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd.get(), chunk, sizeof chunk);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      // A FIFO nobody ever opened for writing can still answer EAGAIN: it is empty.
      if (errno == EAGAIN && !S_ISREG(info.st_mode)) {
        break;
      }
      result.error = std::strerror(errno);
      return result;
    }
    if (got == 0) {
      break;
    }
    if (text.size() + static_cast<size_t>(got) > limit) {
      result.error = too_large(limit);
      return result;
    }
    text.append(chunk, static_cast<size_t>(got));
  }
  if (std::optional<InputText> bad = check_text(text)) {
    return std::move(*bad);
  }
  result.text = std::move(text);
  return result;
}

std::optional<InputText> check_text(std::string_view text) {
  const std::optional<base::NonTextByte> bad = base::find_non_text_byte(text);
  if (!bad) {
    return std::nullopt;
  }
  InputText result;
  describe_non_text_byte(text, *bad, result);
  return result;
}

// A read-only streambuf over a file descriptor, 64 KiB at a time.
class InputStream::Buffer final : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd) {}
  ~Buffer() override { ::close(fd_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

 protected:
  int_type underflow() override {
    while (true) {
      const ssize_t got = ::read(fd_, data_, sizeof data_);
      if (got > 0) {
        setg(data_, data_, data_ + got);
        return traits_type::to_int_type(data_[0]);
      }
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got < 0 && errno != EAGAIN) {
        // istream turns an exception from the buffer into badbit.
        throw std::ios_base::failure(std::strerror(errno));
      }
      return traits_type::eof();
    }
  }

 private:
  int fd_;
  char data_[1 << 16];
};

InputStream::InputStream(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error_ = std::strerror(errno);
  } else {
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      error_ = std::strerror(errno);
    } else if (S_ISDIR(info.st_mode)) {
      error_ = "is a directory";
    }
    if (!error_.empty()) {
      ::close(fd);
    } else {
      const int flags = ::fcntl(fd, F_GETFL);
      if (flags >= 0) {
        ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      }
      buffer_ = std::make_unique<Buffer>(fd);
      if (S_ISREG(info.st_mode)) {
        regular_fd_ = fd;
      }
    }
  }
  stream_ = std::make_unique<std::istream>(buffer_.get());
  if (!buffer_) {
    stream_->setstate(std::ios::badbit);
  }
}

InputStream::~InputStream() = default;

std::istream& InputStream::stream() {
  return *stream_;
}

bool is_regular_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

}  // namespace zfetch::io
