// Hugging Face "auto" ds_config values (see hf_auto.h).
#include "model/hf_auto.h"

#include <fmt/format.h>

namespace zfetch::model {

std::optional<std::string> hf_auto_value(std::string_view dotted_key, const HfTrainingArgs& args,
                                         std::string& rule) {
  const auto fill = [&](std::string value, std::string why) {
    rule = std::move(why);
    return std::optional<std::string>(std::move(value));
  };
  if (dotted_key == "train_micro_batch_size_per_gpu") {
    return fill(std::to_string(args.per_device_train_batch_size), "per_device_train_batch_size");
  }
  if (dotted_key == "gradient_accumulation_steps") {
    return fill(std::to_string(args.gradient_accumulation_steps), "gradient_accumulation_steps");
  }
  if (dotted_key == "train_batch_size") {
    return fill(std::to_string(args.world_size * args.per_device_train_batch_size *
                               args.gradient_accumulation_steps),
                "world_size * per_device_train_batch_size * gradient_accumulation_steps");
  }
  if (dotted_key == "fp16.enabled") {
    return fill(args.fp16 ? "true" : "false", "fp16");
  }
  if (dotted_key == "bf16.enabled" || dotted_key == "bfloat16.enabled") {
    return fill(args.bf16 ? "true" : "false", "bf16");
  }
  // TrainingArguments' defaults for the optimizer and scheduler keys the integration fills;
  // zfetch does not read them, the report says what DeepSpeed would get.
  if (dotted_key == "gradient_clipping") {
    return fill("1.0", "max_grad_norm");
  }
  if (dotted_key == "optimizer.params.lr" || dotted_key == "scheduler.params.warmup_max_lr") {
    return fill("5e-05", "learning_rate");
  }
  if (dotted_key == "optimizer.params.betas") {
    return fill("[0.9, 0.999]", "adam_beta1, adam_beta2");
  }
  if (dotted_key == "optimizer.params.eps") {
    return fill("1e-08", "adam_epsilon");
  }
  if (dotted_key == "optimizer.params.weight_decay") {
    return fill("0.0", "weight_decay");
  }
  if (dotted_key == "scheduler.params.warmup_min_lr") {
    return fill("0", "always 0");
  }
  if (dotted_key == "scheduler.params.total_num_steps") {
    return fill(std::to_string(args.training_steps), "the schedule's optimizer steps");
  }
  if (dotted_key == "scheduler.params.warmup_num_steps") {
    return fill("0", "warmup_steps");
  }
  const bool from_hidden = dotted_key == "zero_optimization.reduce_bucket_size" ||
                           dotted_key == "zero_optimization.stage3_prefetch_bucket_size" ||
                           dotted_key == "zero_optimization.stage3_param_persistence_threshold";
  if (!from_hidden) {
    rule = "the HF integration does not fill this key";
    return std::nullopt;
  }
  if (!args.hidden_size) {
    rule = "it is derived from the model's hidden size; give it as 'hf: {hidden_size: N}'";
    return std::nullopt;
  }
  const int64_t hidden = *args.hidden_size;
  if (dotted_key == "zero_optimization.reduce_bucket_size") {
    return fill(std::to_string(hidden * hidden),
                fmt::format("hidden_size^2, hidden_size {}", hidden));
  }
  if (dotted_key == "zero_optimization.stage3_prefetch_bucket_size") {
    // The integration writes the float 0.9 * h * h; DeepSpeed's integer field takes its
    // integral part (9 * h * h / 10, exact in integers).
    return fill(std::to_string(9 * hidden * hidden / 10),
                fmt::format("0.9 * hidden_size^2 rounded down, hidden_size {}", hidden));
  }
  return fill(std::to_string(10 * hidden), fmt::format("10 * hidden_size, hidden_size {}", hidden));
}

}  // namespace zfetch::model
