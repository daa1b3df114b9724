// generate_scenario(): module tree, params, programs, config and schedule from a CounterRng.
#include "sim/explore/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "base/counter_rng.h"

namespace zfetch::sim {
namespace {
using base::CounterRng;

using model::AccessKind;
using model::Condition;
using model::DType;
using model::kNone;
using model::ModuleIndex;
using model::ModuleSpec;
using model::Op;
using model::ParamIndex;
using model::ParamSpec;
using model::Scenario;
using model::ScheduleItem;

constexpr std::array<int64_t, 5> kSmallNumels = {1, 4, 8, 16, 64};
constexpr std::array<const char*, 3> kParamNames = {"w", "v", "u"};
// Keys the stream of the calls' `input:` / `input_from:` draws (any constant other than 0).
constexpr uint64_t kCallInputStream = 0x1a9e7f3c5b2d4e61;
// Keys the stream of the calls' `output: leaf` draws (another constant).
constexpr uint64_t kCallOutputStream = 0x6c3b8e52f1a9d047;

class Generator {
 public:
  Generator(uint64_t seed, uint64_t index, GeneratorProfile profile)
      : rng_(seed, index),
        inputs_rng_(seed ^ kCallInputStream, index),
        outputs_rng_(seed ^ kCallOutputStream, index),
        runner_(profile == GeneratorProfile::Runner) {
    s_.name = fmt::format("fuzz-{}-{}", seed, index);
    s_.source = fmt::format("zfetch fuzz --seed {}: scenario {}", seed, index);
  }

  Scenario generate() {
    draw_dtype();
    draw_thresholds();
    const int64_t max_modules = rng_.uniform(2, runner_ ? 8 : 12);
    const int max_depth = static_cast<int>(rng_.uniform(1, 4));
    add_module(kNone, "model", 0, max_depth, max_modules);
    add_ties();
    ensure_trainable();
    for (ModuleIndex m = 0; m < s_.modules.size(); ++m) {
      draw_forward(m);
    }
    draw_config();
    draw_schedule();
    s_.input_requires_grad = rng_.chance(40);
    if (!runner_) {
      draw_output_leaves();
    }
    return std::move(s_);
  }

 private:
  // ---- tree and params ----

  void draw_dtype() {
    const int64_t roll = rng_.uniform(0, 99);
    dtype_ = roll < 70 ? DType::Fp32 : (roll < 95 || runner_) ? DType::Bf16 : DType::Fp16;
  }

  void draw_thresholds() {
    const std::array<int64_t, 4> thresholds = {0, 16, 64, 100'000};
    threshold_ = rng_.pick(std::span<const int64_t>(thresholds));
    if (runner_ && threshold_ == 100'000 && rng_.chance(70)) {
      threshold_ = 64;  // keep the real runs' tensors small
    }
  }

  int64_t draw_numel() {
    const int64_t roll = rng_.uniform(0, 9);
    if (roll < 4 && threshold_ > 1) {
      return threshold_ + rng_.uniform(-1, 1);  // just below, at, just above the threshold
    }
    if (roll < 8) {
      return rng_.pick(std::span<const int64_t>(kSmallNumels));
    }
    if (!runner_ && rng_.chance(10)) {
      return 0;  // zero-size params exist
    }
    return rng_.uniform(65, runner_ ? 512 : 4096);
  }

  std::vector<int64_t> shape_of(int64_t numel) {
    if (numel >= 4 && numel % 2 == 0 && rng_.chance(50)) {
      return {2, numel / 2};
    }
    return {numel};
  }

  void add_param(ModuleIndex owner, const char* name) {
    ParamSpec p;
    p.name = name;
    const std::string& prefix = s_.modules[owner].qualified_name;
    p.qualified_name = prefix.empty() ? p.name : prefix + "." + p.name;
    p.owner = owner;
    p.numel = draw_numel();
    p.shape = shape_of(p.numel);
    p.frozen = rng_.chance(30);
    // One dtype for the model, as a real one has (`model.to(dtype)`); now and then a param of
    // another, which DeepSpeed's optimizer refuses when it is trainable (without param offload).
    p.dtype = dtype_;
    if (rng_.chance(1)) {
      p.dtype = dtype_ == DType::Fp32 ? DType::Bf16 : DType::Fp32;
    }
    s_.modules[owner].params.push_back(static_cast<ParamIndex>(s_.params.size()));
    s_.params.push_back(std::move(p));
  }

  // Pre-order, params before children: the order the loader numbers a file in.
  void add_module(ModuleIndex parent, std::string name, int depth, int max_depth,
                  int64_t max_modules) {
    const auto index = static_cast<ModuleIndex>(s_.modules.size());
    ModuleSpec m;
    m.name = std::move(name);
    m.parent = parent;
    if (parent != kNone) {
      const std::string& prefix = s_.modules[parent].qualified_name;
      m.qualified_name = prefix.empty() ? m.name : prefix + "." + m.name;
      s_.modules[parent].children.push_back(index);
    }
    s_.modules.push_back(std::move(m));
    const int64_t n_params = rng_.uniform(parent == kNone ? 0 : 0, depth == 0 ? 1 : 2);
    for (int64_t k = 0; k < n_params; ++k) {
      add_param(index, kParamNames[static_cast<size_t>(k)]);
    }
    if (depth >= max_depth) {
      return;
    }
    const int64_t width = rng_.uniform(depth == 0 ? 1 : 0, 3);
    for (int64_t k = 0; k < width; ++k) {
      if (static_cast<int64_t>(s_.modules.size()) >= max_modules) {
        return;
      }
      // Names are letters in creation order: short and unique over the whole tree.
      add_module(index, std::string(1, static_cast<char>('a' + next_letter_++)), depth + 1,
                 max_depth, max_modules);
    }
  }

  void ensure_trainable() {
    bool any = false;
    for (const ParamSpec& p : s_.params) {
      any = any || !p.frozen;
    }
    if (any) {
      return;
    }
    // DeepSpeed builds no ZeRO-3 optimizer without a trainable param. Param 0 is never an
    // alias (ties point backwards), so thawing it and its aliases keeps the ties valid; with
    // no params at all, the last module gets one (appended: its params come last in file order).
    if (s_.params.empty()) {
      add_param(static_cast<ModuleIndex>(s_.modules.size() - 1), kParamNames[0]);
    }
    for (ParamSpec& p : s_.params) {
      if (&p == &s_.params.front() || p.tied_to == 0) {
        p.frozen = false;
      }
    }
  }

  void add_ties() {
    // Weight tying: a later param becomes the same object as an earlier one (an embedding and
    // an output head). Same shape, dtype and trainability, as the loader requires.
    if (s_.params.size() < 2 || !rng_.chance(10)) {
      return;
    }
    const auto alias =
        static_cast<ParamIndex>(rng_.uniform(1, static_cast<int64_t>(s_.params.size()) - 1));
    const auto target = static_cast<ParamIndex>(rng_.uniform(0, alias - 1));
    if (s_.params[target].tied_to != kNone || s_.params[target].owner == s_.params[alias].owner) {
      return;
    }
    ParamSpec& a = s_.params[alias];
    const ParamSpec& t = s_.params[target];
    a.tied_to = target;
    a.shape = t.shape;
    a.numel = t.numel;
    a.dtype = t.dtype;
    a.frozen = t.frozen;
  }

  // ---- programs ----

  [[nodiscard]] bool is_below(ModuleIndex m, ModuleIndex ancestor) const {
    for (ModuleIndex at = s_.modules[m].parent; at != kNone; at = s_.modules[at].parent) {
      if (at == ancestor) {
        return true;
      }
    }
    return false;
  }

  Condition draw_condition() {
    Condition when;
    switch (rng_.uniform(0, runner_ ? 3 : 4)) {
    case 0:
      when.steps = {rng_.uniform(0, 1)};
      break;
    case 1:
      when.micro_steps = {0};
      break;
    case 2:
      when.engines = {rng_.uniform(0, 1)};
      break;
    case 3:
      when.phase = rng_.chance(50) ? Condition::Phase::Train : Condition::Phase::Eval;
      break;
    default:
      when.ranks = {0};
      break;
    }
    return when;
  }

  // An access from module m's forward: its own param (an owner access), a descendant's, a
  // sibling's, an ancestor's or the root's.
  void add_access(ModuleIndex m, std::vector<Op>& ops) {
    std::vector<ParamIndex> candidates;
    for (ParamIndex p = 0; p < s_.params.size(); ++p) {
      candidates.push_back(p);
    }
    if (candidates.empty()) {
      return;
    }
    Op op;
    op.kind = Op::Kind::Access;
    // Prefer another module's param: those are the external accesses that ZeRO-3 discovers.
    ParamIndex p = candidates[static_cast<size_t>(
        rng_.uniform(0, static_cast<int64_t>(candidates.size()) - 1))];
    if (s_.params[p].owner == m && rng_.chance(60)) {
      p = candidates[static_cast<size_t>(
          rng_.uniform(0, static_cast<int64_t>(candidates.size()) - 1))];
    }
    op.param = p;
    op.access = rng_.chance(55) ? AccessKind::Data : AccessKind::Metadata;
    if (rng_.chance(10)) {
      op.when = draw_condition();
    }
    const auto at = static_cast<size_t>(rng_.uniform(0, static_cast<int64_t>(ops.size())));
    ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(at), std::move(op));
  }

  // Wraps ops[begin, end) into one region.
  static void wrap(std::vector<Op>& ops, size_t begin, size_t end, Op region) {
    region.body.assign(std::make_move_iterator(ops.begin() + static_cast<std::ptrdiff_t>(begin)),
                       std::make_move_iterator(ops.begin() + static_cast<std::ptrdiff_t>(end)));
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(begin),
              ops.begin() + static_cast<std::ptrdiff_t>(end));
    ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(begin), std::move(region));
  }

  void add_checkpoint(std::vector<Op>& ops, int depth) {
    if (ops.empty()) {
      return;
    }
    const auto begin = static_cast<size_t>(rng_.uniform(0, static_cast<int64_t>(ops.size()) - 1));
    const auto end = static_cast<size_t>(
        rng_.uniform(static_cast<int64_t>(begin) + 1, static_cast<int64_t>(ops.size())));
    Op region;
    region.kind = Op::Kind::Checkpoint;
    region.reentrant = rng_.chance(50);
    wrap(ops, begin, end, std::move(region));
    if (depth < 2 && rng_.chance(30)) {
      add_checkpoint(ops[begin].body, depth + 1);  // a nested region
    }
  }

  void draw_forward(ModuleIndex m) {
    if (!rng_.chance(m == 0 ? 85 : 45)) {
      return;  // the default forward: own params, then each child
    }
    std::vector<Op> ops;
    for (ModuleIndex child : s_.modules[m].children) {
      if (rng_.chance(4)) {
        continue;  // a child this forward never calls
      }
      Op call;
      call.kind = Op::Kind::Call;
      call.callee = child;
      if (rng_.chance(8)) {
        call.when = draw_condition();
      }
      if (rng_.chance(10)) {
        Op loop;
        loop.kind = Op::Kind::Repeat;
        loop.count = 2;
        loop.body.push_back(std::move(call));
        ops.push_back(std::move(loop));
      } else {
        ops.push_back(std::move(call));
      }
      if (rng_.chance(7)) {
        Op again;  // called twice in one forward
        again.kind = Op::Kind::Call;
        again.callee = child;
        ops.push_back(std::move(again));
      }
    }
    // A grandchild called directly (`call: a.b`).
    for (ModuleIndex d = 0; d < s_.modules.size(); ++d) {
      if (s_.modules[d].parent != m && is_below(d, m) && rng_.chance(6)) {
        Op call;
        call.kind = Op::Kind::Call;
        call.callee = d;
        ops.push_back(std::move(call));
      }
    }
    const int64_t accesses = rng_.chance(45) ? rng_.uniform(1, 2) : 0;
    for (int64_t k = 0; k < accesses; ++k) {
      add_access(m, ops);
    }
    if (!s_.modules[m].params.empty() && rng_.chance(5)) {
      Op ret;
      ret.kind = Op::Kind::Return;
      ret.param = s_.modules[m].params.front();
      ops.push_back(std::move(ret));
    }
    if (rng_.chance(35)) {
      add_checkpoint(ops, 0);
    }
    if (ops.empty()) {
      return;  // `forward: []` is not a file the loader takes; keep the default forward
    }
    if (!runner_) {
      draw_call_inputs(ops);
    }
    s_.modules[m].has_forward = true;
    s_.modules[m].forward = std::move(ops);
    if (m != 0 && !s_.modules[m].children.empty() && rng_.chance(8)) {
      s_.modules[m].leaf = true;
    }
    if (rng_.chance(8)) {
      s_.modules[m].outputs = 2;
    }
  }

  // ---- config and schedule ----

  void draw_config() {
    model::DeepSpeedConfig& c = s_.config;
    c.zero.stage = 3;
    c.gradient_accumulation_steps = rng_.uniform(1, 4);
    c.train_micro_batch_size_per_gpu = rng_.uniform(1, 2);
    c.zero.param_persistence_threshold = threshold_;
    const std::array<int64_t, 4> buckets = {0, 1, 64, 50'000'000};
    c.zero.prefetch_bucket_size = rng_.pick(std::span<const int64_t>(buckets));
    const std::array<int64_t, 3> reuse = {0, 16, 1'000'000'000};
    c.zero.max_reuse_distance = rng_.pick(std::span<const int64_t>(reuse));
    if (rng_.chance(15)) {
      c.zero.max_live_parameters = rng_.uniform(1, 256);
    }
    if (rng_.chance(10)) {
      c.zero.model_persistence_threshold = rng_.uniform(0, 128);
    }
    if (rng_.chance(8)) {
      c.zero.module_granularity_threshold = rng_.uniform(1, 200);
    }
    if (rng_.chance(35)) {
      c.zero.offload_param_set = true;
      c.zero.offload_param.device = model::OffloadDevice::Cpu;
    } else if (!runner_ && rng_.chance(5)) {
      c.zero.offload_param_set = true;
      c.zero.offload_param.device = model::OffloadDevice::Nvme;
      c.zero.offload_param.nvme_path = "/local_nvme";
    }
    if (rng_.chance(4)) {
      c.zero.allgather_sequential = true;
    }
    if (rng_.chance(4)) {
      c.zero.use_all_reduce_for_fetch_params = true;
    }
    bool fp16_params = false;
    for (const ParamSpec& p : s_.params) {
      fp16_params = fp16_params || p.dtype == DType::Fp16;
    }
    if (fp16_params) {
      c.fp16 = true;
    }
    if (runner_) {
      s_.world_size = rng_.uniform(1, 2);
    } else {
      const std::array<int64_t, 7> worlds = {1, 2, 2, 3, 4, 8, 64};
      s_.world_size = rng_.pick(std::span<const int64_t>(worlds));
      if (!has_rank_condition()) {
        return;
      }
      if (s_.world_size == 1) {
        s_.world_size = 2;
      }
    }
  }

  [[nodiscard]] bool has_rank_condition() const {
    bool found = false;
    const auto visit = [&](const auto& self, const std::vector<Op>& ops) -> void {
      for (const Op& op : ops) {
        found = found || !op.when.ranks.empty();
        self(self, op.body);
      }
    };
    for (const ModuleSpec& m : s_.modules) {
      visit(visit, m.forward);
    }
    return found;
  }

  void add_item(ScheduleItem::Kind kind, int64_t steps = 1) {
    ScheduleItem item;
    item.kind = kind;
    item.steps = steps;
    s_.schedule.push_back(std::move(item));
  }

  void draw_schedule() {
    add_item(ScheduleItem::Kind::Train, rng_.uniform(1, 2));
    int saved = 0;
    const int64_t extra = rng_.uniform(0, 3);
    for (int64_t k = 0; k < extra; ++k) {
      switch (rng_.uniform(0, 5)) {
      case 0:
        add_item(ScheduleItem::Kind::Eval, 1);
        break;
      case 1:
      case 2: {
        // Save, restart (sometimes on the same model object), load, train: the resume.
        const std::string tag = fmt::format("t{}", saved++);
        add_item(ScheduleItem::Kind::SaveCheckpoint);
        s_.schedule.back().tag = tag;
        add_item(ScheduleItem::Kind::Restart);
        s_.schedule.back().reuse_model = rng_.chance(35);
        if (rng_.chance(85)) {
          add_item(ScheduleItem::Kind::LoadCheckpoint);
          s_.schedule.back().tag = tag;
        }
        add_item(ScheduleItem::Kind::Train, 1);
        break;
      }
      case 3:
        add_item(ScheduleItem::Kind::EmptyPartitionCache);
        add_item(ScheduleItem::Kind::Train, 1);
        break;
      default:
        add_item(ScheduleItem::Kind::Train, 1);
        if (!runner_ && s_.config.fp16 && rng_.chance(50)) {
          s_.schedule.back().overflow_steps = {0};
        }
        break;
      }
    }
  }

  // ---- what a call consumes ----

  // Does `op` call `module` in the scope it belongs to (a repeat body is part of that scope, a
  // checkpoint body is a scope of its own)?
  static bool calls_in_scope(const Op& op, ModuleIndex module) {
    if (op.kind == Op::Kind::Call) {
      return op.callee == module;
    }
    if (op.kind == Op::Kind::Repeat) {
      return std::any_of(op.body.begin(), op.body.end(),
                         [&](const Op& inner) { return calls_in_scope(inner, module); });
    }
    return false;
  }

  // Now and then a top-level call is fed something other than the running value: `input:
  // no_grad`, `input: forward_input`, or `input_from:` an earlier top-level call whose callee
  // is not called again in between (so that it is the one the loader links, and marking its
  // `output_read` gives what loading the written file gives). Drawn from a stream of their own:
  // every other draw is the one the generator made before these keys existed.
  void draw_call_inputs(std::vector<Op>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind != Op::Kind::Call || !inputs_rng_.chance(10)) {
        continue;
      }
      // input_from twice as often as the others: it is drawn only where a source exists.
      const int64_t roll = inputs_rng_.uniform(0, 3);
      if (roll == 0) {
        ops[i].input = model::CallInput::NoGrad;
        continue;
      }
      if (roll == 1) {
        ops[i].input = model::CallInput::ForwardInput;
        continue;
      }
      std::vector<size_t> sources;
      for (size_t j = 0; j < i; ++j) {
        const bool called_again =
            std::any_of(ops.begin() + static_cast<std::ptrdiff_t>(j) + 1,
                        ops.begin() + static_cast<std::ptrdiff_t>(i),
                        [&](const Op& between) { return calls_in_scope(between, ops[j].callee); });
        if (ops[j].kind == Op::Kind::Call && !called_again) {
          sources.push_back(j);
        }
      }
      if (!sources.empty()) {
        Op& source = ops[sources[static_cast<size_t>(
            inputs_rng_.uniform(0, static_cast<int64_t>(sources.size()) - 1))]];
        source.output_read = true;
        ops[i].input = model::CallInput::OutputOf;
        ops[i].input_from = source.callee;
      }
    }
  }

  // ---- what a call's output becomes ----

  // Nothing `ops` compute requires grad when their input does not: every parameter they read
  // or return is frozen, every module they call is so too, and none of their calls makes its
  // output a leaf.
  [[nodiscard]] bool ops_without_grad(std::span<const Op> ops) const {
    return std::all_of(ops.begin(), ops.end(), [&](const Op& op) {
      switch (op.kind) {
      case Op::Kind::Access:
      case Op::Kind::Return:
        return s_.params[op.param].frozen;
      case Op::Kind::Call:
        return !op.output_leaf && module_without_grad(op.callee);
      default:
        return ops_without_grad(op.body);
      }
    });
  }

  // Module m's output requires grad only when its input does: its own parameters are frozen,
  // and its forward (or, without one, each child) computes nothing with grad. A forward calls
  // only modules below its own, so this ends.
  [[nodiscard]] bool module_without_grad(ModuleIndex m) const {
    const ModuleSpec& module = s_.modules[m];
    const bool frozen = std::all_of(module.params.begin(), module.params.end(),
                                    [&](ParamIndex p) { return s_.params[p].frozen; });
    if (!frozen) {
      return false;
    }
    if (module.has_forward) {
      return ops_without_grad(module.forward);
    }
    return std::all_of(module.children.begin(), module.children.end(),
                       [&](ModuleIndex child) { return module_without_grad(child); });
  }

  // Now and then a call whose output cannot require grad is marked `output: leaf`: the model
  // detaches it and makes it a leaf that requires grad (`embed(ids).detach().requires_grad_()`,
  // docs/scenario-format.md), the only place the format gives it a meaning (zfetch does not cut
  // a backward that the output would have had). Such a call is a top-level call of a forward,
  // to a module that computes nothing with grad, fed either `input: no_grad`, or the root's
  // input that requires no grad (`input_requires_grad: false`) through a root that computed
  // nothing with grad before it (a frozen embedding fed token ids). The modules are visited
  // from the last, so a call below is marked before the calls above it are judged. Drawn last,
  // from a stream of its own: every other draw is the one the generator made before.
  void draw_output_leaves() {
    for (auto m = static_cast<ModuleIndex>(s_.modules.size()); m-- > 0;) {
      ModuleSpec& module = s_.modules[m];
      const std::span<Op> ops(module.forward);
      const bool root_without_grad = m == 0 && !s_.input_requires_grad &&
                                     std::all_of(module.params.begin(), module.params.end(),
                                                 [&](ParamIndex p) { return s_.params[p].frozen; });
      for (size_t i = 0; i < ops.size(); ++i) {
        Op& op = ops[i];
        if (op.kind != Op::Kind::Call || !module_without_grad(op.callee)) {
          continue;
        }
        const bool input_without_grad =
            op.input == model::CallInput::NoGrad ||
            (root_without_grad && op.input != model::CallInput::OutputOf &&
             ops_without_grad(ops.first(i)));
        if (input_without_grad && outputs_rng_.chance(70)) {
          op.output_leaf = true;
        }
      }
    }
  }

  CounterRng rng_;
  CounterRng inputs_rng_;   // only for draw_call_inputs
  CounterRng outputs_rng_;  // only for draw_output_leaves
  bool runner_;
  Scenario s_;
  int64_t threshold_ = 0;
  DType dtype_ = DType::Fp32;
  int next_letter_ = 0;
};

}  // namespace

model::Scenario generate_scenario(uint64_t seed, uint64_t index, GeneratorProfile profile) {
  return Generator(seed, index, profile).generate();
}

}  // namespace zfetch::sim
