// The autograd graph's recording rules: region bookkeeping and a discarded replay's early stop.
#include "sim/autograd_graph.h"

#include <doctest/doctest.h>

#include <vector>

namespace zfetch::sim {
namespace {

using Kind = AutogradGraph::Node::Kind;

TEST_SUITE("sim") {
  TEST_CASE("autograd_graph: a non-reentrant region counts its saved tensors") {
    AutogradGraph graph;
    graph.reserve(4, 4);
    const std::vector<model::Op> body;
    graph.add_post_backward(0);
    const int32_t outer = graph.open_region(&body, 0, true);
    CHECK(outer == -1);
    graph.add_compute(1, true);
    graph.add_reentrant_region(&body, 1);  // its saved inputs belong to the open region too
    graph.add_pre_backward(1);
    graph.close_region(outer);
    graph.add_compute(2, true);  // outside the region
    REQUIRE(graph.size() == 5);
    CHECK(graph.node(1).kind == Kind::Compute);
    CHECK(graph.node(1).region == 0);
    CHECK(graph.node(2).kind == Kind::Checkpoint);
    CHECK(graph.node(2).region == 1);
    CHECK(graph.region(1).enclosing == 0);
    CHECK(graph.node(4).region == -1);
    CHECK(graph.region(0).compute_nodes == 2);
  }

  TEST_CASE("autograd_graph: a discarded replay records nothing and stops after its tensors") {
    AutogradGraph graph;
    const std::vector<model::Op> body;
    const int32_t outer = graph.open_region(&body, 0, true);
    graph.add_compute(1, true);
    graph.add_compute(2, true);
    graph.close_region(outer);
    const size_t before = graph.size();
    graph.begin_discarded_replay(0);
    CHECK_FALSE(graph.recording());
    graph.add_pre_backward(1);
    graph.add_compute(1, true);
    CHECK_FALSE(graph.stopping());
    graph.add_compute(2, true);  // the second, last saved tensor: torch stops the replay
    CHECK(graph.stopping());
    CHECK(graph.size() == before);
    graph.end_discarded_replay();
    CHECK(graph.recording());
    CHECK_FALSE(graph.stopping());
  }

  TEST_CASE("autograd_graph: a param's gradient is accumulated after its oldest use, per task") {
    AutogradGraph graph;
    graph.reserve(4, 4);
    graph.add_compute(1, true);
    graph.add_use(0);
    graph.add_use(1);
    graph.add_data_read(2);
    graph.add_use(0);  // a newer use of param 0: its backward runs before the compute's
    REQUIRE(graph.size() == 2);
    REQUIRE(graph.accumulated(graph.node(0)).size() == 2);
    CHECK(graph.accumulated(graph.node(0))[0].uses == 2);  // the compute and the read, summed
    CHECK(graph.accumulated(graph.node(0))[1].uses == 1);
    CHECK(graph.accumulated(graph.node(1)).empty());
    // A reentrant replay's graph is a task of its own: param 0 is accumulated there too.
    graph.begin_nested_task();
    graph.add_compute(1, true);
    graph.add_use(0);
    REQUIRE(graph.accumulated(graph.node(2)).size() == 1);
    CHECK(graph.accumulated(graph.node(2))[0].param == 0);
    CHECK(graph.accumulated(graph.node(2))[0].uses == 1);
    graph.truncate(2);
    CHECK(graph.size() == 2);
    CHECK(graph.accumulated(graph.node(0)).size() == 2);
  }

  TEST_CASE("autograd_graph: a nested region's input is a saved tensor of the enclosing one") {
    AutogradGraph graph;
    const std::vector<model::Op> body;
    const int32_t top = graph.open_region(&body, 0, true);  // region 0
    graph.add_compute(1, true);
    const int32_t outer = graph.open_region(&body, 1, true);  // region 1: saves its input in 0
    CHECK(outer == 0);
    graph.add_compute(2, true);
    graph.close_region(outer);
    graph.close_region(top);
    CHECK(graph.region(1).enclosing == 0);
    CHECK(graph.region(0).compute_nodes == 2);
    CHECK(graph.region(1).compute_nodes == 1);

    // Recomputing region 0: its compute, then the inner region's input saving is its last saved
    // tensor; nothing inside the inner (new, discarded) frame counts.
    graph.begin_discarded_replay(0);
    graph.add_compute(1, true);
    CHECK_FALSE(graph.stopping());
    const int32_t inner = graph.open_region(&body, 1, true);
    CHECK(graph.stopping());
    graph.close_region(inner);
    graph.end_discarded_replay();

    // With a saved tensor after the inner region, the inner body runs and does not count.
    AutogradGraph late;
    const int32_t a = late.open_region(&body, 0, true);
    const int32_t b = late.open_region(&body, 1, true);
    late.add_compute(2, true);
    late.close_region(b);
    late.add_compute(3, true);
    late.close_region(a);
    CHECK(late.region(0).compute_nodes == 2);
    late.begin_discarded_replay(0);
    const int32_t b2 = late.open_region(&body, 1, true);
    late.add_compute(2, true);  // in the inner frame: not the replayed region's
    late.close_region(b2);
    CHECK_FALSE(late.stopping());
    late.add_compute(3, true);
    CHECK(late.stopping());
    late.end_discarded_replay();
  }
}

}  // namespace
}  // namespace zfetch::sim
