// The module tree as Graphviz DOT (`zfetch graph`): child edges, external accesses, tied
// weights, persistence and frozen styles, focus, depth and folding of repeated subtrees.
#pragma once

#include <optional>
#include <string>

#include "model/scenario.h"

namespace zfetch::tools {

struct GraphDotOptions {
  /// Show only this module's subtree, its ancestors, and the modules its accesses and tied
  /// weights connect it to. kNone: the whole tree.
  model::ModuleIndex focus = model::kNone;
  /// Levels of children shown below the root (or below `focus`); -1: all. A module whose
  /// children are cut says how many modules it hides.
  int depth = -1;
  /// Fold runs of two or more consecutive identical siblings (layers.0 .. layers.31) into the
  /// first one, labelled with the count.
  bool fold = true;
  /// The failing module and the text of its failure (DeepSpeed's message and the explanation):
  /// access edges from that module whose parameter the text names are drawn in red.
  std::optional<model::ModuleIndex> failure_module;
  std::string failure_text;
};

/// Renders the graph. Deterministic: vertices are visited in file order.
///   - one box per shown module: qualified name, class, `[z3 leaf]`, one line per own
///     parameter; bold blue border when it holds a persistent parameter, grey fill when all its
///     own parameters are frozen;
///   - parent -> child: solid; accessing module -> parameter owner (an `access:` of another
///     module's parameter): dashed, labelled with the parameter and the access kind;
///     tied parameter's module -> target's module: dotted.
std::string render_graph_dot(const model::Scenario& scenario, const GraphDotOptions& options);

}  // namespace zfetch::tools
