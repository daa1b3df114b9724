// Scenario -> YAML: the inverse of the loader, for generated and shrunk scenarios.
#include "model/scenario_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "model/ds_config_parse.h"
#include "trace/json_escape.h"
#include "trace/names.h"

namespace zfetch::model {
namespace {

// The words YAML reads as null or a boolean rather than a string, in any case: yaml-cpp reads
// `NULL`, `Null`, `TRUE`, `Yes`, `OFF`... too (a ds_config leaf class named `NULL` was written
// bare and read back as no value).
bool is_yaml_word(std::string_view text) {
  constexpr std::array<std::string_view, 9> kWords = {"true", "false", "null", "yes", "no",
                                                      "on",   "off",   "y",    "n"};
  return std::any_of(kWords.begin(), kWords.end(), [&](std::string_view word) {
    return word.size() == text.size() &&
           std::equal(word.begin(), word.end(), text.begin(), [](char w, char c) {
             return w == (c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
           });
  });
}

// A plain identifier stays bare; anything else (digits first, YAML words such as `true` or
// `NULL`, punctuation, the empty string) is double-quoted with JSON escapes, which YAML reads.
bool is_plain(std::string_view text) {
  if (text.empty() || is_yaml_word(text)) {
    return false;
  }
  const char first = text.front();
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '_')) {
    return false;
  }
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      return false;
    }
  }
  return true;
}

std::string scalar(std::string_view text) {
  if (is_plain(text)) {
    return std::string(text);
  }
  // A YAML double-quoted scalar reads JSON's escapes, so the trace writer's escaping serves.
  std::string out(trace::max_escaped_size(text) + 2, '"');
  char* end = trace::escape_json(text, out.data() + 1);
  *end++ = '"';
  out.resize(static_cast<size_t>(end - out.data()));
  return out;
}

std::string int_list(const std::vector<int64_t>& values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

std::string string_list(const std::vector<std::string>& values) {
  std::vector<std::string> quoted;
  quoted.reserve(values.size());
  for (const std::string& value : values) {
    quoted.push_back(scalar(value));
  }
  return fmt::format("[{}]", fmt::join(quoted, ", "));
}

class Writer {
 public:
  explicit Writer(const Scenario& scenario) : s_(scenario), m_(&scenario) {}

  std::string write() {
    line(0, fmt::format("name: {}", scalar(s_.name)));
    if (!s_.source.empty()) {
      line(0, fmt::format("source: {}", scalar(s_.source)));
    }
    if (s_.world_size != 1) {
      line(0, fmt::format("world_size: {}", s_.world_size));
    }
    if (s_.input_requires_grad) {
      line(0, "input_requires_grad: true");
    }
    if (s_.zenflow && !s_.config.zero.zenflow) {
      line(0, "zenflow: true");
    }
    write_config();
    write_timing();
    if (s_.engines.empty()) {
      line(0, "model:");
      write_module(0, 1);
    } else {
      line(0, "engines:");
      for (size_t e = 0; e < s_.engines.size(); ++e) {
        line(1, scalar(s_.engine_names[e]) + ":");
        line(2, "model:");
        m_ = &s_.engines[e];
        write_module(0, 3);
      }
      m_ = &s_;
    }
    write_schedule();
    write_expectations();
    return std::move(out_);
  }

 private:
  void line(int indent, std::string_view text) {
    out_.append(static_cast<size_t>(indent) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  void write_config() {
    const DeepSpeedConfig defaults;
    const DeepSpeedConfig& c = s_.config;
    line(0, "deepspeed:");
    if (c.train_micro_batch_size_per_gpu != defaults.train_micro_batch_size_per_gpu) {
      line(1, fmt::format("train_micro_batch_size_per_gpu: {}", c.train_micro_batch_size_per_gpu));
    }
    if (c.gradient_accumulation_steps != defaults.gradient_accumulation_steps) {
      line(1, fmt::format("gradient_accumulation_steps: {}", c.gradient_accumulation_steps));
    }
    if (c.fp16) {
      line(1, "fp16: {enabled: true}");
    }
    if (c.bf16) {
      line(1, "bf16: {enabled: true}");
    }
    line(1, "zero_optimization:");
    line(2, fmt::format("stage: {}", c.zero.stage));
    // One spelling per field: the first row of each (the stage3_ name where there is one).
    std::vector<const void*> written;
    for (const detail::ZeroKey& row : detail::zero_config_keys()) {
      if (row.int_field != nullptr) {
        const void* field = &(c.zero.*row.int_field);
        if (std::find(written.begin(), written.end(), field) != written.end()) {
          continue;
        }
        written.push_back(field);
        if (c.zero.*row.int_field != defaults.zero.*row.int_field) {
          line(2, fmt::format("{}: {}", row.key, c.zero.*row.int_field));
        }
      } else if (row.bool_field != nullptr) {
        const void* field = &(c.zero.*row.bool_field);
        if (std::find(written.begin(), written.end(), field) != written.end()) {
          continue;
        }
        written.push_back(field);
        if (c.zero.*row.bool_field != defaults.zero.*row.bool_field) {
          line(2, fmt::format("{}: {}", row.key, c.zero.*row.bool_field));
        }
      }
    }
    if (c.zero.offload_param_set) {
      const OffloadParamConfig& o = c.zero.offload_param;
      const OffloadParamConfig d;
      std::string text = fmt::format("offload_param: {{device: {}", kOffloadDeviceNames[o.device]);
      if (o.nvme_path != d.nvme_path) {
        text += fmt::format(", nvme_path: {}", scalar(o.nvme_path));
      }
      if (o.buffer_count != d.buffer_count) {
        text += fmt::format(", buffer_count: {}", o.buffer_count);
      }
      if (o.buffer_size != d.buffer_size) {
        text += fmt::format(", buffer_size: {}", o.buffer_size);
      }
      if (o.max_in_cpu != d.max_in_cpu) {
        text += fmt::format(", max_in_cpu: {}", o.max_in_cpu);
      }
      if (o.pin_memory != d.pin_memory) {
        text += fmt::format(", pin_memory: {}", o.pin_memory);
      }
      line(2, text + "}");
    }
    const LeafModuleConfig& leaf = c.zero.leaf_module;
    if (!leaf.classes.empty() || !leaf.names.empty() || !leaf.name_suffixes.empty()) {
      std::vector<std::string> parts;
      if (!leaf.classes.empty()) {
        parts.push_back("classes: " + string_list(leaf.classes));
      }
      if (!leaf.names.empty()) {
        parts.push_back("names: " + string_list(leaf.names));
      }
      if (!leaf.name_suffixes.empty()) {
        parts.push_back("name_suffixes: " + string_list(leaf.name_suffixes));
      }
      line(2, fmt::format("leaf_module: {{{}}}", fmt::join(parts, ", ")));
    }
    if (c.zero.zenflow) {
      line(2, "zenflow: {}");
    }
  }

  void write_timing() {
    const TimingSpec& t = s_.timing;
    if (t.tokens_per_micro_batch == 0 && t.calibration.empty()) {
      return;
    }
    std::vector<std::string> parts;
    if (t.tokens_per_micro_batch != 0) {
      parts.push_back(fmt::format("tokens_per_micro_batch: {}", t.tokens_per_micro_batch));
    }
    if (!t.calibration.empty()) {
      parts.push_back(fmt::format("calibration: {}", scalar(t.calibration)));
    }
    line(0, fmt::format("timing: {{{}}}", fmt::join(parts, ", ")));
  }

  // The path from module `from` to the module or param named `qualified`: relative when it
  // lies below `from`, otherwise from the root with a leading '/' (params only).
  std::string relative_path(ModuleIndex from, const std::string& qualified, bool allow_root) const {
    const std::string& prefix = m_->modules[from].qualified_name;
    if (prefix.empty()) {
      return qualified;
    }
    if (qualified.size() > prefix.size() && qualified.compare(0, prefix.size(), prefix) == 0 &&
        qualified[prefix.size()] == '.') {
      return qualified.substr(prefix.size() + 1);
    }
    return allow_root ? "/" + qualified : qualified;
  }

  void write_module(ModuleIndex index, int indent) {
    const ModuleSpec& m = m_->modules[index];
    line(indent, fmt::format("name: {}", scalar(m.name)));
    if (!m.class_name.empty()) {
      line(indent, fmt::format("class: {}", scalar(m.class_name)));
    }
    if (m.leaf) {
      line(indent, "leaf: true");
    }
    if (m.outputs != 1) {
      line(indent, fmt::format("outputs: {}", m.outputs));
    }
    if (m.compute_us >= 0) {
      line(indent, fmt::format("compute_us: {}", m.compute_us));
    }
    if (!m.params.empty()) {
      line(indent, "params:");
      for (ParamIndex p : m.params) {
        write_param(m_->params[p], indent + 1);
      }
    }
    if (m.has_forward) {
      line(indent, "forward:");
      write_ops(index, m.forward, indent + 1);
    }
    if (!m.children.empty()) {
      line(indent, "children:");
      for (ModuleIndex child : m.children) {
        // The first key of a list item shares the dash's line.
        out_.append(static_cast<size_t>(indent + 1) * 2, ' ');
        out_ += "- ";
        const size_t mark = out_.size();
        write_module(child, indent + 2);
        out_.erase(mark, static_cast<size_t>(indent + 2) * 2);
      }
    }
  }

  void write_param(const ParamSpec& p, int indent) {
    std::vector<std::string> parts;
    parts.push_back(fmt::format("shape: {}", int_list(p.shape)));
    if (p.dtype != DType::Fp32) {
      parts.push_back(fmt::format("dtype: {}", dtype_name(p.dtype)));
    }
    if (p.frozen) {
      parts.push_back("frozen: true");
    }
    if (p.tied_to != kNone) {
      parts.push_back(fmt::format("tied_to: {}", scalar(m_->params[p.tied_to].qualified_name)));
    }
    line(indent, fmt::format("{}: {{{}}}", scalar(p.name), fmt::join(parts, ", ")));
  }

  void write_call_input(ModuleIndex module, const Op& op, int indent) {
    switch (op.input) {
    case CallInput::Running:
      break;
    case CallInput::NoGrad:
      line(indent, "input: no_grad");
      break;
    case CallInput::ForwardInput:
      line(indent, "input: forward_input");
      break;
    case CallInput::OutputOf:
      line(indent, "input_from: " + scalar(relative_path(
                                        module, m_->modules[op.input_from].qualified_name, false)));
      break;
    }
  }

  void write_ops(ModuleIndex module, const std::vector<Op>& ops, int indent) {
    for (const Op& op : ops) {
      std::string head;
      switch (op.kind) {
      case Op::Kind::Call:
        head =
            "call: " + scalar(relative_path(module, m_->modules[op.callee].qualified_name, false));
        break;
      case Op::Kind::Access:
        head =
            "access: " + scalar(relative_path(module, m_->params[op.param].qualified_name, true));
        break;
      case Op::Kind::Return:
        head =
            "returns: " + scalar(relative_path(module, m_->params[op.param].qualified_name, true));
        break;
      case Op::Kind::Checkpoint:
        head = fmt::format("checkpoint: {{reentrant: {}}}", op.reentrant);
        break;
      case Op::Kind::Repeat:
        head = fmt::format("repeat: {}", op.count);
        break;
      case Op::Kind::Gathered:
        head = "gathered: " + string_list(op.gathered.paths);
        break;
      }
      line(indent, "- " + head);
      if (op.kind == Op::Kind::Access && op.access == AccessKind::Metadata) {
        line(indent + 1, "kind: metadata");
      }
      if (op.kind == Op::Kind::Call) {
        write_call_input(module, op, indent + 1);
        if (op.hooks != CallHooks::All) {
          line(indent + 1, op.hooks == CallHooks::None ? "hooks: none" : "hooks: own");
        }
        if (op.output_leaf) {
          line(indent + 1, "output: leaf");
        }
      }
      if (op.kind == Op::Kind::Gathered && op.gathered.modifier_rank >= 0) {
        line(indent + 1, fmt::format("modifier_rank: {}", op.gathered.modifier_rank));
      }
      if (!op.when.always()) {
        line(indent + 1, "when: " + condition_text(op.when));
      }
      if (op.kind == Op::Kind::Checkpoint || op.kind == Op::Kind::Repeat ||
          op.kind == Op::Kind::Gathered) {
        line(indent + 1, "body:");
        write_ops(module, op.body, indent + 2);
      }
    }
  }

  void write_schedule() {
    line(0, "schedule:");
    write_items(s_.schedule, 1);
  }

  // `, engine: NAME` with several engines.
  [[nodiscard]] std::string engine_key(const ScheduleItem& item) const {
    return s_.engines.empty() ? "" : ", engine: " + scalar(s_.engine_names[item.engine]);
  }

  void write_items(const std::vector<ScheduleItem>& items, int indent) {
    for (const ScheduleItem& item : items) {
      switch (item.kind) {
      case ScheduleItem::Kind::Train: {
        std::string keys = fmt::format("steps: {}", item.steps);
        if (!item.overflow_steps.empty()) {
          keys += ", overflow: " + int_list(item.overflow_steps);
        }
        if (!item.forwards.empty()) {
          std::vector<std::string_view> modes;
          for (ForwardMode mode : item.forwards) {
            modes.push_back(mode == ForwardMode::Grad     ? "grad"
                            : mode == ForwardMode::NoGrad ? "no_grad"
                                                          : "eval");
          }
          keys += fmt::format(", forwards: [{}]", fmt::join(modes, ", "));
        }
        line(indent, fmt::format("- train: {{{}{}}}", keys, engine_key(item)));
        break;
      }
      case ScheduleItem::Kind::Generate: {
        std::string keys = fmt::format("tokens: {}", item.steps);
        if (item.encoder != kNone) {
          keys += ", encoder: " +
                  scalar(engine_scenario(s_, item.engine).modules[item.encoder].qualified_name);
        }
        if (item.training) {
          keys += ", training: true";
        }
        if (item.generate_model != kNone) {
          keys += ", model: " + scalar(s_.modules[item.generate_model].qualified_name);
        }
        if (item.unwrap != Rehook::None) {
          keys += fmt::format(", unwrap: {}", kRehookNames[item.unwrap]);
        }
        line(indent, fmt::format("- generate: {{{}{}}}", keys, engine_key(item)));
        break;
      }
      case ScheduleItem::Kind::Eval:
        line(indent, fmt::format("- eval: {{passes: {}{}}}", item.steps, engine_key(item)));
        break;
      case ScheduleItem::Kind::Gathered:
        line(indent, "- gathered:");
        line(indent + 2, "params: " + string_list(item.gathered.paths));
        if (item.gathered.modifier_rank >= 0) {
          line(indent + 2, fmt::format("modifier_rank: {}", item.gathered.modifier_rank));
        }
        if (!s_.engines.empty()) {
          line(indent + 2, "engine: " + scalar(s_.engine_names[item.engine]));
        }
        line(indent + 2, "do:");
        write_items(item.body, indent + 3);
        break;
      case ScheduleItem::Kind::SaveCheckpoint:
        line(indent, "- save_checkpoint: " + scalar(item.tag));
        break;
      case ScheduleItem::Kind::LoadCheckpoint:
        line(indent, "- load_checkpoint: " + scalar(item.tag));
        break;
      case ScheduleItem::Kind::Restart:
        line(indent, item.reuse_model ? "- restart: {reuse_model: true}" : "- restart");
        break;
      case ScheduleItem::Kind::EmptyPartitionCache:
        line(indent, "- empty_partition_cache");
        break;
      }
    }
  }

  void write_expectations() {
    if (s_.expectations.empty()) {
      return;
    }
    line(0, "expect:");
    for (const PolicyExpectation& pe : s_.expectations) {
      const Expectation& e = pe.expect;
      std::vector<std::string> parts;
      parts.push_back(fmt::format("outcome: {}", format_as(e.outcome)));
      if (e.phase) {
        parts.push_back(fmt::format("phase: {}", trace::format_as(*e.phase)));
      }
      if (e.module) {
        parts.push_back("module: " + scalar(*e.module));
      }
      if (e.step) {
        parts.push_back(fmt::format("step: {}", *e.step));
      }
      if (e.micro_step) {
        parts.push_back(fmt::format("micro_step: {}", *e.micro_step));
      }
      if (e.engine) {
        parts.push_back(fmt::format("engine: {}", *e.engine));
      }
      if (e.invalidations) {
        parts.push_back(fmt::format("invalidations: {}", *e.invalidations));
      }
      line(1, fmt::format("{}: {{{}}}", format_as(pe.policy), fmt::join(parts, ", ")));
    }
  }

  const Scenario& s_;
  const Scenario* m_;  ///< the model being written: the scenario's, or one engine's
  std::string out_;
};

}  // namespace

std::string condition_text(const Condition& when) {
  std::vector<std::string> parts;
  if (!when.steps.empty()) {
    parts.push_back("step: " + int_list(when.steps));
  }
  if (!when.micro_steps.empty()) {
    parts.push_back("window_micro_step: " + int_list(when.micro_steps));
  }
  if (!when.ranks.empty()) {
    parts.push_back("rank: " + int_list(when.ranks));
  }
  if (!when.engines.empty()) {
    parts.push_back("engine: " + int_list(when.engines));
  }
  if (!when.forwards.empty()) {
    parts.push_back("forward: " + int_list(when.forwards));
  }
  if (when.phase != Condition::Phase::Any) {
    parts.push_back(when.phase == Condition::Phase::Train  ? "phase: train"
                    : when.phase == Condition::Phase::Eval ? "phase: eval"
                                                           : "phase: generate");
  }
  const Draw& draw = when.draw;
  if (draw.kind == Draw::Kind::Route) {
    parts.push_back(fmt::format("route: {{seed: {}, top_k: {}, of: {}, index: {}}}", draw.seed,
                                draw.top_k, draw.of, draw.index));
  } else if (draw.kind == Draw::Kind::LayerDrop) {
    parts.push_back(
        fmt::format("layerdrop: {{seed: {}, p: {}, index: {}}}", draw.seed, draw.p, draw.index));
  }
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

std::string write_scenario_yaml(const Scenario& scenario) {
  return Writer(scenario).write();
}

}  // namespace zfetch::model
