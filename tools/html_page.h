// The frame every HTML page of zfetch shares (the run report, the sweep report): escaping, the
// head with the one inline style sheet, the closing note. Pages are self-contained: no script,
// nothing fetched.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace zfetch::tools {

/// HTML text and attribute values: the five characters with a meaning in HTML escaped.
std::string html_escape(std::string_view text);

/// Opens the page: doctype, head (title, style sheet), body and its <h1>.
void html_page_begin(std::string_view title, fmt::memory_buffer& out);

/// Closes the page after a note that the numbers are the cost model's.
void html_page_end(fmt::memory_buffer& out);

}  // namespace zfetch::tools
