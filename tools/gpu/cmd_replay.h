// The `zfetch-gpu replay` subcommand (options, printing, files); see replay.h.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace zfetch::gpu {

/// Adds `replay` to `app`; its callback sets `action` (returns the exit code: 0 ok, 1 the
/// predict-only check failed, 2 usage, 3 CUDA error, 77 no GPU).
void setup_replay(CLI::App& app, std::function<int()>& action);

}  // namespace zfetch::gpu
