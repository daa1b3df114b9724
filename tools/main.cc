// zfetch: the command-line driver; the only place that prints and chooses exit codes.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <functional>
#include <string_view>
#include <vector>

#include "base/spellcheck.h"
#include "tools/commands.h"
#include "tools/output_file.h"

namespace {

using zfetch::tools::Command;

// One row per subcommand that works; --help lists exactly these (ninja's kTools table).
constexpr Command kCommands[] = {
    {"run", "simulate a scenario and print its outcome", zfetch::tools::setup_run},
    {"check", "run scenarios under the policies of their expect blocks",
     zfetch::tools::setup_check},
    {"sweep", "simulate every combination of config values; print timings",
     zfetch::tools::setup_sweep},
    {"diff", "compare a recorded trace with an expected trace or order file",
     zfetch::tools::setup_diff},
    {"fuzz", "check generated scenarios against the oracles; shrink failures",
     zfetch::tools::setup_fuzz},
    {"graph", "print the module tree as Graphviz DOT", zfetch::tools::setup_graph},
    {"validate", "load scenarios or traces and report every problem",
     zfetch::tools::setup_validate},
    {"explain", "explain a DeepSpeed ZeRO-3 fetch error or warning as pasted",
     zfetch::tools::setup_explain},
};

// A first word that names no subcommand gets ninja's message, with the closest name.
bool report_unknown_subcommand(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    return false;
  }
  const std::string_view word = argv[1];
  std::vector<std::string_view> names;
  for (const Command& command : kCommands) {
    if (word == command.name) {
      return false;
    }
    names.push_back(command.name);
  }
  std::fprintf(stderr, "command line: error: unknown subcommand '%s'", argv[1]);
  if (const auto guess = zfetch::base::closest_word(word, names)) {
    std::fprintf(stderr, ", did you mean '%s'?", guess->c_str());
  }
  std::fprintf(stderr, "\n");
  return true;
}

// --help and --version print to stdout: a write that failed is not a success either.
int finish_help(int code) {
  return zfetch::tools::finish_stdout() ? code : zfetch::tools::kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  if (report_unknown_subcommand(argc, argv)) {
    return zfetch::tools::kExitBadInput;
  }
  CLI::App app{"zfetch: simulate and verify DeepSpeed ZeRO-3 parameter-fetch schedules"};
  app.set_version_flag("--version", std::string("zfetch ") + ZFETCH_VERSION);
  app.require_subcommand(1);
  // CLI11's own errors in zfetch's form, which scripts and editors parse (subcommands copy it).
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return "command line: error: " + std::string(e.what()) + "\n" +
           CLI::FailureMessage::simple(failed, e).substr(std::string(e.what()).size() + 1);
  });
  std::function<int()> action;
  for (const Command& command : kCommands) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    command.setup(*sub, action);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return finish_help(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return finish_help(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return finish_help(app.exit(e));
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return zfetch::tools::kExitBadInput;  // CLI11's own codes (100+) map to 2
  }
  try {
    const int code = action ? action() : zfetch::tools::kExitBadInput;
    // A result that could not be printed is not a result: exit 2 rather than report success.
    return zfetch::tools::finish_stdout() ? code : zfetch::tools::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zfetch: internal error: %s\n", e.what());
    return zfetch::tools::kExitInternalError;
  }
}
