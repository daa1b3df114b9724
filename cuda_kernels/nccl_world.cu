// NCCL communicators and the DeepSpeed-style gather path (see nccl_world.h).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

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
  // Destructors must not throw, and a library does not print: a failed teardown is ignored (a
  // sticky CUDA error surfaces at the next checked call; the process is ending otherwise).
  for (LocalRank& lr : local_) {
    if (cudaSetDevice(lr.device) == cudaSuccess &&
        cudaStreamSynchronize(lr.stream) == cudaSuccess) {
      static_cast<void>(cudaStreamDestroy(lr.stream));
    }
    static_cast<void>(ncclCommDestroy(lr.comm));
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

namespace {

// Calls visit(dst, src, bytes) for each (param, rank) slice of `gathered` that holds elements
// (padding is not copied), in param order and rank order within a param.
template <typename Visit>
void for_each_slice(const BucketLayout& layout, const std::byte* gathered,
                    std::span<std::byte* const> param_dst, Visit&& visit) {
  const std::uint64_t eb = layout.elem_bytes;
  for (std::size_t i = 0; i < layout.params.size(); ++i) {
    const ParamPartition& p = layout.params[i];
    for (std::uint32_t r = 0; r < layout.world; ++r) {
      const std::uint64_t n = real_numel(p, r);
      if (n == 0) {
        break;
      }
      visit(param_dst[i] + r * p.part_numel * eb,
            gathered + r * layout.rank_bytes() + layout.input_offset[i] * eb, n * eb);
    }
  }
}

}  // namespace

std::size_t copy_params_per_slice(const BucketLayout& layout, const std::byte* gathered,
                                  std::span<std::byte* const> param_dst, cudaStream_t stream) {
  std::size_t copies = 0;
  for_each_slice(
      layout, gathered, param_dst, [&](std::byte* dst, const std::byte* src, std::uint64_t bytes) {
        ZFETCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
        ++copies;
      });
  return copies;
}

std::size_t copy_params_batched(const BucketLayout& layout, const std::byte* gathered,
                                std::span<std::byte* const> param_dst, cudaStream_t stream) {
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  std::vector<std::size_t> sizes;
  for_each_slice(layout, gathered, param_dst,
                 [&](std::byte* dst, const std::byte* src, std::uint64_t bytes) {
                   dsts.push_back(dst);
                   srcs.push_back(src);
                   sizes.push_back(bytes);
                 });
  if (!dsts.empty()) {
    // One attribute for every copy: sources read in stream order (they are written by the
    // all-gather just before).
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    std::size_t attr_index = 0;
    ZFETCH_CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(),
                                           &attr, &attr_index, 1, stream));
  }
  return dsts.size();
}

}  // namespace zfetch::gpu
