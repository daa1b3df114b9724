// The `zfetch-gpu replay` subcommand (options, printing, files); see replay.h.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace zfetch::gpu {

/// Adds `replay` to `app`; its callback sets `action` (returns the exit code: 0 ok, 2 usage, a
/// bad schedule or a --calibration other than the schedule's, 3 CUDA error, 77 no GPU).
void setup_replay(CLI::App& app, std::function<int()>& action);

}  // namespace zfetch::gpu
