// zfetch explain [FILE|-]: explain DeepSpeed ZeRO-3 fetch errors and warnings as pasted.
#include <cstdio>
#include <memory>
#include <string>

#include "io/input_file.h"
#include "tools/commands.h"
#include "tools/ds_message_explain.h"
#include "tools/ds_messages.h"

namespace zfetch::tools {
namespace {

struct ExplainOptions {
  std::string input = "-";
};

int explain(const ExplainOptions& options) {
  const bool from_stdin = options.input == "-";
  const std::string shown = from_stdin ? "<stdin>" : options.input;
  // Read as every input file is (a directory is an error, a FIFO without a writer is empty), up
  // to the same limit: a log of a long run fits, /dev/zero does not.
  io::InputStream in(from_stdin ? "/dev/stdin" : options.input);
  if (!in.error().empty()) {
    std::fprintf(stderr, "%s: error: cannot read file: %s\n", shown.c_str(), in.error().c_str());
    return kExitBadInput;
  }
  std::string text;
  char buffer[1 << 16];
  while (in.stream().read(buffer, sizeof buffer) || in.stream().gcount() > 0) {
    const auto got = static_cast<size_t>(in.stream().gcount());
    if (text.size() + got > io::kMaxInputFileBytes) {
      std::fprintf(stderr,
                   "%s: error: cannot read file: is larger than the %s limit for input "
                   "files\n",
                   shown.c_str(), io::describe_limit(io::kMaxInputFileBytes).c_str());
      return kExitBadInput;
    }
    text.append(buffer, got);
  }
  if (in.stream().bad()) {
    std::fprintf(stderr, "%s: error: cannot read file: a read failed\n", shown.c_str());
    return kExitBadInput;
  }
  std::vector<DsMessage> messages = find_ds_messages(text);
  if (messages.size() > kMaxDsMessages) {
    std::fprintf(stderr,
                 "%s:%u: note: explaining the first %zu messages; the rest, from this line on, "
                 "are left out\n",
                 shown.c_str(), messages[kMaxDsMessages].line, kMaxDsMessages);
    messages.resize(kMaxDsMessages);
  }
  if (messages.empty()) {
    std::fprintf(stderr,
                 "%s:1:1: error: no DeepSpeed ZeRO-3 fetch message found (a tracing error, "
                 "'Invalidate trace cache', a parameter status, in-flight registry, "
                 "GatheredParameters, gradient or checkpoint error)\n",
                 shown.c_str());
    return kExitBadInput;
  }
  std::fputs(explain_ds_messages(messages).c_str(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitBadInput;
}

}  // namespace

void setup_explain(CLI::App& sub, std::function<int()>& action) {
  auto options = std::make_shared<ExplainOptions>();
  sub.add_option("input", options->input,
                 "a DeepSpeed error, warning or log as pasted (a file, or - for stdin)")
      ->capture_default_str();
  sub.callback([&action, options] { action = [options] { return explain(*options); }; });
}

}  // namespace zfetch::tools
