// torch's AccumulateGrad into a parameter whose data is empty: when it copies, and the message
// (the cases probed on torch 2.11 with the generic runner's ops, sim/accumulate_grad.h).
#include "sim/accumulate_grad.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace zfetch::sim {
namespace {

EmptyParamAccumulation stored(std::vector<int64_t> shape, uint32_t uses, bool cast = false,
                              int64_t data_numel = 0) {
  return accumulate_into_empty(shape, uses, cast, data_numel);
}

std::string error_for(std::vector<int64_t> shape, uint32_t uses, bool cast = false,
                      int64_t data_numel = 0) {
  return stored(shape, uses, cast, data_numel).error;
}

TEST_SUITE("sim") {
  TEST_CASE("accumulate_grad: summed fp32 gradients are kept when every later dim has size 1") {
    CHECK_FALSE(stored({16}, 2).copied);
    CHECK_FALSE(stored({8, 1}, 2).copied);
    CHECK_FALSE(stored({1}, 3).copied);
    // [1, 8] and [8, 8]: the contiguous strides do not match the empty data's: copied into [0],
    // and the broadcast names b's last dim.
    CHECK(error_for({1, 8}, 2) ==
          "The size of tensor a (0) must match the size of tensor b (8) at non-singleton "
          "dimension 1");
    CHECK(error_for({8, 8}, 2) ==
          "The size of tensor a (0) must match the size of tensor b (8) at non-singleton "
          "dimension 1");
    CHECK(error_for({4, 6}, 3) ==
          "The size of tensor a (0) must match the size of tensor b (6) at non-singleton "
          "dimension 1");
  }

  TEST_CASE("accumulate_grad: a single fp32 use hands on an expanded gradient, always copied") {
    CHECK(error_for({16}, 1) ==
          "The size of tensor a (0) must match the size of tensor b (16) at non-singleton "
          "dimension 0");
    CHECK(error_for({1, 1}, 1) == "output with shape [0] doesn't match the broadcast shape [1, 0]");
    CHECK(error_for({4, 2, 1}, 1) ==
          "output with shape [0] doesn't match the broadcast shape [4, 2, 0]");
    // [1] broadcasts into [0] without an error: the grad is stored with 0 elements.
    CHECK(stored({1}, 1).copied);
    CHECK(error_for({1}, 1).empty());
    CHECK(error_for({}, 1).empty());
  }

  TEST_CASE("accumulate_grad: a cast param's gradient is contiguous unless it has one element") {
    CHECK_FALSE(stored({16}, 1, true).copied);
    CHECK_FALSE(stored({8, 1}, 1, true).copied);
    CHECK(stored({1}, 2, true).copied);
    CHECK(error_for({1}, 2, true).empty());
    CHECK(error_for({1, 1}, 2, true) ==
          "output with shape [0] doesn't match the broadcast shape [1, 0]");
    CHECK(error_for({1, 8}, 1, true) ==
          "The size of tensor a (0) must match the size of tensor b (8) at non-singleton "
          "dimension 1");
  }

  TEST_CASE("accumulate_grad: fast sharding's 1-element buffer fails on the copy's output shape") {
    CHECK(error_for({2, 2}, 1, false, 1) ==
          "output with shape [1] doesn't match the broadcast shape [2, 2]");
    CHECK(error_for({2, 2}, 2, false, 1) ==
          "output with shape [1] doesn't match the broadcast shape [2, 2]");
    CHECK_FALSE(stored({16}, 2, false, 1).copied);  // kept as it is: nothing is copied
  }
}

}  // namespace
}  // namespace zfetch::sim
