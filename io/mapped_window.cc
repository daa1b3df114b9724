// MappedWindow: mmap of a 2 MiB-aligned range around the requested one (see mapped_window.h).
#include "io/mapped_window.h"

#include <sys/mman.h>
#include <sys/stat.h>

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
  // The window starts and ends on 2 MiB boundaries of the file (a multiple of the page size):
  // where the page cache holds a 2 MiB folio there (as it does for a file written in aligned
  // chunks of that size, or read from the disk), the kernel maps it with one page-table entry,
  // which costs a small part of mapping 512 pages one by one.
  constexpr uint64_t kAlignment = uint64_t{2} << 20;
  const uint64_t start = offset / kAlignment * kAlignment;
  const uint64_t end =
      std::min<uint64_t>(file_size, (offset + length + kAlignment - 1) / kAlignment * kAlignment);
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
