// Exact number options (see cli_numbers.h).
#include "tools/cli_numbers.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace zfetch::tools {

CLI::Validator decimal_unsigned(uint64_t min, uint64_t max) {
  return {[min, max](const std::string& text) -> std::string {
            uint64_t value = 0;
            const char* end = text.data() + text.size();
            const auto [stop, error] = std::from_chars(text.data(), end, value);
            // A leading zero is refused too: CLI11 would read "017" as octal 15.
            if (text.empty() || stop != end || error != std::errc() ||
                (text.size() > 1 && text[0] == '0') || value < min || value > max) {
              return "expected a decimal integer from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", got '" + text + "'";
            }
            return "";
          },
          min == 0 && max == UINT64_MAX
              ? std::string()
              : "in [" + std::to_string(min) + " - " + std::to_string(max) + "]"};
}

const CLI::Validator& positive_seconds() {
  static const CLI::Validator check(
      [](const std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || stop != end || error != std::errc() || !std::isfinite(value) ||
            value <= 0) {
          return "expected a number of seconds greater than 0, got '" + text + "'";
        }
        return "";
      },
      "");
  return check;
}

}  // namespace zfetch::tools
