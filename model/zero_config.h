// The ds_config keys that shape ZeRO-3 fetch scheduling, with DeepSpeed's defaults (semantics 8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/enum_names.h"

namespace zfetch::model {

enum class OffloadDevice : uint8_t { None, Cpu, Nvme };
/// offload_param.device's values as ds_config spells them.
inline constexpr base::EnumNames<OffloadDevice::Nvme> kOffloadDeviceNames("none", "cpu", "nvme");

struct OffloadParamConfig {
  OffloadDevice device = OffloadDevice::None;
  std::string nvme_path;
  int64_t buffer_count = 5;
  int64_t buffer_size = 100'000'000;
  int64_t max_in_cpu = 1'000'000'000;
  bool pin_memory = true;
};

struct LeafModuleConfig {
  std::vector<std::string> classes;
  std::vector<std::string> names;
  std::vector<std::string> name_suffixes;
};

/// `zero_optimization` (DeepSpeedZeroConfig, deepspeed/runtime/zero/config.py at the snapshot).
struct ZeroConfig {
  int64_t stage = 0;
  int64_t prefetch_bucket_size = 50'000'000;      // stage3_prefetch_bucket_size
  int64_t param_persistence_threshold = 100'000;  // stage3_param_persistence_threshold
  int64_t model_persistence_threshold =
      INT64_MAX;                                 // stage3_model_persistence_threshold (sys.maxsize)
  int64_t max_live_parameters = 1'000'000'000;   // stage3_max_live_parameters
  int64_t max_reuse_distance = 1'000'000'000;    // stage3_max_reuse_distance
  int64_t module_granularity_threshold = 0;      // stage3_module_granularity_threshold
  bool use_all_reduce_for_fetch_params = false;  // stage3_use_all_reduce_for_fetch_params
  bool allgather_sequential = false;             // stage3_allgather_sequential
  bool overlap_comm = true;                      // None -> true for stage 3
  OffloadParamConfig offload_param;
  bool offload_param_set = false;  // offload_param present (None otherwise)
  int64_t zero_hpz_partition_size = 1;
  bool zero_quantized_weights = false;
  bool zero_quantized_nontrainable_weights = false;
  LeafModuleConfig leaf_module;
  bool log_trace_cache_warnings = false;
  bool memory_efficient_linear = true;
  bool enable_sanity_checks = false;
  bool zenflow = false;  // zenflow block present
  int64_t mics_shard_size = -1;
  bool override_module_apply = true;
  int64_t allgather_bucket_size = 500'000'000;
};

/// A ds_config "auto" value and what the HF integration fills it with, for reports.
struct ResolvedAuto {
  std::string key;    ///< dotted: `zero_optimization.stage3_prefetch_bucket_size`
  std::string value;  ///< as text: `15099494`, `false`
  std::string rule;   ///< how: `0.9 * hidden_size^2 rounded down, hidden_size 4096`
};

/// The top-level ds_config keys zfetch reads.
struct DeepSpeedConfig {
  int64_t train_micro_batch_size_per_gpu = 1;
  int64_t gradient_accumulation_steps = 1;
  bool managed_gradient_accumulation = true;
  bool fp16 = false;
  bool bf16 = false;
  ZeroConfig zero;
  std::vector<ResolvedAuto> resolved_auto;  ///< in file order
};

}  // namespace zfetch::model
