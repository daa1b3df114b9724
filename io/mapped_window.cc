// MappedWindow: mmap of a page-aligned range around the requested one (see mapped_window.h).
#include "io/mapped_window.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace zfetch::io {

MappedWindow::~MappedWindow() {
  unmap();
}

void MappedWindow::unmap() {
  if (mapping_ != nullptr) {
    ::munmap(mapping_, mapping_size_);
    mapping_ = nullptr;
  }
  data_ = nullptr;
  size_ = 0;
}

bool MappedWindow::map(uint64_t offset, size_t length) {
  unmap();
  offset_ = offset;
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    error_ = std::strerror(errno);
    return false;
  }
  const auto file_size = static_cast<uint64_t>(info.st_size);
  if (offset >= file_size) {
    reaches_end_ = true;
    return true;
  }
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const uint64_t end = std::min<uint64_t>(file_size, offset + length);
  reaches_end_ = end == file_size;
  mapping_size_ = static_cast<size_t>(end - start);
  // MAP_POPULATE: the pages are mapped in one go (the reader touches every one), which costs
  // far less than a fault per page.
  void* mapping = ::mmap(nullptr, mapping_size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_,
                         static_cast<off_t>(start));
  if (mapping == MAP_FAILED) {
    error_ = std::strerror(errno);
    return false;
  }
  mapping_ = mapping;
  data_ = static_cast<const char*>(mapping) + (offset - start);
  size_ = static_cast<size_t>(end - offset);
  return true;
}

}  // namespace zfetch::io
