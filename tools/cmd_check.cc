// zfetch check (placeholder until its implementation lands).
#include <cstdio>

#include "tools/commands.h"

namespace zfetch::tools {

void setup_check(CLI::App& sub, std::function<int()>& action) {
  sub.callback([&action] {
    action = [] {
      std::fputs("zfetch check: not implemented yet\n", stderr);
      return kExitBadInput;
    };
  });
}

}  // namespace zfetch::tools
