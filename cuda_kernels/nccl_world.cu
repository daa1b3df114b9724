// NCCL communicators and the DeepSpeed-style gather path (see nccl_world.h).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "cuda_kernels/check.h"
#include "cuda_kernels/nccl_world.h"

namespace zfetch::gpu {

NcclWorld NcclWorld::all_local(int max_devices) {
  int count = 0;
  ZFETCH_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (max_devices > 0 && max_devices < count) {
    count = max_devices;
  }
  NcclWorld world;
  world.world_size_ = count;
  world.single_process_ = true;
  std::vector<int> devices(static_cast<std::size_t>(count));
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) {
    devices[static_cast<std::size_t>(d)] = d;
  }
  ZFETCH_NCCL_CHECK(ncclCommInitAll(comms.data(), count, devices.data()));
  for (int d = 0; d < count; ++d) {
    LocalRank lr;
    lr.device = d;
    lr.rank = d;
    lr.comm = comms[static_cast<std::size_t>(d)];
    ZFETCH_CUDA_CHECK(cudaSetDevice(d));
    ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&lr.stream, cudaStreamNonBlocking));
    world.local_.push_back(lr);
  }
  ZFETCH_CUDA_CHECK(cudaSetDevice(0));
  return world;
}

NcclWorld NcclWorld::from_env(const LaunchEnv& env) {
  ncclUniqueId id{};
  if (env.rank == 0) {
    ZFETCH_NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = env.rendezvous + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(id.internal, sizeof(id.internal));
      if (!out) {
        fail(__FILE__, __LINE__, "cannot write rendezvous file '" + tmp + "'");
      }
    }
    if (std::rename(tmp.c_str(), env.rendezvous.c_str()) != 0) {
      fail(__FILE__, __LINE__, "cannot rename '" + tmp + "' to '" + env.rendezvous + "'");
    }
  } else {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      std::ifstream in(env.rendezvous, std::ios::binary);
      if (in && in.read(id.internal, sizeof(id.internal))) {
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        fail(__FILE__, __LINE__, "timed out waiting for rendezvous file '" + env.rendezvous + "'");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  NcclWorld world;
  world.world_size_ = env.world_size;
  world.single_process_ = false;
  LocalRank lr;
  lr.device = env.local_rank;
  lr.rank = env.rank;
  ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
  ZFETCH_NCCL_CHECK(ncclCommInitRank(&lr.comm, env.world_size, id, env.rank));
  ZFETCH_CUDA_CHECK(cudaStreamCreateWithFlags(&lr.stream, cudaStreamNonBlocking));
  world.local_.push_back(lr);
  return world;
}

NcclWorld::NcclWorld(NcclWorld&& other) noexcept
    : local_(std::move(other.local_)),
      world_size_(other.world_size_),
      single_process_(other.single_process_) {
  other.local_.clear();
}

NcclWorld::~NcclWorld() {
  // Destructors must not throw: failures are reported and ignored.
  for (LocalRank& lr : local_) {
    if (cudaSetDevice(lr.device) != cudaSuccess ||
        cudaStreamSynchronize(lr.stream) != cudaSuccess ||
        cudaStreamDestroy(lr.stream) != cudaSuccess) {
      std::fprintf(stderr, "%s:%d: error: stream teardown failed on device %d\n", __FILE__,
                   __LINE__, lr.device);
    }
    if (ncclCommDestroy(lr.comm) != ncclSuccess) {
      std::fprintf(stderr, "%s:%d: error: ncclCommDestroy failed\n", __FILE__, __LINE__);
    }
  }
}

ncclDataType_t nccl_type(std::uint32_t elem_bytes, bool half) {
  if (elem_bytes == 4) {
    return ncclFloat32;
  }
  return half ? ncclFloat16 : ncclBfloat16;
}

void all_gather(NcclWorld& world, std::span<const std::byte* const> send,
                std::span<std::byte* const> recv, std::uint64_t count, ncclDataType_t type) {
  ZFETCH_NCCL_CHECK(ncclGroupStart());
  std::size_t k = 0;
  for (LocalRank& lr : world.local()) {
    ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
    ZFETCH_NCCL_CHECK(ncclAllGather(send[k], recv[k], count, type, lr.comm, lr.stream));
    ++k;
  }
  ZFETCH_NCCL_CHECK(ncclGroupEnd());
}

void reduce_scatter(NcclWorld& world, std::span<const std::byte* const> send,
                    std::span<std::byte* const> recv, std::uint64_t recv_count,
                    ncclDataType_t type) {
  ZFETCH_NCCL_CHECK(ncclGroupStart());
  std::size_t k = 0;
  for (LocalRank& lr : world.local()) {
    ZFETCH_CUDA_CHECK(cudaSetDevice(lr.device));
    ZFETCH_NCCL_CHECK(
        ncclReduceScatter(send[k], recv[k], recv_count, type, ncclSum, lr.comm, lr.stream));
    ++k;
  }
  ZFETCH_NCCL_CHECK(ncclGroupEnd());
}

std::size_t copy_params_per_slice(const BucketLayout& layout, const std::byte* gathered,
                                  std::span<std::byte* const> param_dst, cudaStream_t stream) {
  const std::uint64_t eb = layout.elem_bytes;
  std::size_t copies = 0;
  for (std::size_t i = 0; i < layout.params.size(); ++i) {
    const ParamPartition& p = layout.params[i];
    for (std::uint32_t r = 0; r < layout.world; ++r) {
      const std::uint64_t n = real_numel(p, r);
      if (n == 0) {
        break;
      }
      const std::byte* src = gathered + r * layout.rank_bytes() + layout.input_offset[i] * eb;
      std::byte* dst = param_dst[i] + r * p.part_numel * eb;
      ZFETCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * eb, cudaMemcpyDeviceToDevice, stream));
      ++copies;
    }
  }
  return copies;
}

}  // namespace zfetch::gpu
