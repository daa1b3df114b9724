// NCCL communicators for one process driving every local GPU, or one GPU per process
// (torchrun-style RANK/WORLD_SIZE/LOCAL_RANK with a file rendezvous), plus the DeepSpeed path:
// a flat ncclAllGather followed by one cudaMemcpyAsync per (param, rank) slice.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda_kernels/partition.h"

namespace zfetch::gpu {

/// Where this process sits in a multi-process launch (what MPI or torchrun would provide).
struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;      ///< picks the GPU
  std::string rendezvous;  ///< file rank 0 writes the ncclUniqueId to; the others poll it
};

/// One GPU this process drives: its device, global rank, communicator and stream.
struct LocalRank {
  int device = 0;
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

/// The communicators of this process; destroys them on destruction.
class NcclWorld {
 public:
  /// One process, every visible GPU (`ncclCommInitAll`); `max_devices` 0 means all.
  static NcclWorld all_local(int max_devices = 0);
  /// One GPU per process: rank 0 writes `ncclGetUniqueId` to env.rendezvous (write, then rename,
  /// so readers never see half a file); others wait up to 120 s for it; then ncclCommInitRank.
  static NcclWorld from_env(const LaunchEnv& env);

  NcclWorld(NcclWorld&& other) noexcept;
  NcclWorld& operator=(NcclWorld&&) = delete;
  NcclWorld(const NcclWorld&) = delete;
  NcclWorld& operator=(const NcclWorld&) = delete;
  ~NcclWorld();

  [[nodiscard]] int world_size() const { return world_size_; }
  [[nodiscard]] std::span<LocalRank> local() { return local_; }
  [[nodiscard]] bool single_process() const { return single_process_; }

 private:
  NcclWorld() = default;
  std::vector<LocalRank> local_;
  int world_size_ = 0;
  bool single_process_ = true;
};

/// NCCL type for an element size (4: float, 2: bfloat16 or half as `half` says).
[[nodiscard]] ncclDataType_t nccl_type(std::uint32_t elem_bytes, bool half);

/// Enqueues ncclAllGather of `count` elements from send[k] into recv[k] for every local rank k,
/// in one group (the flat all-gather of a coalesced bucket).
void all_gather(NcclWorld& world, std::span<const std::byte* const> send,
                std::span<std::byte* const> recv, std::uint64_t count, ncclDataType_t type);

/// Enqueues ncclReduceScatter (sum) of `recv_count` elements per rank, one group.
void reduce_scatter(NcclWorld& world, std::span<const std::byte* const> send,
                    std::span<std::byte* const> recv, std::uint64_t recv_count,
                    ncclDataType_t type);

/// DeepSpeed's reassembly after the flat all-gather (AllGatherCoalescedHandle.wait): one
/// cudaMemcpyAsync per (param, rank) slice from the gathered buffer (rank-major, W * rank_bytes)
/// into each param's own buffer. Returns the number of copies enqueued.
std::size_t copy_params_per_slice(const BucketLayout& layout, const std::byte* gathered,
                                  std::span<std::byte* const> param_dst, cudaStream_t stream);

/// The same copies issued as one cudaMemcpyBatchAsync (CUDA 12.8+; the copies of a batch may run
/// in any order, which is fine: they never overlap). Returns the number of copies.
std::size_t copy_params_batched(const BucketLayout& layout, const std::byte* gathered,
                                std::span<std::byte* const> param_dst, cudaStream_t stream);

}  // namespace zfetch::gpu
