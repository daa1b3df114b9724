// deepspeed.zero.GatheredParameters blocks, and calls that bypass hooks (`hooks: none|own`):
// semantics 11.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sim/ds_format.h"
#include "sim/process.h"

namespace zfetch::sim {

using trace::EventKind;

void Process::block_params(const model::GatheredBlock& block, std::vector<ParamIndex>& out) const {
  // __init__: `sorted(set(params), key=ds_id)`, so that every rank gathers in one order.
  out.clear();
  for (ParamIndex p : block.params) {
    out.push_back(params_.canonical[p]);
  }
  std::sort(out.begin(), out.end(),
            [&](ParamIndex a, ParamIndex b) { return params_.ds_id[a] < params_.ds_id[b]; });
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

void Process::enter_gathered(const model::GatheredBlock& block) {
  emitter_.context.phase = trace::Phase::None;  // between passes
  open_block(block);
}

void Process::exit_gathered(const model::GatheredBlock& block) {
  emitter_.context.phase = trace::Phase::None;
  close_block(block);
}

void Process::open_block(const model::GatheredBlock& block, ModuleIndex module) {
  std::vector<ParamIndex> params;
  block_params(block, params);
  std::vector<int64_t> overlapping;
  for (ParamIndex p : params) {
    if (gathered_depth_[p] > 0) {
      overlapping.push_back(params_.ds_id[p]);
    }
  }
  if (!overlapping.empty()) {
    raise(OutcomeKind::Error,
          fmt::format("Nested GatheredParameters contexts cannot overlap parameters; parameter "
                      "ds_ids already gathered by an outer context: [{}]",
                      fmt::join(overlapping, ", ")),
          "A GatheredParameters block was opened on parameters that an enclosing block already "
          "gathered (GatheredParameters.__enter__ counts the blocks open on each parameter). "
          "Gather each parameter in one block only.",
          module);
  }
  // __enter__: all_gather(param_list) gathers, synchronously, the params that are NOT_AVAILABLE;
  // available and in-flight ones are left as they are. Outside the coordinator: no trace event
  // (what a recording of real DeepSpeed shows: only the coordinator, the getter and _post_step
  // gather there).
  for (ParamIndex p : params) {
    if (params_.status[p] == Status::NotAvailable) {
      params_.status[p] = Status::Available;
      params_.fast_sharded[p] = 0;
    }
    ++gathered_depth_[p];
  }
}

void Process::close_block(const model::GatheredBlock& block, ModuleIndex module) {
  std::vector<ParamIndex> params;
  block_params(block, params);
  for (ParamIndex p : params) {
    --gathered_depth_[p];
  }
  // __exit__: (with a modifier_rank, a broadcast of each param's data first) then
  // partition(param_list): _partition_param of each, in ds_id order, whatever the coordinator
  // did with it inside the block. Nothing here asks whether a module still uses it.
  for (ParamIndex p : params) {
    const std::string& name = scenario_.params[p].qualified_name;
    switch (params_.status[p]) {
    case Status::Inflight:
      raise(OutcomeKind::Error, " Cannot partition a param in flight",
            fmt::format(
                "The GatheredParameters block ends while {} is in flight: the coordinator "
                "prefetched it inside the block and nothing waited for it yet, and "
                "_partition_param asserts that the param it partitions is not in flight "
                "(DeepSpeed's message starts with the param's repr). Leave the block only after "
                "the pass that prefetched it, or turn prefetching off "
                "(stage3_prefetch_bucket_size: 0).",
                name),
            module);
    case Status::Available:
      if (!params_.consumers[p].empty()) {
        raise(OutcomeKind::Error,
              fmt::format(
                  "Cannot free a ZeRO-3 parameter while it is still active in submodules. This "
                  "can happen if: (1) submodules have not released the parameter, or (2) you "
                  "modified parameters inside a `GatheredParameters` context with "
                  "`modifier_rank=None`. For case (2), use `modifier_rank=<rank>` to broadcast "
                  "updates consistently across ranks. param={}",
                  ds_summary(scenario_, params_, p, false)),
              fmt::format("The GatheredParameters block ends inside the forward of a module that "
                          "uses {}: the exit partitions every param of the block (free_param), "
                          "and refuses one that an active module still holds. Close the block "
                          "outside that module's forward, or leave its params out of it.",
                          name),
              module);
      }
      params_.status[p] = Status::NotAvailable;
      history_.last_partitioned[p] = {PartitionCause::GatheredExit, emitter_.context};
      break;
    case Status::NotAvailable:
      // Released by the hooks inside the block: _partition_param does its work only for an
      // AVAILABLE param, so this one stays as it is (seen on real DeepSpeed,
      // scenarios/real/dschat_step3_actor_critic.yaml).
      break;
    case Status::None:
      break;
    }
  }
}

bool Process::run_gathered(ModuleIndex m, const model::Op& op, bool rg, const Scope& scope) {
  open_block(op.gathered, m);  // raised in m's forward
  rg = run_body(m, op.body, rg, scope);
  if (!graph_.stopping()) {
    close_block(op.gathered, m);  // raised in m's forward
  }
  return rg;
}

bool Process::call_forward_only(ModuleIndex m, bool input_rg) {
  // `module.forward(x)`: no pre- or post-forward hook of the module, so nothing fetches its
  // params; its own params are read through its parameter dict (the getter sees them, as for
  // a module without hooks), and the children its forward calls run their own hooks.
  bool rg = input_rg;
  for (ParamIndex p : scenario_.modules[m].params) {
    model::Op read;
    read.kind = model::Op::Kind::Access;
    read.param = p;
    read.access = model::AccessKind::Data;
    rg = access(m, read, rg);
  }
  return scenario_.modules[m].has_forward ? run_scope(m, scenario_.modules[m].forward, input_rg, rg)
                                          : run_default_forward(m, rg);
}

}  // namespace zfetch::sim
