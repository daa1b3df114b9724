// The module tree as a Boost.Graph adjacency_list (vecS): vertex i is Scenario::modules[i].
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>

namespace zfetch::model {

/// Edge kinds of the module graph: parent -> child, and tied param's module -> target's module.
enum class EdgeKind : uint8_t { Child, Tied };

struct ModuleEdge {
  EdgeKind kind = EdgeKind::Child;
  uint32_t param = UINT32_MAX;  ///< Tied: the ParamIndex of the tied (aliasing) parameter
};

/// vecS vertices: descriptors are indices in file order, so iteration is deterministic.
using ModuleGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                          boost::no_property, ModuleEdge>;

}  // namespace zfetch::model
