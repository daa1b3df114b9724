// The execution engine a later `zfetch-gpu replay` will drive from a simulated timeline:
// gathers on a communication stream, timed busy-wait "compute" kernels on a compute stream,
// and CUDA events as the dependencies between them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda_kernels/gather_kernel.cuh"

namespace zfetch::gpu {

/// Which stream an operation goes to.
enum class Lane { Comm, Compute };

/// Index of a recorded event (a point on a lane), in record order.
using EventId = std::uint32_t;

/// Two streams on the current device and the events recorded on them. Operations are enqueued
/// in the order a replay issues them; nothing runs until the device gets to it.
class Engine {
 public:
  Engine();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Records an event at the current end of `lane`.
  EventId record(Lane lane);
  /// Makes `lane` wait for event `e` (a dependency edge of the timeline).
  void wait(Lane lane, EventId e);
  /// A fused bucket gather on the comm lane.
  void gather(const FusedGather& g);
  /// A compute stand-in on the compute lane: one block spins for `ns` nanoseconds (globaltimer).
  void compute(std::uint64_t ns);
  /// Waits for both lanes.
  void synchronize();
  /// Device time between two recorded events, in ns (after synchronize).
  [[nodiscard]] double elapsed_ns(EventId from, EventId to) const;

 private:
  cudaStream_t stream(Lane lane) const { return lane == Lane::Comm ? comm_ : compute_; }
  cudaStream_t comm_ = nullptr;
  cudaStream_t compute_ = nullptr;
  std::vector<cudaEvent_t> events_;
};

}  // namespace zfetch::gpu
