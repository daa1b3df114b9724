// Loading scenario files (YAML, or JSON since YAML contains it) into a checked Scenario.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/diagnostic.h"
#include "model/hf_auto.h"
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

/// Reads `text`, the content of the ds_config file at `path`, into `config` exactly as a
/// scenario's `deepspeed_config: path` does: hjson as DeepSpeed reads it, "auto" values filled
/// from `hf`; every problem, located in `path`, is appended to `out`. `text` must be checked
/// text (what io::read_input_file or io::check_text accepts). For a caller that holds the text
/// already, so that it need not write a file and load a scenario that names it.
void read_ds_config_text(const std::string& path, std::string_view text, const HfTrainingArgs& hf,
                         DeepSpeedConfig& config, DiagnosticList& out);

/// Reads and parses the file at `path`; an unreadable file is a diagnostic, not an exception.
LoadResult load_scenario_file(const std::string& path);

/// Parses `text`, already read from the file at `path` (a pipe read whole), as
/// load_scenario_file does: paths in it are relative to the file's folder.
LoadResult parse_scenario_file_text(const std::string& path, std::string_view text);

}  // namespace zfetch::model
