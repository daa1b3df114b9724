// DeepSpeed's renderings (sim/ds_format.h): ds_summary, tuples, lists, the tracing error text.
#include "sim/ds_format.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/load.h"

namespace zfetch::sim {
namespace {

// The seed's model: base.weight [8, 8] frozen, adapter_A.weight [2, 8], adapter_B.weight [8, 2].
model::Scenario seed() {
  model::LoadResult loaded = model::load_scenario_file(
      std::string(ZFETCH_SOURCE_DIR) + "/scenarios/seed/resident_adapter_resume.yaml");
  REQUIRE(loaded.scenario);
  return std::move(*loaded.scenario);
}

// Engine 2 at the failure of 7.4 (ids per the 7.1 correction): W0 = 3 NA, Aw = 4 AV held by
// module 5, Bw = 5 AV; world size 2, so partitions of 32 and 8 elements (1.3).
ParamState engine2_at_failure(const model::Scenario& scenario) {
  ParamState params;
  const size_t n = scenario.params.size();
  REQUIRE(n == 3);
  params.ds_id = {3, 4, 5};
  params.status = {Status::NotAvailable, Status::Available, Status::Available};
  params.persist = {0, 1, 1};
  params.is_external.assign(n, 0);
  params.consumers.resize(n);
  params.consumers[1].insert(5);
  params.numel = {64, 16, 16};
  params.partition_numel = {32, 8, 8};
  params.frozen = {1, 0, 0};
  params.has_grad.assign(n, 0);
  params.emptied_grad_numel.assign(n, -1);
  return params;
}

TEST_SUITE("sim") {
  TEST_CASE("ds_summary: 1.2 key order, visible shape (0,) while NA, sets as {5} / set()") {
    const model::Scenario scenario = seed();
    ParamState params = engine2_at_failure(scenario);
    CHECK(ds_summary(scenario, params, 0, false) ==
          "{'id': 3, 'status': 'NOT_AVAILABLE', 'numel': 0, 'ds_numel': 64, 'shape': (0,), "
          "'ds_shape': (8, 8), 'requires_grad': False, 'grad_shape': None, 'persist': False, "
          "'active_sub_modules': set(), 'ds_tensor.shape': torch.Size([32])}");
    // The strings of 7.4 as real DeepSpeed printed them (docs/deepspeed-validation.md 1).
    CHECK(ds_summary(scenario, params, 1, true) ==
          "{'id': 'name=adapter.adapter_A.weight id=4', 'status': 'AVAILABLE', 'numel': 16, "
          "'ds_numel': 16, 'shape': (2, 8), 'ds_shape': (2, 8), 'requires_grad': True, "
          "'grad_shape': None, 'persist': True, 'active_sub_modules': {5}, 'ds_tensor.shape': "
          "torch.Size([8])}");
    params.status[2] = Status::Inflight;
    params.consumers[2].insert(8);
    params.consumers[2].insert(5);
    CHECK(ds_summary(scenario, params, 2, false) ==
          "{'id': 5, 'status': 'INFLIGHT', 'numel': 16, 'ds_numel': 16, 'shape': (8, 2), "
          "'ds_shape': (8, 2), 'requires_grad': True, 'grad_shape': None, 'persist': True, "
          "'active_sub_modules': {5, 8}, 'ds_tensor.shape': torch.Size([8])}");
    // Once AccumulateGrad has given it a gradient (until the reduction ends engine.backward),
    // grad_shape is the gradient's shape, the param's full shape, even while partitioned.
    params.has_grad[2] = 1;
    params.status[2] = Status::NotAvailable;
    CHECK(ds_summary(scenario, params, 2, false) ==
          "{'id': 5, 'status': 'NOT_AVAILABLE', 'numel': 0, 'ds_numel': 16, 'shape': (0,), "
          "'ds_shape': (8, 2), 'requires_grad': True, 'grad_shape': (8, 2), 'persist': True, "
          "'active_sub_modules': {5, 8}, 'ds_tensor.shape': torch.Size([8])}");
  }

  TEST_CASE("ds_summary_tuple and python_list: Python's tuple and list reprs") {
    const model::Scenario scenario = seed();
    const ParamState params = engine2_at_failure(scenario);
    CHECK(ds_summary_tuple(scenario, params, {}) == "()");
    const std::vector<ParamIndex> one = {0};
    CHECK(ds_summary_tuple(scenario, params, one) ==
          "(" + ds_summary(scenario, params, 0, true) + ",)");
    const std::vector<ParamIndex> two = {0, 2};
    CHECK(ds_summary_tuple(scenario, params, two) ==
          "(" + ds_summary(scenario, params, 0, true) + ", " +
              ds_summary(scenario, params, 2, true) + ")");
    CHECK(python_list({}) == "[]");
    const std::vector<int64_t> ids = {0, 1, 2, 0};
    CHECK(python_list(ids) == "[0, 1, 2, 0]");
  }

  TEST_CASE("tracing_error_message: 3.4 #3, spaces before the newlines") {
    CHECK(tracing_error_message(6, 5, true, "(N,)", 1, "(G,)") ==
          "tracing error at step 6: \nmodule id: 5, training: True\nexpected the next 1 parameters "
          "in the parameter fetch queue to be (N,) \nbut got \n (G,).");
    // An eval pass prints training: False; a queue that ran dry gives a shorter tuple.
    CHECK(tracing_error_message(0, 12, false, "(A, B)", 2, "()") ==
          "tracing error at step 0: \nmodule id: 12, training: False\nexpected the next 2 "
          "parameters in the parameter fetch queue to be (A, B) \nbut got \n ().");
  }
}

}  // namespace
}  // namespace zfetch::sim
