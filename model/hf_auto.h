// Hugging Face "auto" ds_config values, filled as transformers' DeepSpeed integration fills
// them (HfTrainerDeepSpeedConfig.trainer_config_process and trainer_config_finalize).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zfetch::model {

/// What the integration fills "auto" from: the model's config.hidden_size and the
/// TrainingArguments of the run (TrainingArguments' defaults unless the scenario's `hf:` says).
struct HfTrainingArgs {
  std::optional<int64_t> hidden_size;
  int64_t per_device_train_batch_size = 8;
  int64_t gradient_accumulation_steps = 1;
  bool fp16 = false;
  bool bf16 = false;
  int64_t world_size = 1;      ///< the scenario's, for train_batch_size
  int64_t training_steps = 0;  ///< the schedule's optimizer steps (num_training_steps)
};

/// The value "auto" takes for ds_config key `dotted_key` (`zero_optimization.stage3_...`,
/// `fp16.enabled`, `train_batch_size`, ...), as text (`15099494`, `false`), and in `rule`
/// how it was derived. nullopt when the integration does not fill that key (DeepSpeed would
/// then reject the "auto"), or when it needs the hidden size and none is given (`rule` then
/// says so).
std::optional<std::string> hf_auto_value(std::string_view dotted_key, const HfTrainingArgs& args,
                                         std::string& rule);

}  // namespace zfetch::model
