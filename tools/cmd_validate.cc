// zfetch validate FILE...: load scenarios (.yaml/.yml/.json) or traces (.jsonl) and report
// every problem, compiler-style, on stderr.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "diag/render.h"
#include "model/load.h"
#include "tools/commands.h"
#include "trace/reader.h"

namespace zfetch::tools {

namespace {

struct ValidateOptions {
  std::vector<std::string> files;
};

bool ends_with(const std::string& text, const char* suffix) {
  const size_t length = std::strlen(suffix);
  return text.size() >= length && text.compare(text.size() - length, length, suffix) == 0;
}

// True if the scenario loaded; every diagnostic goes to stderr.
bool validate_scenario(const std::string& path) {
  const model::LoadResult result = model::load_scenario_file(path);
  for (const model::Diagnostic& diagnostic : result.diagnostics) {
    std::fputs(diag::render(diagnostic).c_str(), stderr);
  }
  if (!result.scenario) {
    return false;
  }
  std::printf("%s: ok (%zu modules, %zu parameters)\n", path.c_str(),
              result.scenario->modules.size(), result.scenario->params.size());
  return true;
}

bool validate_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: error: cannot read file: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  trace::TraceReader reader(in, path);
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
        const bool ok = ends_with(file, ".jsonl") ? validate_trace(file) : validate_scenario(file);
        all_ok = all_ok && ok;
      }
      return all_ok ? kExitOk : kExitBadInput;
    };
  });
}

}  // namespace zfetch::tools
