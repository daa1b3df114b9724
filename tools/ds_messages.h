// DeepSpeed ZeRO-3 fetch messages as users paste them (errors, warnings, whole logs), read into
// structures that `zfetch explain` reasons about. Texts: docs/semantics.md 3.4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zfetch::tools {

/// One parameter as DeepSpeed's `ds_summary()` prints it (a Python dict literal).
struct ParamSummary {
  std::string name;  ///< from `'id': 'name=NAME id=N'`; empty when only the id is printed
  int64_t id = -1;
  std::string status;  ///< AVAILABLE, NOT_AVAILABLE, INFLIGHT
  int64_t numel = 0;
  int64_t ds_numel = 0;
  std::vector<int64_t> ds_shape;
  bool requires_grad = true;
  bool persist = false;
  std::vector<int64_t> consumers;  ///< active_sub_modules: ids of the modules using it now
};

struct DsMessage {
  enum class Kind : uint8_t {
    TracingError,     ///< the fetch-queue check (3.4 #3)
    TraceTooShort,    ///< `Invalidate trace cache @ step N and module M: cache has only L modules`
    ModuleMismatch,   ///< `Invalidate trace cache @ step N: expected module A, but got module B`
    InflightParams,   ///< `still have inflight params [...]`
    NotAvailable,     ///< an assertion or error naming a parameter in the wrong status
    PartitionedUsed,  ///< `shape '[..]' is invalid for input of size 0`: a partitioned tensor used
    RegistryEntryLeft,  ///< `<ds_summary> already in registry` (3.4 #10)
    PartitionInflight,  ///< `<param repr> Cannot partition a param in flight` (11.2)
    StepsNotFound,      ///< `IndexError: pop from an empty deque` building the trace (3.4 #7)
    GatheredOverlap,    ///< `Nested GatheredParameters contexts cannot overlap parameters; ...`
    FreeActive,       ///< `Cannot free a ZeRO-3 parameter while it is still active in submodules.`
    LossWithoutGrad,  ///< engine.backward's `loss must be a scalar tensor...`
    EmptiedReturn,    ///< `PreBackwardFunctionForModuleBackward returned an invalid gradient`
    GradIntoEmpty,    ///< torch's shape errors storing a gradient into a partition
    GradSize,         ///< `<n> != <m> Cannot reduce scatter gradients whose size is not ...`
    LeafGradUnreduced,    ///< `unknown parameter type` (a z3 leaf's gradient never reduced)
    StateDictEmpty,       ///< `Error(s) in loading state_dict for ...: size mismatch ...`
    BucketDuplicate,      ///< the reduce bucket's bare assertion (seen by its source line)
    MixedDtypes,          ///< defragment's bare one-dtype assertion (seen by its source line)
    ActiveBackwardEmpty,  ///< `active_backward_submodules is empty during backward pass`
  };
  Kind kind = Kind::TracingError;
  uint32_t line = 0;  ///< 1-based line of the input where it starts
  int64_t step = -1;
  int64_t module_id = -1;  ///< the fetching module (tracing error, trace too short, mismatch: got)
  int64_t expected_module = -1;  ///< ModuleMismatch
  int64_t cache_length = -1;     ///< TraceTooShort
  bool training = true;
  std::vector<ParamSummary> expected;  ///< TracingError: needed; others: the params named
  std::vector<ParamSummary> got;       ///< TracingError: popped from the queue
  std::string shape;            ///< PartitionedUsed: the shape the code asked for; EmptiedReturn,
                                ///< GradIntoEmpty: the param's or gradient's shape
  std::vector<int64_t> ds_ids;  ///< GatheredOverlap: the params already gathered
  /// StepsNotFound: the traceback before it runs through the coordinator's record_parameters
  /// (the message alone is any Python deque's).
  bool in_trace_build = false;
  /// StateDictEmpty: a param of the current model has shape torch.Size([0]) (a partition).
  bool partitioned_in_model = false;
  std::string text;  ///< the message's first line, as written (its first 1000 bytes, then "...")
};

/// The most messages one explanation covers: a log holds a few (one a rank and step); a paste
/// of thousands is one message repeated, or not a log.
inline constexpr size_t kMaxDsMessages = 1000;

/// Every message of `text`, in order, the first kMaxDsMessages + 1 at most (the last says that
/// there are more). A message broken over lines (as DeepSpeed prints the
/// tracing error) is joined; repeated identical warnings are kept (each is one pass).
std::vector<DsMessage> find_ds_messages(std::string_view text);

/// Every `{'id': ...}` dict of `text`, in order.
std::vector<ParamSummary> parse_param_summaries(std::string_view text);

}  // namespace zfetch::tools
