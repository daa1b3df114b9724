// zfetch graph SCENARIO: the module tree as Graphviz DOT, one box per module with its own
// parameters; child edges solid, tied-parameter edges dashed (render with `dot -Tsvg`).
#include <fmt/format.h>

#include <boost/graph/adjacency_list.hpp>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/leaves.h"
#include "model/persistence.h"
#include "model/scenario.h"
#include "tools/commands.h"
#include "tools/scenario_input.h"

namespace zfetch::tools {

namespace {

struct GraphOptions {
  std::string scenario;
};

// A DOT double-quoted string body: only '"' and '\' need escaping. Newlines never occur in
// names; `\l` line breaks are added by the caller, outside this function.
std::string dot_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c == '\n' ? ' ' : c);
  }
  return out;
}

std::string_view dtype_name(model::DType dtype) {
  switch (dtype) {
  case model::DType::Fp32:
    return "fp32";
  case model::DType::Bf16:
    return "bf16";
  case model::DType::Fp16:
    return "fp16";
  }
  return "?";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// The qualified name people know a module by; the root's is the model's name.
std::string_view display_name(const model::ModuleSpec& module) {
  return module.qualified_name.empty() ? std::string_view(module.name)
                                       : std::string_view(module.qualified_name);
}

// One label line per own parameter, left-justified (`\l`), e.g.
// `weight [2, 8] numel=16 fp32 frozen=false persistent=true`.
void append_param_lines(const model::Scenario& scenario, const model::ModuleSpec& module,
                        const std::vector<bool>& persistent, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  for (model::ParamIndex index : module.params) {
    const model::ParamSpec& param = scenario.params[index];
    fmt::format_to(it, "{} {} numel={} {} frozen={} persistent={}", dot_escape(param.name),
                   shape_text(param.shape), param.numel, dtype_name(param.dtype), param.frozen,
                   static_cast<bool>(persistent[index]));
    if (param.tied_to != model::kNone) {
      fmt::format_to(it, " tied_to={}", dot_escape(scenario.params[param.tied_to].qualified_name));
    }
    fmt::format_to(it, "\\l");
  }
}

std::string render_dot(const model::Scenario& scenario) {
  const std::vector<bool> persistent = model::select_persistent(scenario, scenario.config.zero);
  const std::vector<uint8_t> leaves = model::z3_leaf_modules(scenario);
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "digraph \"{}\" {{\n", dot_escape(scenario.name));
  fmt::format_to(it, "  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
  fmt::format_to(it, "  edge [fontname=\"monospace\", fontsize=9];\n");
  // Vertices are vecS indices in file order (== Scenario::modules), so the output is stable.
  for (auto [v, v_end] = boost::vertices(scenario.graph); v != v_end; ++v) {
    const model::ModuleSpec& module = scenario.modules[*v];
    fmt::format_to(it, "  m{} [label=\"{}", *v, dot_escape(display_name(module)));
    if (!module.class_name.empty()) {
      fmt::format_to(it, "\\n({})", dot_escape(module.class_name));
    }
    if (leaves[*v] != 0) {
      fmt::format_to(it, "\\n[z3 leaf]");
    }
    if (!module.params.empty()) {
      fmt::format_to(it, "\\n");
    }
    append_param_lines(scenario, module, persistent, out);
    fmt::format_to(it, "\"];\n");
  }
  for (auto [v, v_end] = boost::vertices(scenario.graph); v != v_end; ++v) {
    for (auto [e, e_end] = boost::out_edges(*v, scenario.graph); e != e_end; ++e) {
      const model::ModuleEdge& edge = scenario.graph[*e];
      const auto target = boost::target(*e, scenario.graph);
      if (edge.kind == model::EdgeKind::Child) {
        fmt::format_to(it, "  m{} -> m{};\n", *v, target);
      } else {
        // Both arms are string_views: a `std::string : ""` conditional would build a temporary.
        const std::string_view param =
            edge.param < scenario.params.size()
                ? std::string_view(scenario.params[edge.param].qualified_name)
                : std::string_view();
        fmt::format_to(it, "  m{} -> m{} [style=dashed, label=\"{}\"];\n", *v, target,
                       dot_escape(param));
      }
    }
  }
  fmt::format_to(it, "}}\n");
  return fmt::to_string(out);
}

}  // namespace

void setup_graph(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<GraphOptions>();
  sub.add_option("scenario", options->scenario, "scenario file (.yaml, .yml, .json)")->required();
  sub.callback([&action, options] {
    action = [options] {
      const std::optional<model::Scenario> scenario = load_or_report(options->scenario);
      if (!scenario) {
        return kExitBadInput;
      }
      const std::string dot = render_dot(*scenario);
      std::fwrite(dot.data(), 1, dot.size(), stdout);
      return std::fflush(stdout) == 0 ? kExitOk : kExitBadInput;
    };
  });
}

}  // namespace zfetch::tools
