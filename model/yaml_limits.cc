// Bounded YAML loading (see yaml_limits.h).
#include "model/yaml_limits.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace zfetch::model::detail {

namespace {

// Thrown by the event pass to stop the parser at the first violated bound.
struct LimitExceeded {
  YAML::Mark mark;
  uint32_t length;
  std::string message;
};

// What the loader will see under an anchor: how many nodes, how deep.
struct Extent {
  uint64_t nodes = 0;
  int height = 0;  ///< collection levels below and including this node (0 for a scalar)
};

// Counts nodes and depth as the parser reports them, expanding aliases by the recorded extent
// of their anchor instead of walking it again (so the pass is linear in the text).
class LimitChecker final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& /*mark*/) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    leaf(mark, anchor, Extent{1, 0});
  }
  void OnScalar(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                const std::string& /*value*/) override {
    leaf(mark, anchor, Extent{1, 0});
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (anchor < open_anchors_.size() && open_anchors_[anchor]) {
      const std::string& name = names_[anchor];
      throw LimitExceeded{mark, static_cast<uint32_t>(name.size() + 1),
                          fmt::format("alias '*{}' refers to a node that contains it: the "
                                      "structure would be infinitely deep",
                                      name)};
    }
    const Extent extent = anchor < anchors_.size() ? anchors_[anchor] : Extent{1, 0};
    if (static_cast<int>(open_.size()) + extent.height > kMaxYamlDepth) {
      throw LimitExceeded{
          mark, 1, fmt::format("alias nests the document deeper than {} levels", kMaxYamlDepth)};
    }
    if (extent.nodes > kMaxYamlNodes - std::min(total_, kMaxYamlNodes)) {
      throw LimitExceeded{mark, 1,
                          fmt::format("aliases expand the document to more than {} nodes "
                                      "(recursive or exponential aliases?)",
                                      kMaxYamlNodes)};
    }
    total_ += extent.nodes;
    add_to_parent(extent);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }
  // Called just before the event of the node that carries the anchor.
  void OnAnchor(const YAML::Mark& /*mark*/, const std::string& name) override {
    pending_name_ = name;
  }

 private:
  struct Open {
    YAML::anchor_t anchor;
    Extent extent;
  };

  void count_node(const YAML::Mark& mark) {
    if (++total_ > kMaxYamlNodes) {
      throw LimitExceeded{mark, 1,
                          fmt::format("the document has more than {} nodes", kMaxYamlNodes)};
    }
  }
  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, Extent extent) {
    count_node(mark);
    record(anchor, extent);
    add_to_parent(extent);
  }
  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    count_node(mark);
    if (static_cast<int>(open_.size()) >= kMaxYamlDepth) {
      throw LimitExceeded{mark, 1,
                          fmt::format("collections nested deeper than {} levels", kMaxYamlDepth)};
    }
    if (anchor != YAML::NullAnchor) {
      if (anchor >= open_anchors_.size()) {
        open_anchors_.resize(anchor + 1, false);
        names_.resize(anchor + 1);
      }
      open_anchors_[anchor] = true;
      names_[anchor] = pending_name_;
    }
    open_.push_back({anchor, Extent{1, 1}});
  }
  void close() {
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) {
      open_anchors_[done.anchor] = false;
    }
    record(done.anchor, done.extent);
    add_to_parent(done.extent);
  }
  void record(YAML::anchor_t anchor, Extent extent) {
    if (anchor == YAML::NullAnchor) {
      return;
    }
    if (anchor >= anchors_.size()) {
      anchors_.resize(anchor + 1);
    }
    anchors_[anchor] = extent;
  }
  void add_to_parent(Extent child) {
    if (open_.empty()) {
      return;
    }
    Extent& parent = open_.back().extent;
    parent.nodes = std::min(parent.nodes + child.nodes, kMaxYamlNodes + 1);
    parent.height = std::max(parent.height, child.height + 1);
  }

  std::vector<Open> open_;
  std::vector<Extent> anchors_;     ///< by anchor id (yaml-cpp numbers them from 1)
  std::vector<bool> open_anchors_;  ///< anchors whose collection is still being read
  std::vector<std::string> names_;  ///< by anchor id, for collections (the only recursive case)
  std::string pending_name_;
  uint64_t total_ = 0;
};

}  // namespace

std::optional<YAML::Node> load_yaml_within_limits(YamlReader& reader, std::string_view text) {
  const std::string copy(text);
  {
    std::istringstream in(copy);
    YAML::Parser parser(in);
    LimitChecker checker;
    try {
      parser.HandleNextDocument(checker);
    } catch (const LimitExceeded& e) {
      reader.error_at(SourceLoc{static_cast<uint32_t>(e.mark.line + 1),
                                static_cast<uint32_t>(e.mark.column + 1)},
                      e.length, e.message);
      return std::nullopt;
    }
  }
  return YAML::Load(copy);
}

}  // namespace zfetch::model::detail
