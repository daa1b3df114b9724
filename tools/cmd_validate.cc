// zfetch validate FILE...: load scenarios (.yaml/.yml/.json) or traces (.jsonl) and report
// every problem, compiler-style, on stderr.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "diag/render.h"
#include "io/input_file.h"
#include "model/load.h"
#include "model/read_error.h"
#include "sim/timeline/calibration.h"
#include "tools/commands.h"
#include "tools/input_kind.h"
#include "trace/reader.h"

namespace zfetch::tools {

namespace {

struct ValidateOptions {
  std::vector<std::string> files;
};

// True if the scenario loaded; every diagnostic goes to stderr.
bool validate_scenario(const std::string& path, const model::LoadResult& result) {
  for (const model::Diagnostic& diagnostic : result.diagnostics) {
    std::fputs(diag::render(diagnostic).c_str(), stderr);
  }
  for (const model::Diagnostic& warning : result.warnings) {
    std::fputs(diag::render(warning).c_str(), stderr);
  }
  if (!result.scenario) {
    return false;
  }
  // `run` needs the calibration too: a missing or malformed one fails here as it would there.
  const sim::CalibrationResult calibration = sim::resolve_calibration(*result.scenario);
  for (const model::Diagnostic& diagnostic : calibration.diagnostics) {
    std::fputs(diag::render(diagnostic).c_str(), stderr);
  }
  if (!calibration.calibration) {
    return false;
  }
  // Parameters as model.parameters() counts them: a tensor shared by tying once.
  const auto& params = result.scenario->params;
  const auto distinct = static_cast<size_t>(
      std::count_if(params.begin(), params.end(),
                    [](const model::ParamSpec& p) { return p.tied_to == model::kNone; }));
  std::string tied;
  if (distinct != params.size()) {
    tied = fmt::format("; {} tied name{} counted with the parameter they share",
                       params.size() - distinct, params.size() - distinct == 1 ? "" : "s");
  }
  std::printf("%s: ok (%zu modules, %zu parameters%s)\n", path.c_str(),
              result.scenario->modules.size(), distinct, tied.c_str());
  return true;
}

bool validate_trace(const std::string& path, trace::TraceReader& reader) {
  uint64_t events = 0;
  if (reader.read_header()) {
    while (reader.next() != nullptr) {
      ++events;
    }
  }
  if (const auto& error = reader.error()) {
    std::fputs(diag::render(*error).c_str(), stderr);
    return false;
  }
  std::printf("%s: ok (%llu events)\n", path.c_str(), static_cast<unsigned long long>(events));
  return true;
}

bool validate_file(const std::string& path) {
  // A pipe (`<(cat trace.jsonl)`) cannot be looked at and then read again: it is read whole,
  // within the input limit, and its text decides what it is.
  if (!io::is_regular_file(path)) {
    const io::InputText input = io::read_input_file(path);
    if (!input.text) {
      std::fputs(diag::render(model::read_error(path, input, "cannot read file")).c_str(), stderr);
      return false;
    }
    if (is_trace_text(*input.text)) {
      std::istringstream in(*input.text);
      trace::TraceReader reader(in, path);
      return validate_trace(path, reader);
    }
    return validate_scenario(path, model::parse_scenario_file_text(path, *input.text));
  }
  if (is_trace_file(path)) {
    io::InputStream in(path);
    if (!in.error().empty()) {
      std::fprintf(stderr, "%s: error: cannot read file: %s\n", path.c_str(), in.error().c_str());
      return false;
    }
    trace::TraceReader reader(in, path);
    return validate_trace(path, reader);
  }
  return validate_scenario(path, model::load_scenario_file(path));
}

}  // namespace

void setup_validate(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<ValidateOptions>();
  sub.add_option("files", options->files, "scenario (.yaml, .yml, .json) or trace (.jsonl) files")
      ->required();
  sub.callback([&action, options] {
    action = [options] {
      bool all_ok = true;
      // Every file is checked even after a bad one, so one run reports everything.
      for (const std::string& file : options->files) {
        const bool ok = validate_file(file);
        all_ok = all_ok && ok;
      }
      return all_ok ? kExitOk : kExitBadInput;
    };
  });
}

}  // namespace zfetch::tools
