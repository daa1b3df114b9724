// ZFETCH_CUDA_CHECK / ZFETCH_NCCL_CHECK: every CUDA and NCCL call checked, with file:line.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace zfetch::gpu {

/// A failed CUDA or NCCL call. The message reads `file:line: error: <call> failed: <reason>`
/// (nccl-tests CUDACHECK/NCCLCHECK); the caller (tools/gpu) prints it.
class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws GpuError with `file:line: error: message`; never returns.
[[noreturn]] void fail(const char* file, int line, const std::string& message);

}  // namespace zfetch::gpu

#define ZFETCH_CUDA_CHECK(expr)                                                              \
  do {                                                                                       \
    const cudaError_t zfetch_err_ = (expr);                                                  \
    if (zfetch_err_ != cudaSuccess) {                                                        \
      ::zfetch::gpu::fail(__FILE__, __LINE__,                                                \
                          std::string(#expr) + " failed: " + cudaGetErrorName(zfetch_err_) + \
                              ": " + cudaGetErrorString(zfetch_err_));                       \
    }                                                                                        \
  } while (false)

#define ZFETCH_NCCL_CHECK(expr)                                                                \
  do {                                                                                         \
    const ncclResult_t zfetch_res_ = (expr);                                                   \
    if (zfetch_res_ != ncclSuccess) {                                                          \
      ::zfetch::gpu::fail(__FILE__, __LINE__,                                                  \
                          std::string(#expr) + " failed: " + ncclGetErrorString(zfetch_res_) + \
                              ": " +                                                           \
                              (ncclGetLastError(nullptr) ? ncclGetLastError(nullptr) : ""));   \
    }                                                                                          \
  } while (false)

/// Checks the launch just made (cudaGetLastError), nccl-tests style.
#define ZFETCH_CUDA_CHECK_LAUNCH() ZFETCH_CUDA_CHECK(cudaGetLastError())
