// Loading an order file for a command, with its diagnostics printed on stderr.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trace/order_file.h"

namespace zfetch::tools {

/// The order file at `path`, or nullopt after printing why it cannot be used.
std::optional<trace::OrderFile> load_order_or_report(const std::string& path);

/// The same for the text of `path`, already read.
std::optional<trace::OrderFile> parse_order_or_report(const std::string& path,
                                                      std::string_view text);

}  // namespace zfetch::tools
