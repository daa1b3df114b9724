// The subcommands of `zfetch`: one table row each, one file each (tools/cmd_*.cc).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace zfetch::tools {

/// Exit codes (FileCheck's scheme): 0 success, 1 a mismatch or failed expectation, 2 bad input.
inline constexpr int kExitOk = 0;
inline constexpr int kExitMismatch = 1;
inline constexpr int kExitBadInput = 2;
/// A bug in zfetch itself (an exception no input should cause), never a verdict on the input:
/// scripts that read 1 as "mismatch" must not mistake it for one.
inline constexpr int kExitInternalError = 3;

/// Declares a subcommand's options on `sub` and sets `action`, which runs it after parsing
/// and returns the exit code.
using CommandSetup = void (*)(CLI::App& sub, std::function<int()>& action);

struct Command {
  const char* name;
  const char* help;
  CommandSetup setup;
};

void setup_graph(CLI::App& sub, std::function<int()>& action);
void setup_validate(CLI::App& sub, std::function<int()>& action);
void setup_run(CLI::App& sub, std::function<int()>& action);
void setup_check(CLI::App& sub, std::function<int()>& action);
void setup_sweep(CLI::App& sub, std::function<int()>& action);
void setup_diff(CLI::App& sub, std::function<int()>& action);
void setup_fuzz(CLI::App& sub, std::function<int()>& action);
void setup_explain(CLI::App& sub, std::function<int()>& action);

}  // namespace zfetch::tools
