// torch's AccumulateGrad into a parameter whose data is empty: when it copies, and the message.
#include "sim/accumulate_grad.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace zfetch::sim {
namespace {

std::string error_for(std::vector<int64_t> shape, uint32_t uses, int64_t data_numel = 0) {
  return empty_param_accumulate_error(shape, uses, data_numel);
}

TEST_SUITE("sim") {
  TEST_CASE("accumulate_grad: summed gradients are kept when their strides match the empty data") {
    // Contiguous [16]: strides [1] = the empty data's [1]; [8, 1]: dims of size 1 not compared.
    CHECK(error_for({16}, 2).empty());
    CHECK(error_for({8, 1}, 2).empty());
    CHECK(error_for({1, 8}, 2).empty());
    // [8, 8]: first stride 8 != 1, copied into [0]: the broadcast names b's last dim.
    CHECK(error_for({8, 8}, 2) ==
          "The size of tensor a (0) must match the size of tensor b (8) at non-singleton "
          "dimension 1");
    CHECK(error_for({4, 6}, 3) ==
          "The size of tensor a (0) must match the size of tensor b (6) at non-singleton "
          "dimension 1");
  }

  TEST_CASE("accumulate_grad: a single use hands on an expanded gradient, which is copied") {
    CHECK(error_for({16}, 1) ==
          "The size of tensor a (0) must match the size of tensor b (16) at non-singleton "
          "dimension 0");
    CHECK(error_for({1, 1}, 1).empty());
    CHECK(error_for({4, 2, 1}, 1) ==
          "output with shape [0] doesn't match the broadcast shape [4, 2, 0]");
    CHECK(error_for({}, 1).empty());
  }

  TEST_CASE("accumulate_grad: fast sharding's 1-element buffer fails on the copy's output shape") {
    CHECK(error_for({2, 2}, 1, 1) ==
          "output with shape [1] doesn't match the broadcast shape [2, 2]");
    CHECK(error_for({2, 2}, 2, 1) ==
          "output with shape [1] doesn't match the broadcast shape [2, 2]");
    CHECK(error_for({16}, 2, 1).empty());  // kept as it is: nothing is copied
  }
}

}  // namespace
}  // namespace zfetch::sim
