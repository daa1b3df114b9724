// torch's AccumulateGrad storing a gradient into a parameter whose data ZeRO-3 has emptied.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace zfetch::sim {

/// What AccumulateGrad raises when it stores the gradient `shape` of a param whose data is
/// empty (shape [0], strides [1]), or "" when it does not fail. With no gradient stored yet it
/// keeps the incoming tensor only if that obeys the layout contract against the param's strides
/// (torch/csrc/autograd/functions/accumulate_grad.h, utils::obeys_layout_contract); otherwise it
/// copies the gradient into a new tensor of the param's shape, [0], and the copy's broadcast
/// fails. One use hands on the expanded gradient of a sum (strides 0): the contract fails. Several
/// uses' gradients are summed into a new contiguous tensor, whose first stride (the product of
/// the other dims) must equal the empty data's 1 unless the first dim is 1 (seen on real
/// DeepSpeed: [8, 8] and [4, 6] fail, [16] and [8, 1] pass, scenarios/fidelity/f3*).
/// `data_numel`: 0 for a partitioned param ([0]), 1 for fast sharding's 1-element buffer ([1],
/// semantics 4.8), whose copy fails on the output shape instead.
[[nodiscard]] std::string empty_param_accumulate_error(std::span<const int64_t> shape,
                                                       uint32_t uses, int64_t data_numel = 0);

/// What torch raises when a gradient of `shape` is written into a 1-D tensor of `data_numel`
/// elements, 0 or 1 (a copy, or an in-place add into a gradient made from the emptied data):
/// the two shapes must broadcast, and the result must have the output's shape. "" when it fits.
[[nodiscard]] std::string grad_into_buffer_error(std::span<const int64_t> shape,
                                                 int64_t data_numel);

}  // namespace zfetch::sim
