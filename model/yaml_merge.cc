// YAML merge keys (see yaml_merge.h).
#include "model/yaml_merge.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace zfetch::model::detail {

namespace {

// Deeper than any scenario; the bound keeps a hostile file from exhausting the stack.
constexpr int kMaxDepth = 256;

class MergeResolver {
 public:
  explicit MergeResolver(YamlReader& reader) : reader_(reader) {}

  void resolve(const YAML::Node& node, int depth) {
    if (!node.IsMap() && !node.IsSequence()) {
      return;
    }
    if (depth > kMaxDepth) {
      if (!depth_reported_) {
        reader_.error(node, fmt::format("YAML nesting deeper than {} levels", kMaxDepth));
        depth_reported_ = true;
      }
      return;
    }
    // An aliased node is one node reached by several paths: visit it once, so that
    // aliases of aliases cost linear time. Parsed nodes differ in position or type.
    const YAML::Mark mark = node.Mark();
    if (!visited_.insert({mark.pos, mark.line, static_cast<int>(node.Type())}).second) {
      return;
    }
    if (node.IsSequence()) {
      for (const YAML::Node& item : node) {
        resolve(item, depth + 1);
      }
      return;
    }
    std::vector<YAML::Node> sources;
    std::vector<YAML::Node> merge_keys;
    for (const auto& entry : node) {
      resolve(entry.second, depth + 1);
      if (!entry.first.IsScalar() || entry.first.Scalar() != "<<") {
        continue;
      }
      merge_keys.push_back(entry.first);
      if (entry.second.IsMap()) {
        sources.push_back(entry.second);
      } else if (entry.second.IsSequence() && all_maps(entry.second)) {
        for (const YAML::Node& source : entry.second) {
          sources.push_back(source);
        }
      } else {
        reader_.error(entry.second.IsNull() ? entry.first : entry.second,
                      fmt::format("the value of a merge key '<<' must be a mapping or a list of "
                                  "mappings, got {}",
                                  describe_value(entry.second)));
      }
    }
    if (merge_keys.empty()) {
      return;
    }
    YAML::Node map = node;
    for (size_t i = 0; i < merge_keys.size(); ++i) {
      map.remove("<<");
    }
    std::set<std::string> present;
    for (const auto& entry : map) {
      if (entry.first.IsScalar()) {
        present.insert(entry.first.Scalar());
      }
    }
    for (const YAML::Node& source : sources) {
      for (const auto& entry : source) {
        if (entry.first.IsScalar() && present.insert(entry.first.Scalar()).second) {
          map.force_insert(entry.first, entry.second);
        }
      }
    }
  }

 private:
  static bool all_maps(const YAML::Node& list) {
    for (const YAML::Node& item : list) {
      if (!item.IsMap()) {
        return false;
      }
    }
    return true;
  }

  YamlReader& reader_;
  std::set<std::tuple<int, int, int>> visited_;
  bool depth_reported_ = false;
};

}  // namespace

void apply_merge_keys(const YAML::Node& root, YamlReader& reader) {
  MergeResolver(reader).resolve(root, 0);
}

}  // namespace zfetch::model::detail
