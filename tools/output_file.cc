// All-or-nothing output files (see output_file.h).
#include "tools/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace zfetch::tools {

namespace {

bool is_special(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
}

// Two paths name the same file: the same inode when both exist, else the same normal form.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error)) {
    return true;
  }
  const auto normal = [](const std::string& p) {
    std::error_code ignored;
    return std::filesystem::weakly_canonical(p, ignored).lexically_normal();
  };
  return normal(a) == normal(b);
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  if (path_ == "-") {
    file_ = stdout;
    return;
  }
  if (is_special(path_)) {
    file_ = std::fopen(path_.c_str(), "wb");
  } else {
    // Beside the target, so the rename stays on one file system and is atomic.
    std::string pattern = path_ + ".tmp.XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd >= 0) {
      temporary_ = pattern;
      // mkstemp creates 0600; an output should get the permissions any new file gets.
      const mode_t mask = ::umask(0);
      ::umask(mask);
      ::fchmod(fd, 0666 & ~mask);
      file_ = ::fdopen(fd, "wb");
      if (file_ == nullptr) {
        ::close(fd);
      }
    }
  }
  if (file_ == nullptr) {
    error_ = std::strerror(errno);
    if (!temporary_.empty()) {
      ::unlink(temporary_.c_str());
      temporary_.clear();
    }
  }
}

OutputFile::~OutputFile() {
  if (!done_) {
    abandon();
  }
}

std::string OutputFile::scratch_directory() const {
  if (temporary_.empty()) {
    return "";
  }
  const std::string dir = std::filesystem::path(temporary_).parent_path().string();
  return dir.empty() ? "." : dir;
}

void OutputFile::fail(std::string why) {
  if (failure_.empty()) {
    failure_ = std::move(why);
  }
}

bool OutputFile::close() {
  if (file_ == nullptr) {
    return false;
  }
  if (!failure_.empty()) {
    error_ = failure_;
    if (file_ != stdout) {
      std::fclose(file_);
    }
    file_ = nullptr;
    return false;
  }
  if (file_ == stdout) {
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
      error_ = std::strerror(errno);
      return false;
    }
    return true;
  }
  errno = 0;
  const bool written = std::ferror(file_) == 0 && std::fflush(file_) == 0;
  const int write_errno = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!written || !closed) {
    const int cause = written ? errno : write_errno;
    error_ = cause != 0 ? std::strerror(cause) : "write error";
    return false;
  }
  return true;
}

bool OutputFile::commit() {
  done_ = true;
  if (!temporary_.empty() && std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    error_ = std::strerror(errno);
    ::unlink(temporary_.c_str());
    return false;
  }
  temporary_.clear();
  return true;
}

void OutputFile::abandon() {
  done_ = true;
  if (file_ != nullptr && file_ != stdout) {
    std::fclose(file_);
  }
  file_ = nullptr;
  if (!temporary_.empty()) {
    ::unlink(temporary_.c_str());
    temporary_.clear();
  }
}

OutputDirectory::OutputDirectory(std::string path) : path_(std::move(path)) {
  std::error_code error;
  if (std::filesystem::is_directory(path_, error)) {
    return;
  }
  if (std::filesystem::exists(path_, error)) {
    error_ = "exists and is not a directory";
    return;
  }
  created_ = std::filesystem::create_directory(path_, error);
  if (!created_) {
    error_ = error ? error.message() : "cannot be created";
  }
}

OutputDirectory::~OutputDirectory() {
  if (created_) {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);  // removes only an empty directory
  }
}

std::string OutputDirectory::file(const std::string& name) const {
  return (std::filesystem::path(path_) / name).string();
}

std::string check_outputs_distinct(const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& out = outputs[i];
    if (out == "-" || out.empty()) {
      continue;
    }
    for (const std::string& in : inputs) {
      if (same_file(out, in)) {
        return out + ": error: refusing to overwrite the input '" + in + "' with an output";
      }
    }
    for (size_t j = 0; j < i; ++j) {
      // Writing twice to /dev/null or a FIFO replaces nothing.
      if (outputs[j] != "-" && !outputs[j].empty() && !is_special(out) &&
          same_file(out, outputs[j])) {
        return out + ": error: two outputs name the same file ('" + outputs[j] + "')";
      }
    }
  }
  return {};
}

bool finish_outputs(const std::vector<OutputFile*>& outputs) {
  // Close every file first: a failed write then leaves every target as it was.
  size_t failed = outputs.size();
  for (size_t i = 0; i < outputs.size() && failed == outputs.size(); ++i) {
    if (!outputs[i]->close()) {
      failed = i;
    }
  }
  size_t committed = 0;
  if (failed == outputs.size()) {
    for (; committed < outputs.size(); ++committed) {
      if (!outputs[committed]->commit()) {
        failed = committed;
        break;
      }
    }
    if (failed == outputs.size()) {
      return true;
    }
  }
  std::fprintf(stderr, "%s: error: cannot write: %s\n", outputs[failed]->path().c_str(),
               outputs[failed]->error().c_str());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i == failed || outputs[i]->path() == "-") {
      continue;
    }
    if (i < committed) {
      std::fprintf(stderr, "%s: note: was written before the failure\n",
                   outputs[i]->path().c_str());
    } else {
      outputs[i]->abandon();
      std::fprintf(stderr, "%s: note: not written because of that failure (left as it was)\n",
                   outputs[i]->path().c_str());
    }
  }
  outputs[failed]->abandon();
  return false;
}

bool finish_stdout() {
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0) {
    return true;
  }
  std::fprintf(stderr, "zfetch: error: cannot write to stdout: %s\n",
               errno != 0 ? std::strerror(errno) : "write error");
  return false;
}

}  // namespace zfetch::tools
