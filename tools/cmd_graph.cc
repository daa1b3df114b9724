// zfetch graph (placeholder until its implementation lands).
#include <cstdio>

#include "tools/commands.h"

namespace zfetch::tools {

void setup_graph(CLI::App& sub, std::function<int()>& action) {
  sub.callback([&action] {
    action = [] {
      std::fputs("zfetch graph: not implemented yet\n", stderr);
      return kExitBadInput;
    };
  });
}

}  // namespace zfetch::tools
