// Parsing JSON text so that every failure, a number beyond double range included, is a message
// with the byte offset it happened at (nlohmann-json's own parse() throws some without one).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace zfetch::model {

/// Why a JSON text could not be parsed, and at which byte (0-based) of it.
struct JsonParseError {
  size_t offset = 0;
  std::string message;  ///< e.g. "number out of range: 1e400", "syntax error ..."
};

/// The document, or the first error in it. Never throws for bad input.
struct JsonParseResult {
  nlohmann::json value;
  std::optional<JsonParseError> error;
};

JsonParseResult parse_json(std::string_view text);

}  // namespace zfetch::model
