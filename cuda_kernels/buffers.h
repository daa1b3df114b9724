// RAII owners of device and pinned host memory (for the checks and benchmarks).
//
// release_ignoring_errors: destructors must not throw and a library does not print, so a failed
// free is ignored; a sticky CUDA error it leaves surfaces at the next checked call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "cuda_kernels/check.h"

namespace zfetch::gpu {

/// cudaMalloc'd bytes on the current device; size rounded up to 256 so that the gather's
/// aligned-word reads past a buffer's last byte stay inside the allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : size_(bytes) {
    if (bytes > 0) {
      ZFETCH_CUDA_CHECK(cudaMalloc(&ptr_, (bytes + 255) / 256 * 256));
    }
  }
  /// Exactly `bytes` (at least 1), for checks in which compute-sanitizer must see an access past
  /// the end; size() is `bytes`.
  [[nodiscard]] static DeviceBuffer exact(std::size_t bytes) {
    DeviceBuffer b;
    b.size_ = bytes;
    ZFETCH_CUDA_CHECK(cudaMalloc(&b.ptr_, bytes > 0 ? bytes : 1));
    return b;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(o.size_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) {
      static_cast<void>(cudaFree(ptr_));  // see release_ignoring_errors
    }
  }
  [[nodiscard]] std::byte* get() const { return static_cast<std::byte*>(ptr_); }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

/// cudaMallocHost'd (pinned) bytes.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) : size_(bytes) {
    if (bytes > 0) {
      ZFETCH_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
    }
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(o.size_) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_ != nullptr) {
      static_cast<void>(cudaFreeHost(ptr_));  // see release_ignoring_errors
    }
  }
  [[nodiscard]] std::byte* get() const { return static_cast<std::byte*>(ptr_); }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace zfetch::gpu
