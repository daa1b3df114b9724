// Loading scenario files (YAML, or JSON since YAML contains it) into a checked Scenario.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/diagnostic.h"
#include "model/scenario.h"

namespace zfetch::model {

/// The result of a load: a scenario when `diagnostics` is empty, otherwise every problem found.
/// `warnings` (located, severity Warning) never stop a load: what the file says is valid but
/// cannot mean what it seems to (a `when` that can never hold).
struct LoadResult {
  std::optional<Scenario> scenario;
  DiagnosticList diagnostics;
  DiagnosticList warnings;
};

/// Parses `text` as a scenario named `file_name` (used in diagnostics). `deepspeed_config:`
/// paths are resolved relative to `base_dir`. Never throws for bad input.
LoadResult parse_scenario_text(std::string_view file_name, std::string_view text,
                               std::string_view base_dir = ".");

/// Reads and parses the file at `path`; an unreadable file is a diagnostic, not an exception.
LoadResult load_scenario_file(const std::string& path);

}  // namespace zfetch::model
