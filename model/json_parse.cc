// parse_json (see json_parse.h): nlohmann's DOM builder, with the SAX error callback kept so
// that the position of every error survives (the DOM parser throws a number overflow as an
// out_of_range exception that carries no position).
#include "model/json_parse.h"

namespace zfetch::model {

namespace {

using Json = nlohmann::json;

// Builds the DOM as nlohmann::json::parse does; an error records its position and stops.
class LocatingBuilder : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  explicit LocatingBuilder(Json& document)
      : json_sax_dom_parser(document, /*allow_exceptions=*/false) {}

  // Hides the base's: sax_parse calls it through this type. `position` is the count of bytes
  // read, which ends after the offending token.
  template <class Exception>
  bool parse_error(size_t position, const std::string& last_token, const Exception& ex) {
    JsonParseError error;
    if constexpr (std::is_same_v<Exception, nlohmann::detail::out_of_range>) {
      // A number beyond double range: point at its first digit.
      error.offset = position >= last_token.size() ? position - last_token.size() : 0;
      error.message = "number out of range: " + last_token;
    } else {
      error.offset = position > 0 ? position - 1 : 0;
      // what() is "[json.exception.parse_error.101] parse error at line L, column C: detail";
      // the position is ours to give.
      std::string message = ex.what();
      const size_t column = message.find("column ");
      const size_t colon = column == std::string::npos ? column : message.find(": ", column);
      error.message = colon == std::string::npos ? message : message.substr(colon + 2);
    }
    error_ = std::move(error);
    return json_sax_dom_parser::parse_error(position, last_token, ex);
  }

  std::optional<JsonParseError> take_error() { return std::move(error_); }

 private:
  std::optional<JsonParseError> error_;
};

}  // namespace

JsonParseResult parse_json(std::string_view text) {
  JsonParseResult result;
  LocatingBuilder builder(result.value);
  const bool ok = Json::sax_parse(text, &builder);
  result.error = builder.take_error();
  if (!ok && !result.error) {
    result.error = JsonParseError{0, "invalid JSON"};
  }
  if (result.error) {
    result.value = nullptr;
  }
  return result;
}

}  // namespace zfetch::model
