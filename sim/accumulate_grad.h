// torch's AccumulateGrad storing a gradient into a parameter whose data ZeRO-3 has emptied.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace zfetch::sim {

/// What AccumulateGrad does with the first gradient of a param whose data is empty (shape [0],
/// strides [1]). It keeps the incoming tensor only if that obeys the layout contract against the
/// param's strides (torch/csrc/autograd/utils/grad_layout_contract.h: dims of size 1 are not
/// compared unless their stride is 0); otherwise it copies the gradient into a new tensor of the
/// param's current shape, [0], and the copy's broadcast can fail. How the gradient is laid out
/// depends on the ops that used the param (the generic runner's: a sum of the param, cast to fp32
/// first when it is not fp32); probed on torch 2.11 for every shape class:
/// * fp32, one use: the expanded gradient of the sum (strides 0) never obeys: always copied;
/// * fp32, several uses: summed out of place into a contiguous tensor, which obeys when every dim
///   after the first has size 1 ([16], [8, 1], [1] kept; [1, 8], [4, 6] copied);
/// * a cast param: the cast's gradient is a new tensor, contiguous unless the param has one
///   element (its stride 0 stays), and further uses add into it in place: kept when every dim
///   after the first has size 1 and the param has more than one element.
/// `data_numel`: 0 for a partitioned param ([0]), 1 for fast sharding's 1-element buffer ([1],
/// semantics 4.8), whose copy fails on the output shape instead.
struct EmptyParamAccumulation {
  std::string error;    ///< what torch raises, or ""
  bool copied = false;  ///< stored as a copy of the data's shape: the grad has data_numel elements
};
[[nodiscard]] EmptyParamAccumulation accumulate_into_empty(std::span<const int64_t> shape,
                                                           uint32_t uses, bool cast,
                                                           int64_t data_numel = 0);

/// What torch raises when a gradient of `shape` is written into a 1-D tensor of `data_numel`
/// elements, 0 or 1 (a copy, or an in-place add into a gradient made from the emptied data):
/// the two shapes must broadcast, and the result must have the output's shape. "" when it fits.
[[nodiscard]] std::string grad_into_buffer_error(std::span<const int64_t> shape,
                                                 int64_t data_numel);

}  // namespace zfetch::sim
