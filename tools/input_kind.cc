// is_trace_file (see input_kind.h).
#include "tools/input_kind.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/text_bytes.h"
#include "io/input_file.h"

namespace zfetch::tools {

namespace {

// A trace header is one short line; more than this is not one.
constexpr size_t kMaxHeaderBytes = 4096;

bool named_as_trace(const std::string& path) {
  return std::string_view(path).ends_with(".jsonl");
}

}  // namespace

bool is_trace_file(const std::string& path) {
  if (!io::is_regular_file(path)) {
    return named_as_trace(path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return named_as_trace(path);
  }
  std::string first(kMaxHeaderBytes, '\0');
  in.read(first.data(), static_cast<std::streamsize>(first.size()));
  first.resize(static_cast<size_t>(in.gcount()));
  return is_trace_text(first) || named_as_trace(path);
}

bool is_trace_text(std::string_view text) {
  text = base::without_byte_order_mark(text);
  const std::string_view first = text.substr(0, std::min(text.size(), kMaxHeaderBytes));
  const size_t newline = first.find('\n');
  if (newline == std::string_view::npos && first.size() == kMaxHeaderBytes) {
    return false;
  }
  const nlohmann::json header =
      nlohmann::json::parse(first.substr(0, newline), nullptr, /*allow_exceptions=*/false);
  if (header.is_object()) {
    const auto format = header.find("format");
    return format != header.end() && format->is_string() && *format == "zfetch-trace";
  }
  return false;
}

}  // namespace zfetch::tools
