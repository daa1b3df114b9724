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

/// `size()` bytes, of which the constructor allocated some with `Alloc` (cudaMalloc,
/// cudaMallocHost); owned (moved, never copied) and released with `Free`.
template <cudaError_t (*Alloc)(void**, std::size_t), cudaError_t (*Free)(void*)>
class OwnedBytes {
 public:
  OwnedBytes() = default;
  OwnedBytes(OwnedBytes&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(o.size_) {}
  OwnedBytes& operator=(OwnedBytes&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  OwnedBytes(const OwnedBytes&) = delete;
  OwnedBytes& operator=(const OwnedBytes&) = delete;
  ~OwnedBytes() {
    if (ptr_ != nullptr) {
      static_cast<void>(Free(ptr_));  // see release_ignoring_errors
    }
  }
  [[nodiscard]] std::byte* get() const { return static_cast<std::byte*>(ptr_); }
  [[nodiscard]] std::size_t size() const { return size_; }

 protected:
  // `bytes`, of which `allocated` (at least `bytes`; 0: nothing) are allocated.
  OwnedBytes(std::size_t bytes, std::size_t allocated) : size_(bytes) {
    if (allocated > 0) {
      ZFETCH_CUDA_CHECK(Alloc(&ptr_, allocated));
    }
  }

 private:
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

/// cudaMalloc'd bytes on the current device; size rounded up to 256 so that the gather's
/// aligned-word reads past a buffer's last byte stay inside the allocation.
class DeviceBuffer : public OwnedBytes<cudaMalloc, cudaFree> {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : OwnedBytes(bytes, (bytes + 255) / 256 * 256) {}
  /// Exactly `bytes` (at least 1), for checks in which compute-sanitizer must see an access past
  /// the end; size() is `bytes`.
  [[nodiscard]] static DeviceBuffer exact(std::size_t bytes) {
    return DeviceBuffer(bytes, bytes > 0 ? bytes : 1);
  }

 private:
  DeviceBuffer(std::size_t bytes, std::size_t allocated) : OwnedBytes(bytes, allocated) {}
};

/// cudaMallocHost'd (pinned) bytes.
class PinnedBuffer : public OwnedBytes<cudaMallocHost, cudaFreeHost> {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) : OwnedBytes(bytes, bytes) {}
};

}  // namespace zfetch::gpu
