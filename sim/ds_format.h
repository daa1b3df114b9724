// DeepSpeed's own renderings: ds_summary() dicts, Python tuples and sets, exception texts.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/enum_names.h"
#include "model/scenario.h"
#include "sim/state.h"

namespace zfetch::sim {

/// ZeroParamStatus's member names, as ds_summary() and the explanations print a status. A param
/// always has one of the three; Status::None (an event without a status) reads "unknown".
inline constexpr base::EnumNames<Status::Inflight> kDsStatusNames("unknown", "AVAILABLE",
                                                                  "NOT_AVAILABLE", "INFLIGHT");

/// `param.ds_summary(use_debug_name)` exactly as semantics 1.2 describes it.
std::string ds_summary(const model::Scenario& scenario, const ParamState& params, ParamIndex p,
                       bool use_debug_name);

/// A Python tuple of ds_summary(use_debug_name=True) dicts: `()`, `(x,)`, `(x, y)`.
std::string ds_summary_tuple(const model::Scenario& scenario, const ParamState& params,
                             std::span<const ParamIndex> ps);

/// Python's repr of a list of ints: `[0, 1, 2]`.
std::string python_list(std::span<const int64_t> values);

/// The fetch-queue mismatch RuntimeError text (semantics 3.4 #3).
std::string tracing_error_message(int64_t step_id, int64_t module_ds_id, bool training,
                                  const std::string& need_tuple, size_t need_count,
                                  const std::string& got_tuple);

}  // namespace zfetch::sim
