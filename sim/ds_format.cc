// DeepSpeed's own renderings of parameters and errors (semantics 1.2 and 3.4).
#include "sim/ds_format.h"

#include <fmt/format.h>

namespace zfetch::sim {
namespace {

// Python's repr of a tuple of ints: (), (8,), (2, 8).
std::string python_shape(std::span<const int64_t> dims) {
  if (dims.size() == 1) {
    return fmt::format("({},)", dims[0]);
  }
  return fmt::format("({})", fmt::join(dims, ", "));
}

// A Python set of small ints prints in ascending order (their hashes are their values).
std::string python_int_set(const IdSet& set) {
  if (set.empty()) {
    return "set()";
  }
  std::vector<int64_t> sorted = set.ids();
  std::sort(sorted.begin(), sorted.end());
  return fmt::format("{{{}}}", fmt::join(sorted, ", "));
}

}  // namespace

std::string ds_summary(const model::Scenario& scenario, const ParamState& params, ParamIndex p,
                       bool use_debug_name) {
  const model::ParamSpec& spec = scenario.params[p];
  const bool resident = params.status[p] != Status::NotAvailable;
  // The stored shape is the declared one, transposed under ZenFlow (semantics 6).
  std::vector<int64_t> ds_shape = spec.shape;
  if (scenario.zenflow && ds_shape.size() == 2) {
    std::swap(ds_shape[0], ds_shape[1]);
  }
  const int64_t zero[] = {0};
  const std::span<const int64_t> shape = resident ? std::span<const int64_t>(ds_shape) : zero;
  // param.grad keeps the param's shape; under ZenFlow the reduce bucket's copy of it is
  // transposed (__add_grad_to_ipg_bucket), as the stored shape is.
  // A z3 leaf's early hook makes it from the emptied data: (0,), or (1,) under fast sharding.
  const int64_t emptied[] = {params.emptied_grad_numel[p]};
  const std::string grad_shape = !params.has_grad[p]                 ? "None"
                                 : params.emptied_grad_numel[p] >= 0 ? python_shape(emptied)
                                                                     : python_shape(ds_shape);
  const std::string id = use_debug_name
                             ? fmt::format("'name={} id={}'", spec.qualified_name, params.ds_id[p])
                             : fmt::format("{}", params.ds_id[p]);
  return fmt::format(
      "{{'id': {}, 'status': '{}', 'numel': {}, 'ds_numel': {}, 'shape': {}, 'ds_shape': {}, "
      "'requires_grad': {}, 'grad_shape': {}, 'persist': {}, 'active_sub_modules': {}, "
      "'ds_tensor.shape': torch.Size([{}])}}",
      id, kDsStatusNames[params.status[p]], resident ? params.numel[p] : 0, params.numel[p],
      python_shape(shape), python_shape(ds_shape), params.frozen[p] ? "False" : "True", grad_shape,
      params.persist[p] ? "True" : "False", python_int_set(params.consumers[p]),
      params.partition_numel[p]);
}

std::string ds_summary_tuple(const model::Scenario& scenario, const ParamState& params,
                             std::span<const ParamIndex> ps) {
  std::string out = "(";
  for (size_t i = 0; i < ps.size(); ++i) {
    if (i > 0) {
      out += ", ";
    }
    out += ds_summary(scenario, params, ps[i], true);
  }
  out += ps.size() == 1 ? ",)" : ")";
  return out;
}

std::string python_list(std::span<const int64_t> values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

std::string tracing_error_message(int64_t step_id, int64_t module_ds_id, bool training,
                                  const std::string& need_tuple, size_t need_count,
                                  const std::string& got_tuple) {
  // partitioned_param_coordinator.py: note the spaces before the newlines (semantics 3.4 #3).
  return fmt::format(
      "tracing error at step {}: \nmodule id: {}, training: {}\nexpected the next {} parameters "
      "in the parameter fetch queue to be {} \nbut got \n {}.",
      step_id, module_ds_id, training ? "True" : "False", need_count, need_tuple, got_tuple);
}

}  // namespace zfetch::sim
