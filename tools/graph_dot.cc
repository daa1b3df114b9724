// Module-tree DOT rendering for `zfetch graph` (see graph_dot.h).
#include "tools/graph_dot.h"

#include <fmt/format.h>

#include <boost/graph/adjacency_list.hpp>
#include <functional>
#include <iterator>
#include <map>
#include <string_view>
#include <tuple>
#include <vector>

#include "model/leaves.h"
#include "model/persistence.h"
#include "trace/names.h"

namespace zfetch::tools {

namespace {

using model::kNone;
using model::ModuleIndex;
using model::ParamIndex;

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

// The qualified name people know a module by.
std::string_view display_name(const model::ModuleSpec& module) {
  return trace::display_module_name(module.qualified_name);
}

// `name` relative to the module `prefix` ("" for the root), or "" when it is not inside it.
std::string_view relative_to(std::string_view name, std::string_view prefix) {
  if (prefix.empty()) {
    return name;
  }
  if (name.size() > prefix.size() && name.starts_with(prefix) && name[prefix.size()] == '.') {
    return name.substr(prefix.size() + 1);
  }
  return {};
}

// Calls `visit` on every op of a forward program, bodies included.
void for_each_op(const std::vector<model::Op>& ops,
                 const std::function<void(const model::Op&)>& visit) {
  for (const model::Op& op : ops) {
    visit(op);
    for_each_op(op.body, visit);
  }
}

// Everything the renderer decides before writing: which module stands for which, and what
// is shown.
class GraphLayout {
 public:
  GraphLayout(const model::Scenario& scenario, const GraphDotOptions& options)
      : scenario_(scenario),
        persistent_(model::select_persistent(scenario, scenario.config.zero)),
        representative_(scenario.modules.size()),
        fold_count_(scenario.modules.size(), 1),
        fold_last_(scenario.modules.size(), kNone),
        visible_(scenario.modules.size(), 0) {
    for (size_t m = 0; m < representative_.size(); ++m) {
      representative_[m] = static_cast<ModuleIndex>(m);
    }
    if (options.fold) {
      compute_signatures();
      // Under --focus only the focused subtree folds: the module asked for is drawn as itself.
      fold(options.focus == kNone ? ModuleIndex{0} : options.focus);
    }
    choose_visible(options);
  }

  [[nodiscard]] const std::vector<bool>& persistent() const { return persistent_; }
  [[nodiscard]] bool visible(ModuleIndex m) const { return visible_[m] != 0; }
  [[nodiscard]] int64_t fold_count(ModuleIndex m) const { return fold_count_[m]; }
  [[nodiscard]] ModuleIndex fold_last(ModuleIndex m) const { return fold_last_[m]; }

  /// The shown module that `m` is drawn as: its representative, or the nearest shown ancestor
  /// of it; kNone when neither is shown.
  [[nodiscard]] ModuleIndex shown_as(ModuleIndex m) const {
    for (ModuleIndex v = representative_[m]; v != kNone; v = scenario_.modules[v].parent) {
      if (visible_[v] != 0) {
        return v;
      }
    }
    return kNone;
  }

  /// The parameter that `p` is drawn as (the same position in the representative module).
  [[nodiscard]] ParamIndex shown_param(ParamIndex p) const {
    const model::ParamSpec& spec = scenario_.params[p];
    const ModuleIndex rep = representative_[spec.owner];
    if (rep == spec.owner) {
      return p;
    }
    const auto& own = scenario_.modules[spec.owner].params;
    const auto& rep_params = scenario_.modules[rep].params;
    for (size_t i = 0; i < own.size() && i < rep_params.size(); ++i) {
      if (own[i] == p) {
        return rep_params[i];
      }
    }
    return p;
  }

  /// Modules under `m` that are cut by focus or depth (folded copies are not counted: their
  /// representative's label counts them).
  [[nodiscard]] int64_t hidden_below(ModuleIndex m) const {
    int64_t hidden = 0;
    std::vector<ModuleIndex> todo(scenario_.modules[m].children.begin(),
                                  scenario_.modules[m].children.end());
    while (!todo.empty()) {
      const ModuleIndex c = todo.back();
      todo.pop_back();
      if (representative_[c] != c) {
        continue;  // a folded copy: counted in its representative's label
      }
      hidden += visible_[c] == 0 ? 1 : 0;
      todo.insert(todo.end(), scenario_.modules[c].children.begin(),
                  scenario_.modules[c].children.end());
    }
    return hidden;
  }

 private:
  // Two modules get the same signature id when their subtrees are identical apart from their
  // own names: classes, parameters (shape, dtype, frozen, persistence, ties), programs and
  // children, with names relative to the module. Children come after their parent in file
  // order, so a reverse sweep sees every child first.
  void compute_signatures() {
    signature_.assign(scenario_.modules.size(), 0);
    std::map<std::string, int64_t> ids;
    for (size_t i = scenario_.modules.size(); i-- > 0;) {
      const model::ModuleSpec& module = scenario_.modules[i];
      const std::string_view prefix = module.qualified_name;
      const auto relative = [&](std::string_view name) {
        const std::string_view rel = relative_to(name, prefix);
        return rel.empty() ? fmt::format("^{}", name) : std::string(rel);
      };
      std::string text = fmt::format("{}|{}|{}|{}", module.class_name, module.leaf, module.outputs,
                                     module.compute_us);
      for (ParamIndex p : module.params) {
        const model::ParamSpec& spec = scenario_.params[p];
        text += fmt::format("|p:{}:{}:{}:{}:{}", spec.name, fmt::join(spec.shape, ","),
                            model::dtype_name(spec.dtype), spec.frozen,
                            static_cast<bool>(persistent_[p]));
        if (spec.tied_to != kNone) {
          text += ":" + relative(scenario_.params[spec.tied_to].qualified_name);
        }
      }
      for_each_op(module.forward, [&](const model::Op& op) {
        text += fmt::format("|o:{}:{}:{}:{}", static_cast<int>(op.kind), op.count, op.reentrant,
                            static_cast<int>(op.access));
        if (op.callee != kNone) {
          text += ":" + relative(scenario_.modules[op.callee].qualified_name);
        }
        if (op.param != kNone) {
          text += ":" + relative(scenario_.params[op.param].qualified_name);
        }
      });
      for (ModuleIndex c : module.children) {
        text += fmt::format("|c:{}:{}", scenario_.modules[c].name, signature_[c]);
      }
      const auto [it, inserted] =
          ids.try_emplace(std::move(text), static_cast<int64_t>(ids.size()));
      signature_[i] = it->second;
    }
  }

  // Folds runs of consecutive identical children into the first of each run, top-down.
  void fold(ModuleIndex m) {
    const std::vector<ModuleIndex>& children = scenario_.modules[m].children;
    for (size_t begin = 0; begin < children.size();) {
      size_t end = begin + 1;
      while (end < children.size() && signature_[children[end]] == signature_[children[begin]]) {
        ++end;
      }
      const ModuleIndex first = children[begin];
      if (end - begin >= 2) {
        fold_count_[first] = static_cast<int64_t>(end - begin);
        fold_last_[first] = children[end - 1];
        for (size_t k = begin + 1; k < end; ++k) {
          map_subtree(children[k], first);
        }
      }
      fold(first);
      begin = end;
    }
  }

  // Identical subtrees have the same shape: child i stands for child i.
  void map_subtree(ModuleIndex copy, ModuleIndex rep) {
    representative_[copy] = rep;
    const auto& copies = scenario_.modules[copy].children;
    const auto& reps = scenario_.modules[rep].children;
    for (size_t i = 0; i < copies.size() && i < reps.size(); ++i) {
      map_subtree(copies[i], reps[i]);
    }
  }

  void choose_visible(const GraphDotOptions& options) {
    const ModuleIndex start =
        options.focus == kNone ? ModuleIndex{0} : representative_[options.focus];
    // The subtree of `start`, cut at `depth` levels below it.
    std::vector<std::pair<ModuleIndex, int>> todo{{start, 0}};
    std::vector<uint8_t> in_subtree(scenario_.modules.size(), 0);
    while (!todo.empty()) {
      const auto [m, level] = todo.back();
      todo.pop_back();
      in_subtree[m] = 1;
      if (representative_[m] != m) {
        continue;
      }
      visible_[m] = 1;
      if (options.depth >= 0 && level >= options.depth) {
        continue;
      }
      for (ModuleIndex c : scenario_.modules[m].children) {
        todo.emplace_back(c, level + 1);
      }
    }
    if (options.focus == kNone) {
      return;
    }
    // The path from the root, and the other ends of the subtree's accesses and ties: the
    // context a person needs to read the focused part.
    for (ModuleIndex a = scenario_.modules[start].parent; a != kNone;
         a = scenario_.modules[a].parent) {
      visible_[a] = 1;
    }
    std::vector<std::pair<ModuleIndex, ModuleIndex>> links;
    for (size_t m = 0; m < scenario_.modules.size(); ++m) {
      for_each_op(scenario_.modules[m].forward, [&](const model::Op& op) {
        if (op.kind == model::Op::Kind::Access && op.param != kNone) {
          links.emplace_back(static_cast<ModuleIndex>(m), scenario_.params[op.param].owner);
        }
      });
    }
    for (const model::ParamSpec& spec : scenario_.params) {
      if (spec.tied_to != kNone) {
        links.emplace_back(spec.owner, scenario_.params[spec.tied_to].owner);
      }
    }
    const auto inside = [&](ModuleIndex m) {
      for (ModuleIndex v = m; v != kNone; v = scenario_.modules[v].parent) {
        if (v == options.focus || v == start) {
          return true;
        }
      }
      return in_subtree[m] != 0;
    };
    for (const auto& [from, to] : links) {
      if (inside(from) != inside(to)) {
        visible_[representative_[inside(from) ? to : from]] = 1;
      }
    }
  }

  const model::Scenario& scenario_;
  std::vector<bool> persistent_;
  std::vector<int64_t> signature_;
  std::vector<ModuleIndex> representative_;  ///< per module: the module drawn for it
  std::vector<int64_t> fold_count_;          ///< per representative: identical siblings folded
  std::vector<ModuleIndex> fold_last_;       ///< per representative: the last folded sibling
  std::vector<uint8_t> visible_;
};

void append_node(const model::Scenario& scenario, const GraphLayout& layout,
                 const std::vector<uint8_t>& leaves, ModuleIndex v, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  const model::ModuleSpec& module = scenario.modules[v];
  fmt::format_to(it, "  m{} [label=\"{}", v, dot_escape(display_name(module)));
  if (layout.fold_count(v) > 1) {
    fmt::format_to(it, " .. {} (x{} identical)",
                   dot_escape(display_name(scenario.modules[layout.fold_last(v)])),
                   layout.fold_count(v));
  }
  if (!module.class_name.empty()) {
    fmt::format_to(it, "\\n({})", dot_escape(module.class_name));
  }
  if (leaves[v] != 0) {
    fmt::format_to(it, "\\n[z3 leaf]");
  }
  if (!module.params.empty()) {
    fmt::format_to(it, "\\n");
  }
  bool any_persistent = false;
  bool all_frozen = !module.params.empty();
  for (ParamIndex index : module.params) {
    const model::ParamSpec& param = scenario.params[index];
    const bool persistent = layout.persistent()[index];
    any_persistent = any_persistent || persistent;
    all_frozen = all_frozen && param.frozen;
    // Flags only when set, so that wide trees stay narrow; numel follows from the shape.
    fmt::format_to(it, "{} [{}] {}{}{}", dot_escape(param.name), fmt::join(param.shape, ", "),
                   model::dtype_name(param.dtype), param.frozen ? " frozen" : "",
                   persistent ? " persistent" : "");
    if (param.tied_to != kNone) {
      fmt::format_to(it, " tied_to={}", dot_escape(scenario.params[param.tied_to].qualified_name));
    }
    fmt::format_to(it, "\\l");
  }
  if (const int64_t hidden = layout.hidden_below(v); hidden > 0) {
    fmt::format_to(it, "\\n+{} modules not shown", hidden);
  }
  fmt::format_to(it, "\"");
  if (any_persistent) {
    fmt::format_to(it, ", color=\"#1f5fbf\", penwidth=2");
  }
  if (all_frozen) {
    fmt::format_to(it, ", style=filled, fillcolor=\"#e6e6e6\"");
  }
  fmt::format_to(it, "];\n");
}

}  // namespace

std::string render_graph_dot(const model::Scenario& scenario, const GraphDotOptions& options) {
  const GraphLayout layout(scenario, options);
  const std::vector<uint8_t> leaves = model::z3_leaf_modules(scenario);
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "digraph \"{}\" {{\n", dot_escape(scenario.name));
  fmt::format_to(it, "  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
  fmt::format_to(it, "  edge [fontname=\"monospace\", fontsize=9];\n");
  // Vertices are vecS indices in file order (== Scenario::modules), so the output is stable.
  for (ModuleIndex v = 0; v < scenario.modules.size(); ++v) {
    if (layout.visible(v)) {
      append_node(scenario, layout, leaves, v, out);
    }
  }
  for (ModuleIndex v = 0; v < scenario.modules.size(); ++v) {
    const ModuleIndex parent = scenario.modules[v].parent;
    if (layout.visible(v) && parent != kNone && layout.visible(parent)) {
      fmt::format_to(it, "  m{} -> m{};\n", parent, v);
    }
  }

  // External accesses and ties between shown modules, once per (from, to, parameter): folded
  // copies draw as their representative's edge with a count. std::map keeps the output order.
  enum class Link : uint8_t { Access, MetadataAccess, Tied };
  struct LinkInfo {
    int64_t count = 0;
    bool failure = false;
  };
  std::map<std::tuple<ModuleIndex, ModuleIndex, ParamIndex, Link>, LinkInfo> links;
  for (ModuleIndex m = 0; m < scenario.modules.size(); ++m) {
    for_each_op(scenario.modules[m].forward, [&](const model::Op& op) {
      if (op.kind != model::Op::Kind::Access || op.param == kNone) {
        return;
      }
      const model::ParamSpec& param = scenario.params[op.param];
      if (param.owner == m) {
        return;  // a module reading its own parameter is no external access
      }
      const ModuleIndex from = layout.shown_as(m);
      const ModuleIndex to = layout.shown_as(param.owner);
      if (from == kNone || to == kNone || from == to) {
        return;
      }
      const Link kind =
          op.access == model::AccessKind::Metadata ? Link::MetadataAccess : Link::Access;
      LinkInfo& info = links[{from, to, layout.shown_param(op.param), kind}];
      ++info.count;
      info.failure =
          info.failure || (options.failure_module == m &&
                           options.failure_text.find(param.qualified_name) != std::string::npos);
    });
  }
  for (auto [v, v_end] = boost::vertices(scenario.graph); v != v_end; ++v) {
    for (auto [e, e_end] = boost::out_edges(*v, scenario.graph); e != e_end; ++e) {
      const model::ModuleEdge& edge = scenario.graph[*e];
      if (edge.kind != model::EdgeKind::Tied || edge.param >= scenario.params.size()) {
        continue;
      }
      const auto target = static_cast<ModuleIndex>(boost::target(*e, scenario.graph));
      const ModuleIndex from = layout.shown_as(static_cast<ModuleIndex>(*v));
      const ModuleIndex to = layout.shown_as(target);
      if (from != kNone && to != kNone && from != to) {
        ++links[{from, to, layout.shown_param(edge.param), Link::Tied}].count;
      }
    }
  }
  for (const auto& [key, info] : links) {
    const auto& [from, to, param, kind] = key;
    std::string label = dot_escape(scenario.params[param].qualified_name);
    if (kind == Link::MetadataAccess) {
      label += " (metadata)";
    } else if (kind == Link::Tied) {
      label += " (tied)";
    }
    if (info.count > 1) {
      label += fmt::format(" x{}", info.count);
    }
    fmt::format_to(it, "  m{} -> m{} [style={}, label=\"{}\"", from, to,
                   kind == Link::Tied ? "dotted" : "dashed", label);
    if (kind != Link::Tied) {
      fmt::format_to(it, ", constraint=false");
    }
    if (info.failure) {
      fmt::format_to(it, ", color=red, fontcolor=red, penwidth=3");
    }
    fmt::format_to(it, "];\n");
  }
  fmt::format_to(it, "}}\n");
  return fmt::to_string(out);
}

}  // namespace zfetch::tools
