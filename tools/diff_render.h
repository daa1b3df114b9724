// Text and JSON renderings of a trace diff (trace/diff.h), FileCheck-style.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "trace/diff.h"

namespace zfetch::tools {

/// How an event reads in a message: `fetch of module 'adapter' at trace step 6 (engine 1,
/// micro-step 1, recompute)`, `gather of adapter.adapter_A.weight (engine 1, ...)`.
std::string describe_event(const trace::Event& event);

/// The text of the first divergence (all of them with `all`), each an error at its line of
/// the recorded file with notes into the expected file and a few events of context, then the
/// summary line. Ends in '\n'.
std::string render_diff_text(const trace::DiffReport& report, const std::string& recorded_file,
                             const std::string& expected_file, bool all);

/// The report as JSON (schema in docs/diff.md).
nlohmann::ordered_json render_diff_json(const trace::DiffReport& report,
                                        const std::string& recorded_file,
                                        const std::string& expected_file);

}  // namespace zfetch::tools
