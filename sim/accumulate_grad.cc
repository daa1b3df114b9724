// torch's AccumulateGrad into an emptied parameter.
#include "sim/accumulate_grad.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace zfetch::sim {

EmptyParamAccumulation accumulate_into_empty(std::span<const int64_t> shape, uint32_t uses,
                                             bool cast, int64_t data_numel) {
  if (shape.empty()) {
    return {};
  }
  int64_t inner = 1;  // the product of the dims after the first
  bool all_one = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    all_one = all_one && shape[d] == 1;
    if (d > 0) {
      inner *= shape[d];
    }
  }
  const bool contiguous = cast ? !all_one : uses > 1;
  if (contiguous && inner == 1) {
    return {};  // kept as it is: the full gradient
  }
  return {grad_into_buffer_error(shape, data_numel), true};
}

std::string grad_into_buffer_error(std::span<const int64_t> shape, int64_t data_numel) {
  if (shape.empty()) {
    return {};
  }
  bool all_one = true;
  for (int64_t d : shape) {
    all_one = all_one && d == 1;
  }
  if (data_numel == 1) {
    // Fast sharding's 1-element buffer: [1] broadcasts against anything, and the copy's output
    // shape is what does not match.
    return all_one ? std::string()
                   : fmt::format("output with shape [1] doesn't match the broadcast shape [{}]",
                                 fmt::join(shape, ", "));
  }
  if (shape.back() != 1) {
    return fmt::format(
        "The size of tensor a (0) must match the size of tensor b ({}) at non-singleton "
        "dimension {}",
        shape.back(), shape.size() - 1);
  }
  // [.., 1] broadcasts against [0]: the copy's output shape is what does not match (not seen on
  // real DeepSpeed yet); [1] fits.
  if (shape.size() == 1) {
    return {};
  }
  std::vector<int64_t> broadcast(shape.begin(), shape.end());
  broadcast.back() = 0;
  return fmt::format("output with shape [0] doesn't match the broadcast shape [{}]",
                     fmt::join(broadcast, ", "));
}

}  // namespace zfetch::sim
