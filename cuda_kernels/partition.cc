// ZeRO-3 partition arithmetic and the fused gather's work table (see partition.h).
#include "cuda_kernels/partition.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "model/partition.h"

namespace zfetch::gpu {

ParamPartition partition_param(std::uint64_t numel, std::uint32_t world) {
  assert(world >= 1);
  ParamPartition p;
  p.numel = numel;
  p.padding = model::partition_padding<std::uint64_t>(numel, world);
  p.part_numel = model::partition_numel<std::uint64_t>(numel, world);
  return p;
}

std::uint64_t real_numel(const ParamPartition& p, std::uint32_t rank) {
  const std::uint64_t begin = std::uint64_t{rank} * p.part_numel;
  if (begin >= p.numel) {
    return 0;
  }
  return std::min(p.numel - begin, p.part_numel);
}

std::uint64_t BucketLayout::output_bytes() const {
  std::uint64_t total = 0;
  for (const ParamPartition& p : params) {
    total += p.numel;
  }
  return total * elem_bytes;
}

BucketLayout make_bucket_layout(std::span<const std::uint64_t> numels, std::uint32_t world,
                                std::uint32_t elem_bytes) {
  BucketLayout layout;
  layout.world = world;
  layout.elem_bytes = elem_bytes;
  layout.params.reserve(numels.size());
  layout.input_offset.reserve(numels.size());
  for (const std::uint64_t n : numels) {
    layout.params.push_back(partition_param(n, world));
    layout.input_offset.push_back(layout.rank_numel);
    layout.rank_numel += layout.params.back().part_numel;
  }
  return layout;
}

std::vector<ChunkDesc> build_work_table(const BucketLayout& layout, std::uint32_t max_chunk_bytes) {
  assert(max_chunk_bytes >= 16 && max_chunk_bytes % 16 == 0);
  const std::uint64_t eb = layout.elem_bytes;
  std::vector<ChunkDesc> table;
  for (std::uint32_t i = 0; i < layout.params.size(); ++i) {
    const ParamPartition& p = layout.params[i];
    for (std::uint32_t r = 0; r < layout.world; ++r) {
      const std::uint64_t n = real_numel(p, r);
      if (n == 0) {
        break;  // ranks past the last real element hold only padding
      }
      const std::uint64_t src = layout.input_offset[i] * eb;
      const std::uint64_t dst = std::uint64_t{r} * p.part_numel * eb;
      const std::uint64_t end = dst + n * eb;
      // Split on 16-byte multiples of the destination offset (why: see partition.h).
      std::uint64_t at = dst;
      while (at < end) {
        const std::uint64_t boundary = (at / max_chunk_bytes + 1) * max_chunk_bytes;
        const std::uint64_t stop = std::min(end, boundary);
        table.push_back(
            ChunkDesc{src + (at - dst), at, static_cast<std::uint32_t>(stop - at), i, r});
        at = stop;
      }
    }
  }
  return table;
}

std::uint32_t choose_chunk_bytes(std::uint64_t total_bytes, std::uint32_t concurrent_warps) {
  constexpr std::uint64_t kMin = 1024;
  constexpr std::uint64_t kMax = 65536;
  const std::uint64_t per = total_bytes / (4ULL * std::max<std::uint32_t>(concurrent_warps, 1));
  const std::uint64_t rounded = (per + kMin - 1) / kMin * kMin;
  return static_cast<std::uint32_t>(std::clamp(rounded, kMin, kMax));
}

std::vector<std::uint64_t> bench_bucket_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t bytes = std::max<std::uint64_t>(min_bytes, 1); bytes <= max_bytes;
       bytes *= bytes < (16ULL << 20) ? 4 : 2) {
    sizes.push_back(bytes);
  }
  return sizes;
}

std::vector<std::uint64_t> bench_bucket_numels(std::uint64_t bytes, std::uint32_t elem_bytes,
                                               std::uint64_t unit) {
  const std::uint64_t total = bytes / elem_bytes;
  if (total < 8 * unit) {
    return {std::max(unit, total / unit * unit)};
  }
  const std::uint64_t layers = std::clamp<std::uint64_t>(bytes >> 24, 1, 4);
  const std::uint64_t per_layer = total / layers;
  const std::uint64_t vec = (std::max<std::uint64_t>(per_layer / 2048, 1) + unit - 1) / unit * unit;
  const std::uint64_t mat = (per_layer - vec) / 3 / unit * unit;
  std::vector<std::uint64_t> numels;
  for (std::uint64_t l = 0; l < layers; ++l) {
    numels.insert(numels.end(), {mat, mat, mat, vec});
  }
  return numels;
}

namespace {

void store_bits(std::byte* at, std::uint32_t elem_bytes, std::uint64_t bits) {
  if (elem_bytes == 4) {
    const auto v = static_cast<std::uint32_t>(bits);
    std::memcpy(at, &v, 4);
  } else {
    const auto v = static_cast<std::uint16_t>(bits);
    std::memcpy(at, &v, 2);
  }
}

}  // namespace

void fill_rank_input(const BucketLayout& layout, std::uint64_t seed, std::uint32_t rank,
                     std::span<std::byte> out) {
  assert(out.size() >= layout.rank_bytes());
  const std::uint32_t eb = layout.elem_bytes;
  for (std::uint32_t i = 0; i < layout.params.size(); ++i) {
    const ParamPartition& p = layout.params[i];
    std::byte* base = out.data() + layout.input_offset[i] * eb;
    const std::uint64_t first = std::uint64_t{rank} * p.part_numel;
    const std::uint64_t key = param_key(seed, i);
    for (std::uint64_t k = 0; k < p.part_numel; ++k) {
      const std::uint64_t bits =
          first + k < p.numel ? param_value_keyed(key, first + k) : pad_value(seed, i, rank, k);
      store_bits(base + k * eb, eb, bits);
    }
  }
}

void fill_expected_param(std::uint32_t elem_bytes, std::uint64_t seed, std::uint32_t param,
                         std::span<std::byte> out) {
  const std::uint64_t n = out.size() / elem_bytes;
  const std::uint64_t key = param_key(seed, param);
  for (std::uint64_t j = 0; j < n; ++j) {
    store_bits(out.data() + j * elem_bytes, elem_bytes, param_value_keyed(key, j));
  }
}

}  // namespace zfetch::gpu
