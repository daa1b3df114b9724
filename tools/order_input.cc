// load_order_or_report: read the file, validate it, print located errors.
#include "tools/order_input.h"

#include <cstdio>
#include <string>

#include "diag/render.h"
#include "io/input_file.h"
#include "model/read_error.h"

namespace zfetch::tools {

std::optional<trace::OrderFile> load_order_or_report(const std::string& path) {
  // Read as scenarios are: a directory, a device or an endless stream is an error, not a hang.
  const io::InputText input = io::read_input_file(path);
  if (!input.text) {
    std::fputs(diag::render(model::read_error(path, input, "cannot read file")).c_str(), stderr);
    return std::nullopt;
  }
  return parse_order_or_report(path, *input.text);
}

std::optional<trace::OrderFile> parse_order_or_report(const std::string& path,
                                                      std::string_view text) {
  trace::OrderParseResult parsed = trace::parse_order_file(path, text);
  std::fputs(diag::render(parsed.diagnostics).c_str(), stderr);
  return std::move(parsed.order);
}

}  // namespace zfetch::tools
