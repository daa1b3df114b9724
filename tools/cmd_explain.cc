// zfetch explain [FILE|-]: explain DeepSpeed ZeRO-3 fetch errors and warnings as pasted.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "tools/commands.h"
#include "tools/ds_message_explain.h"
#include "tools/ds_messages.h"

namespace zfetch::tools {
namespace {

// A log of a long run is large; a pasted message is small. Past this, the input is not a log.
constexpr size_t kMaxInputBytes = size_t{256} << 20;

struct ExplainOptions {
  std::string input = "-";
};

int explain(const ExplainOptions& options) {
  const bool from_stdin = options.input == "-";
  const std::string shown = from_stdin ? "<stdin>" : options.input;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(
      from_stdin ? nullptr : std::fopen(options.input.c_str(), "rb"), &std::fclose);
  std::FILE* in = from_stdin ? stdin : file.get();
  if (in == nullptr) {
    std::fprintf(stderr, "%s: error: cannot read file: %s\n", shown.c_str(), std::strerror(errno));
    return kExitBadInput;
  }
  std::string text;
  char buffer[1 << 16];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, in)) > 0) {
    if (text.size() + got > kMaxInputBytes) {
      std::fprintf(stderr, "%s: error: input larger than %zu MiB\n", shown.c_str(),
                   kMaxInputBytes >> 20);
      return kExitBadInput;
    }
    text.append(buffer, got);
  }
  if (std::ferror(in) != 0) {
    std::fprintf(stderr, "%s: error: cannot read file: %s\n", shown.c_str(), std::strerror(errno));
    return kExitBadInput;
  }
  const std::vector<DsMessage> messages = find_ds_messages(text);
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
