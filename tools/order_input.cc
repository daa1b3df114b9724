// load_order_or_report: read the file, validate it, print located errors.
#include "tools/order_input.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "diag/render.h"

namespace zfetch::tools {

std::optional<trace::OrderFile> load_order_or_report(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) {
    std::fprintf(stderr, "%s: error: cannot read file: %s\n", path.c_str(), std::strerror(errno));
    return std::nullopt;
  }
  trace::OrderParseResult parsed = trace::parse_order_file(path, text);
  std::fputs(diag::render(parsed.diagnostics).c_str(), stderr);
  return std::move(parsed.order);
}

}  // namespace zfetch::tools
