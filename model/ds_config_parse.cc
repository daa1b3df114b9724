// The ds_config keys zfetch reads, the genuine DeepSpeed keys it ignores, and their checks.
#include "model/ds_config_parse.h"

#include <fmt/format.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/limits.h"

namespace zfetch::model::detail {

namespace {

using namespace std::string_view_literals;

// Top-level keys that shape fetch scheduling (semantics 8).
constexpr std::array kReadTopKeys = {
    "train_micro_batch_size_per_gpu"sv,
    "gradient_accumulation_steps"sv,
    "fp16"sv,
    "bf16"sv,
    "bfloat16"sv,
    "zero_optimization"sv,
};

// Genuine DeepSpeed top-level keys that do not change fetch scheduling: accepted, not read,
// so a user's own ds_config loads unchanged. A key in neither table is a typo.
constexpr std::array kIgnoredTopKeys = {
    "train_batch_size"sv,
    "optimizer"sv,
    "scheduler"sv,
    "gradient_clipping"sv,
    "steps_per_print"sv,
    "wall_clock_breakdown"sv,
    "memory_breakdown"sv,
    "activation_checkpointing"sv,
    "zero_allow_untested_optimizer"sv,
    "zero_force_ds_cpu_optimizer"sv,
    "communication_data_type"sv,
    "seq_parallel_communication_data_type"sv,
    "prescale_gradients"sv,
    "gradient_predivide_factor"sv,
    "sparse_gradients"sv,
    "flops_profiler"sv,
    "tensorboard"sv,
    "wandb"sv,
    "csv_monitor"sv,
    "comet"sv,
    "amp"sv,
    "dump_state"sv,
    "elasticity"sv,
    "autotuning"sv,
    "checkpoint"sv,
    "data_efficiency"sv,
    "curriculum_learning"sv,
    "compression_training"sv,
    "aio"sv,
    "nebula"sv,
    "pipeline"sv,
    "data_types"sv,
    "comms_logger"sv,
    "torch_autocast"sv,
    "compile"sv,
    "sparse_attention"sv,
    "disable_allgather"sv,
    "dataloader_drop_last"sv,
    "eigenvalue"sv,
    "progressive_layer_drop"sv,
    "quantize_training"sv,
    "load_universal_checkpoint"sv,
    "use_node_local_storage"sv,
    "hybrid_engine"sv,
    "graph_harvesting"sv,
    "timers"sv,
    "weight_quantization"sv,
    "zero_enabled"sv,
    "train_micro_batch_size"sv,
};

constexpr std::array kFp16Keys = {
    "enabled"sv,
    "auto_cast"sv,
    "loss_scale"sv,
    "initial_scale_power"sv,
    "loss_scale_window"sv,
    "hysteresis"sv,
    "consecutive_hysteresis"sv,
    "min_loss_scale"sv,
    "fp16_master_weights_and_grads"sv,
};
constexpr std::array kBf16Keys = {"enabled"sv, "immediate_grad_update"sv, "check_grad_overflow"sv};

// Both spellings of each field are rows (see ZeroKey).
constexpr std::array kZeroKeys = {
    ZeroKey{"stage3_prefetch_bucket_size", &ZeroConfig::prefetch_bucket_size},
    ZeroKey{"prefetch_bucket_size", &ZeroConfig::prefetch_bucket_size},
    ZeroKey{"stage3_param_persistence_threshold", &ZeroConfig::param_persistence_threshold},
    ZeroKey{"param_persistence_threshold", &ZeroConfig::param_persistence_threshold},
    ZeroKey{"stage3_model_persistence_threshold", &ZeroConfig::model_persistence_threshold},
    ZeroKey{"model_persistence_threshold", &ZeroConfig::model_persistence_threshold},
    ZeroKey{"stage3_max_live_parameters", &ZeroConfig::max_live_parameters},
    ZeroKey{"max_live_parameters", &ZeroConfig::max_live_parameters},
    ZeroKey{"stage3_max_reuse_distance", &ZeroConfig::max_reuse_distance},
    ZeroKey{"max_reuse_distance", &ZeroConfig::max_reuse_distance},
    ZeroKey{"stage3_module_granularity_threshold", &ZeroConfig::module_granularity_threshold},
    ZeroKey{"module_granularity_threshold", &ZeroConfig::module_granularity_threshold},
    ZeroKey{"stage3_use_all_reduce_for_fetch_params", nullptr,
            &ZeroConfig::use_all_reduce_for_fetch_params},
    ZeroKey{"use_all_reduce_for_fetch_params", nullptr,
            &ZeroConfig::use_all_reduce_for_fetch_params},
    ZeroKey{"stage3_allgather_sequential", nullptr, &ZeroConfig::allgather_sequential},
    ZeroKey{"allgather_sequential", nullptr, &ZeroConfig::allgather_sequential},
    ZeroKey{"overlap_comm", nullptr, &ZeroConfig::overlap_comm},
    ZeroKey{"zero_hpz_partition_size", &ZeroConfig::zero_hpz_partition_size, nullptr, 1},
    ZeroKey{"zero_quantized_weights", nullptr, &ZeroConfig::zero_quantized_weights},
    ZeroKey{"zero_quantized_nontrainable_weights", nullptr,
            &ZeroConfig::zero_quantized_nontrainable_weights},
    ZeroKey{"log_trace_cache_warnings", nullptr, &ZeroConfig::log_trace_cache_warnings},
    ZeroKey{"memory_efficient_linear", nullptr, &ZeroConfig::memory_efficient_linear},
    ZeroKey{"enable_sanity_checks", nullptr, &ZeroConfig::enable_sanity_checks},
    ZeroKey{"mics_shard_size", &ZeroConfig::mics_shard_size, nullptr, -1},
    ZeroKey{"override_module_apply", nullptr, &ZeroConfig::override_module_apply},
    ZeroKey{"allgather_bucket_size", &ZeroConfig::allgather_bucket_size},
};

}  // namespace

std::span<const ZeroKey> zero_config_keys() {
  return kZeroKeys;
}

namespace {

// zero_optimization keys with their own reader below.
constexpr std::array kZeroBlockKeys = {"stage"sv, "offload_param"sv, "leaf_module"sv, "zenflow"sv};

// Genuine zero_optimization keys that do not change fetch scheduling.
constexpr std::array kIgnoredZeroKeys = {
    "reduce_bucket_size"sv,
    "contiguous_gradients"sv,
    "reduce_scatter"sv,
    "sub_group_size"sv,
    "stage3_gather_16bit_weights_on_model_save"sv,
    "stage3_gather_fp16_weights_on_model_save"sv,
    "gather_16bit_weights_on_model_save"sv,
    "round_robin_gradients"sv,
    "offload_optimizer"sv,
    "allgather_partitions"sv,
    "load_from_fp32_weights"sv,
    "elastic_checkpoint"sv,
    "ignore_unused_parameters"sv,
    "legacy_stage1"sv,
    "cpu_offload"sv,
    "cpu_offload_param"sv,
    "cpu_offload_use_pin_memory"sv,
    "zero_quantized_gradients"sv,
    "zeropp_loco_param"sv,
    "mics_hierarchical_params_gather"sv,
    "pipeline_loading_checkpoint"sv,
    "use_multi_rank_bucket_allreduce"sv,
    "save_muon_momentum_buffer_in_memory"sv,
};

constexpr std::array kOffloadParamKeys = {"device"sv,      "nvme_path"sv,  "buffer_count"sv,
                                          "buffer_size"sv, "max_in_cpu"sv, "pin_memory"sv};
constexpr std::array kLeafModuleKeys = {"classes"sv, "names"sv, "name_suffixes"sv};

// Where an error about a whole block points: its key, or the block itself when it has none
// (the top of a ds_config file).
const YAML::Node& block_anchor(const Field& block) {
  return YamlReader::loc(block.key).line != 0 ? block.key : block.value;
}

// Where "auto" values are filled from and listed.
struct AutoFill {
  const HfTrainingArgs& args;
  std::vector<ResolvedAuto>& resolved;
};

bool is_auto(const YAML::Node& node) {
  return node.IsScalar() && node.Scalar() == "auto";
}

// `field` itself, or, for "auto", a field holding the value the HF integration fills in;
// nullopt (reported) when it fills none.
std::optional<Field> fill_auto(YamlReader& reader, const Field& field, std::string_view dotted_key,
                               AutoFill& autos) {
  // A key given again (inline keys over a ds_config file) is no longer the file's "auto".
  std::erase_if(autos.resolved, [&](const ResolvedAuto& r) { return r.key == dotted_key; });
  if (!is_auto(field.value)) {
    return field;
  }
  std::string rule;
  const std::optional<std::string> value = hf_auto_value(dotted_key, autos.args, rule);
  if (!value) {
    reader.error(field.value, fmt::format("'auto' for '{}': {}", dotted_key, rule));
    return std::nullopt;
  }
  autos.resolved.push_back({std::string(dotted_key), *value, rule});
  return Field{YAML::Node(*value), field.name, field.key};
}

// Lists the "auto" values of keys zfetch does not read, with what the integration fills in.
void report_unread_autos(const YAML::Node& node, const std::string& prefix, AutoFill& autos) {
  if (!node.IsMap()) {
    return;
  }
  for (const auto& entry : node) {
    const std::string key =
        prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar();
    if (is_auto(entry.second)) {
      std::string rule;
      if (const std::optional<std::string> value = hf_auto_value(key, autos.args, rule)) {
        autos.resolved.push_back({key, *value, rule});
      }
    } else {
      report_unread_autos(entry.second, key, autos);
    }
  }
}

template <typename... Tables>
std::vector<std::string_view> joined(const Tables&... tables) {
  std::vector<std::string_view> all;
  (all.insert(all.end(), tables.begin(), tables.end()), ...);
  return all;
}

std::vector<std::string_view> zero_known_keys() {
  std::vector<std::string_view> keys = joined(kZeroBlockKeys);
  for (const ZeroKey& row : kZeroKeys) {
    keys.push_back(row.key);
  }
  keys.insert(keys.end(), kIgnoredZeroKeys.begin(), kIgnoredZeroKeys.end());
  return keys;
}

void read_precision(YamlReader& reader, const Field& block, std::span<const std::string_view> keys,
                    bool& enabled, AutoFill& autos) {
  if (!reader.expect_map(block)) {
    return;
  }
  reader.check_keys(block.value, keys, fmt::format("'{}'", block.name));
  for (const auto& entry : block.value) {
    if (entry.first.Scalar() == "enabled") {
      const std::optional<Field> field = fill_auto(reader, {entry.second, "enabled", entry.first},
                                                   fmt::format("{}.enabled", block.name), autos);
      if (auto value = field ? reader.read_bool(*field) : std::nullopt) {
        enabled = *value;
      }
    }
  }
}

void read_string_list(YamlReader& reader, const Field& field, std::vector<std::string>& out) {
  if (!reader.expect_seq(field)) {
    return;
  }
  for (const YAML::Node& item : field.value) {
    if (auto text = reader.read_string({item, field.name, {}})) {
      out.push_back(*text);
    }
  }
}

void read_offload_param(YamlReader& reader, const Field& block, OffloadParamConfig& offload) {
  if (!reader.expect_map(block)) {
    return;
  }
  reader.check_keys(block.value, kOffloadParamKeys, "'offload_param'");
  for (const auto& entry : block.value) {
    const std::string& key = entry.first.Scalar();
    const Field field{entry.second, key, entry.first};
    if (key == "device") {
      if (auto device = reader.read_choice(field, "offload device", kOffloadDeviceNames.names())) {
        offload.device = *kOffloadDeviceNames.find(*device);
      }
    } else if (key == "nvme_path") {
      // DeepSpeed's default is None; an explicit null keeps it.
      if (!entry.second.IsNull()) {
        if (auto path = reader.read_string(field)) {
          offload.nvme_path = *path;
        }
      }
    } else if (key == "pin_memory") {
      if (auto pin = reader.read_bool(field)) {
        offload.pin_memory = *pin;
      }
    } else if (key == "buffer_count" || key == "buffer_size" || key == "max_in_cpu") {
      if (auto value = reader.read_int(field, 0, true)) {
        (key == "buffer_count"  ? offload.buffer_count
         : key == "buffer_size" ? offload.buffer_size
                                : offload.max_in_cpu) = *value;
      }
    }
  }
}

void read_zero_optimization(YamlReader& reader, const Field& block, ZeroConfig& zero,
                            AutoFill& autos, bool is_override) {
  if (!reader.expect_map(block)) {
    return;
  }
  static const std::vector<std::string_view> known = zero_known_keys();
  reader.check_keys(block.value, known, "'zero_optimization'");
  bool stage_given = false;
  for (const auto& entry : block.value) {
    const std::string& key = entry.first.Scalar();
    const Field field{entry.second, key, entry.first};
    if (key == "stage") {
      stage_given = true;
      if (auto stage = reader.read_int(field, 0, true)) {
        zero.stage = *stage;
        if (*stage != 3) {
          reader.error(entry.second,
                       fmt::format("zfetch simulates ZeRO stage 3, got stage {}", *stage));
        }
      }
    } else if (key == "offload_param") {
      // `offload_param: null` is DeepSpeed's default (None).
      if (!entry.second.IsNull()) {
        zero.offload_param_set = true;
        read_offload_param(reader, field, zero.offload_param);
      }
    } else if (key == "leaf_module") {
      if (reader.expect_map(field)) {
        reader.check_keys(entry.second, kLeafModuleKeys, "'leaf_module'");
        for (const auto& leaf : entry.second) {
          const std::string& leaf_key = leaf.first.Scalar();
          LeafModuleConfig& config = zero.leaf_module;
          std::vector<std::string>& out = leaf_key == "classes" ? config.classes
                                          : leaf_key == "names" ? config.names
                                                                : config.name_suffixes;
          out.clear();  // an inline list replaces a ds_config file's
          read_string_list(reader, {leaf.second, leaf_key, leaf.first}, out);
        }
      }
    } else if (key == "zenflow") {
      // Only presence matters (section 6); ZenFlow's own keys are not fetch scheduling.
      zero.zenflow = !entry.second.IsNull();
    } else {
      for (const ZeroKey& row : kZeroKeys) {
        if (row.key != key) {
          continue;
        }
        const std::optional<Field> filled =
            fill_auto(reader, field, fmt::format("zero_optimization.{}", key), autos);
        if (!filled) {
          continue;
        }
        if (row.int_field != nullptr) {
          if (auto value = reader.read_int(*filled, row.min, true)) {
            zero.*row.int_field = *value;
          }
        } else if (auto flag = reader.read_bool(*filled)) {
          zero.*row.bool_field = *flag;
        }
      }
    }
  }
  if (!stage_given && !is_override) {
    reader.error(block_anchor(block),
                 "'zero_optimization' has no 'stage'; zfetch simulates ZeRO stage 3, so give "
                 "'stage: 3'");
  }
}

}  // namespace

void read_deepspeed_config(YamlReader& reader, const Field& block, const HfTrainingArgs& hf,
                           DeepSpeedConfig& config, bool is_override) {
  if (!reader.expect_map(block)) {
    return;
  }
  AutoFill autos{hf, config.resolved_auto};
  static const std::vector<std::string_view> known = joined(kReadTopKeys, kIgnoredTopKeys);
  reader.check_keys(block.value, known, "the ds_config");
  bool zero_given = false;
  for (const auto& entry : block.value) {
    const std::string& key = entry.first.Scalar();
    const Field field{entry.second, key, entry.first};
    if (key == "train_micro_batch_size_per_gpu" || key == "gradient_accumulation_steps") {
      const std::optional<Field> filled = fill_auto(reader, field, key, autos);
      // The micro-batch size is the cost model's token count when the timing gives none.
      const int64_t max =
          key == "train_micro_batch_size_per_gpu" ? kMaxTokensPerMicroBatch : INT64_MAX;
      if (auto value = filled ? reader.read_int(*filled, 1, true, max) : std::nullopt) {
        (key == "gradient_accumulation_steps" ? config.gradient_accumulation_steps
                                              : config.train_micro_batch_size_per_gpu) = *value;
      }
    } else if (key == "fp16") {
      read_precision(reader, field, kFp16Keys, config.fp16, autos);
    } else if (key == "bf16" || key == "bfloat16") {
      read_precision(reader, field, kBf16Keys, config.bf16, autos);
    } else if (key == "zero_optimization") {
      zero_given = true;
      read_zero_optimization(reader, field, config.zero, autos, is_override);
      for (const auto& zero_entry : entry.second) {
        if (zero_entry.first.Scalar() == "reduce_bucket_size" && is_auto(zero_entry.second)) {
          std::string rule;
          if (auto value = hf_auto_value("zero_optimization.reduce_bucket_size", hf, rule)) {
            autos.resolved.push_back({"zero_optimization.reduce_bucket_size", *value, rule});
          }
        }
      }
    } else if (key == "train_batch_size" || key == "gradient_clipping") {
      std::string rule;
      if (is_auto(entry.second)) {
        if (auto value = hf_auto_value(key, hf, rule)) {
          autos.resolved.push_back({key, *value, rule});
        }
      }
    } else if (key == "optimizer" || key == "scheduler") {
      report_unread_autos(entry.second, key, autos);
    }
  }
  if (!zero_given && !is_override) {
    reader.error(block_anchor(block),
                 "the ds_config has no 'zero_optimization'; zfetch simulates "
                 "ZeRO stage 3, so give 'zero_optimization: {stage: 3}'");
  }
}

}  // namespace zfetch::model::detail
