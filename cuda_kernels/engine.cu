// The replay execution engine (see engine.h).
#include <cstdio>

#include "cuda_kernels/check.h"
#include "cuda_kernels/engine.h"

namespace zfetch::gpu {

namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(std::uint64_t ns) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

}  // namespace

Engine::Engine() {
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
}

Engine::~Engine() {
  // Destructors must not throw: failures are reported and ignored.
  for (cudaEvent_t e : events_) {
    if (cudaEventDestroy(e) != cudaSuccess) {
      std::fprintf(stderr, "%s:%d: error: cudaEventDestroy failed\n", __FILE__, __LINE__);
    }
  }
  if (cudaStreamDestroy(comm_) != cudaSuccess || cudaStreamDestroy(compute_) != cudaSuccess) {
    std::fprintf(stderr, "%s:%d: error: cudaStreamDestroy failed\n", __FILE__, __LINE__);
  }
}

EventId Engine::record(Lane lane) {
  cudaEvent_t e = nullptr;
  ZFETCH_CUDA_CHECK(cudaEventCreate(&e));
  ZFETCH_CUDA_CHECK(cudaEventRecord(e, stream(lane)));
  events_.push_back(e);
  return static_cast<EventId>(events_.size() - 1);
}

void Engine::wait(Lane lane, EventId e) {
  ZFETCH_CUDA_CHECK(cudaStreamWaitEvent(stream(lane), events_.at(e), 0));
}

void Engine::gather(const FusedGather& g) {
  g.launch(comm_);
}

void Engine::compute(std::uint64_t ns) {
  spin_kernel<<<1, 32, 0, compute_>>>(ns);
  ZFETCH_CUDA_CHECK_LAUNCH();
}

void Engine::synchronize() {
  ZFETCH_CUDA_CHECK(cudaStreamSynchronize(comm_));
  ZFETCH_CUDA_CHECK(cudaStreamSynchronize(compute_));
}

double Engine::elapsed_ns(EventId from, EventId to) const {
  float ms = 0;
  ZFETCH_CUDA_CHECK(cudaEventElapsedTime(&ms, events_.at(from), events_.at(to)));
  return static_cast<double>(ms) * 1e6;
}

}  // namespace zfetch::gpu
