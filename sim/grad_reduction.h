// The stage-3 optimizer's gradient reduction bookkeeping within one backward: which params'
// gradients its hook has put into the reduce bucket, and the uniqueness its reduction asserts
// (DeepSpeedZeroOptimizer_Stage3, snapshot edaa722; docs/backward-order.md section 7a).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/scenario.h"
#include "sim/state.h"

namespace zfetch::sim {

class GradReduction {
 public:
  /// A param whose gradient entered the bucket twice, and the autograd executions that
  /// accumulated it: the nested backward of a reentrant region (its index), or -1 for the
  /// engine's own backward.
  struct Duplicate {
    ParamIndex param;
    int32_t first_task_region;
    int32_t second_task_region;
    bool leaf;  ///< a z3 leaf param: added by its leaf module's backward hook, once per call
  };

  GradReduction(const model::Scenario& scenario, const ParamState& params,
                const ModuleState& modules);

  /// engine.backward begins: the bucket is empty (the previous epilogue reduced it).
  void begin_backward();
  /// p's gradient was accumulated (AccumulateGrad ran) in the autograd execution of
  /// `task_region`: the post-accumulate hook `reduce_partition_and_remove_grads` adds p to the
  /// bucket. z3 leaf params have no such hook (their leaf module's backward hook reduces them).
  void on_accumulated(ParamIndex p, int32_t task_region);
  /// The backward of one call of z3 leaf module `m`: its full backward hook
  /// (`reduce_leaf_module_grads`) adds every trainable param of its subtree to the bucket, once
  /// per call, so a leaf called twice in one backward is reduced twice (seen on real DeepSpeed,
  /// scenarios/fidelity/f1e, f1f).
  void on_leaf_module_backward(ModuleIndex m, int32_t task_region);
  /// The first param that is in the bucket twice when the epilogue reduces it, if any:
  /// __reduce_and_partition_ipg_grads asserts len(set(ds_ids)) == len(params).
  [[nodiscard]] const std::optional<Duplicate>& duplicate() const { return duplicate_; }
  /// Whether p's gradient is in this backward's bucket: the epilogue reduces it and sets the
  /// param's grad to None. A z3 leaf param whose leaf module's hook did not run keeps its grad.
  /// The params in this backward's bucket, in the order their gradients entered it.
  [[nodiscard]] const std::vector<ParamIndex>& bucket() const { return bucket_; }
  [[nodiscard]] bool in_bucket(ParamIndex p) const {
    return added_in_[static_cast<size_t>(p)] == backward_;
  }

 private:
  void add(ParamIndex p, int32_t task_region);

  const ParamState& params_;
  const ModuleState& modules_;
  std::vector<uint8_t> leaf_param_;
  std::vector<uint32_t> added_in_;  ///< per param: the backward it was last added in
  std::vector<int32_t> added_by_;   ///< per param: the task region that added it
  std::vector<ParamIndex> bucket_;  ///< this backward's, each param once (reserved: no growth)
  uint32_t backward_ = 0;
  std::optional<Duplicate> duplicate_;
};

}  // namespace zfetch::sim
