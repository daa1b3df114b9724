// Flat per-parameter and per-module state of one simulated process, indexed by scenario index.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/scenario.h"
#include "trace/event.h"

namespace zfetch::sim {

using model::ModuleIndex;
using model::ParamIndex;
using trace::Status;

/// A small insertion-ordered set of ids; capacity is reserved up front so that the steady
/// state never allocates.
class IdSet {
 public:
  void reserve(size_t n) { ids_.reserve(n); }
  [[nodiscard]] bool contains(int64_t id) const {
    return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
  }
  bool insert(int64_t id) {
    if (contains(id)) {
      return false;
    }
    ids_.push_back(id);
    return true;
  }
  void erase(int64_t id) {
    auto it = std::find(ids_.begin(), ids_.end(), id);
    if (it != ids_.end()) {
      ids_.erase(it);
    }
  }
  void clear() { ids_.clear(); }
  [[nodiscard]] bool empty() const { return ids_.empty(); }
  [[nodiscard]] size_t size() const { return ids_.size(); }
  [[nodiscard]] const std::vector<int64_t>& ids() const { return ids_; }

 private:
  std::vector<int64_t> ids_;
};

/// Per-parameter state (semantics section 0), one entry per scenario parameter. Tied aliases
/// are never used as indices: every access goes through the canonical (target) index.
struct ParamState {
  std::vector<int64_t> ds_id;
  std::vector<Status> status;
  std::vector<uint8_t> persist;
  std::vector<uint8_t> is_external;       ///< dangling returned param (5.3)
  std::vector<IdSet> consumers;           ///< ds_active_sub_modules (module ds_ids)
  std::vector<int64_t> attributed_owner;  ///< module ds_id added by recompute attribution, or -1
  std::vector<int64_t> inflight_group;    ///< gather group of the in-flight handle, or -1
  /// INFLIGHT with its full-shape data already: a gather of the param alone sets the data when
  /// it is launched, a coalesced one only at its wait (partition_parameters.py,
  /// _all_gather_sequential vs AllGatherCoalescedHandle.wait)
  std::vector<uint8_t> inflight_shaped;
  std::vector<int64_t> numel;            ///< ds_numel
  std::vector<int64_t> partition_numel;  ///< ds_tensor.ds_numel (P of 1.3)
  std::vector<int64_t> bytes;            ///< full size in bytes
  std::vector<uint8_t> frozen;
  std::vector<uint8_t> multi_dim;       ///< len(ds_shape) != 1 (ZenFlow transposes these)
  std::vector<uint8_t> compute_layout;  ///< ZenFlow: 1 when the data is in compute layout
  std::vector<uint8_t> swapped_in;      ///< NVMe offload: the partition is in a CPU buffer
  std::vector<uint8_t> fast_sharded;    ///< data is fast sharding's 1-element buffer (4.8), not []
  std::vector<uint8_t> has_grad;        ///< param.grad is set: accumulated, not yet reduced
  /// The numel of a gradient made by zeros_like(param) while its data was emptied (0, or 1 for
  /// fast sharding's buffer), or -1: a z3 leaf's early backward hook (process_backward.cc)
  std::vector<int8_t> emptied_grad_numel;
  std::vector<ParamIndex> canonical;  ///< alias -> target (identity for canonical params)
  std::vector<ParamIndex> by_id;      ///< canonical params in ds_id (registration) order
};

/// Per-module state (semantics section 0). `hooked` is false for descendants of z3 leaves.
struct ModuleState {
  std::vector<int64_t> ds_id;
  std::vector<uint8_t> hooked;
  std::vector<uint8_t> leaf;
  std::vector<std::vector<ParamIndex>> own_params;        ///< fetch list part: recursive for leaves
  std::vector<std::vector<ParamIndex>> direct_params;     ///< parameters(recurse=False)
  std::vector<std::vector<ParamIndex>> recursive_params;  ///< parameters(recurse=True)
  std::vector<std::vector<ParamIndex>> externals;         ///< _external_params, insertion order
  std::vector<std::vector<ParamIndex>> recompute;  ///< ds_recompute_parameters, insertion order
  std::vector<int64_t> grads_remaining;            ///< ds_grads_remaining
};

}  // namespace zfetch::sim
