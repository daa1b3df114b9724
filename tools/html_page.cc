// The shared frame of zfetch's HTML pages (see html_page.h).
#include "tools/html_page.h"

#include <iterator>

namespace zfetch::tools {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out.push_back(c);
    }
  }
  return out;
}

void html_page_begin(std::string_view title, fmt::memory_buffer& out) {
  fmt::format_to(std::back_inserter(out), R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{0}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1320px; }}
h1 {{ font-size: 1.4em; }} h2 {{ font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }}
.pass {{ color: #2a7d2a; font-weight: bold; }} .failed {{ color: #c62828; font-weight: bold; }}
pre {{ background: #f6f6f6; padding: 0.6em; white-space: pre-wrap; font-size: 0.85em; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ padding: 2px 8px; border-bottom: 1px solid #eee; text-align: left; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
td.name {{ font-family: monospace; }}
tr.failed-cell td {{ background: #fdecea; }} tr.error-cell td {{ background: #eeeeee; }}
.bar {{ height: 10px; background: #e15759; }}
.note {{ color: #666; font-size: 0.85em; }}
.legend span {{ display: inline-block; margin-right: 1em; }}
.legend i {{ display: inline-block; width: 10px; height: 10px; margin-right: 4px; }}
</style></head><body>
<h1>{0}</h1>
)",
                 html_escape(title));
}

void html_page_end(fmt::memory_buffer& out) {
  fmt::format_to(std::back_inserter(out),
                 "<p class=\"note\">Simulated by zfetch from the scenario; times are the cost "
                 "model's, not measurements. Hover marks for details.</p>\n</body></html>\n");
}

}  // namespace zfetch::tools
