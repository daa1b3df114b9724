// parse_json (see json_parse.h): nlohmann's DOM builder, with the SAX error callback kept so
// that the position of every error survives (the DOM parser throws a number overflow as an
// out_of_range exception that carries no position).
#include "model/json_parse.h"

#include <vector>

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

  // Keys are tracked per open object (nlohmann keeps the last of a key given twice; a reader of
  // the file would not know which one counts): a key given twice stops the parse.
  bool start_object(size_t elements) {
    open_keys_.push_back(open_.size());
    return json_sax_dom_parser::start_object(elements);
  }
  bool end_object() {
    open_.resize(open_keys_.back());
    open_keys_.pop_back();
    return json_sax_dom_parser::end_object();
  }
  bool key(std::string& name) {
    ++keys_;
    for (size_t i = open_keys_.back(); i < open_.size(); ++i) {
      if (open_[i] == name) {
        duplicate_ = name;
        duplicate_index_ = keys_;
        return false;
      }
    }
    open_.push_back(name);
    return json_sax_dom_parser::key(name);
  }

  std::optional<JsonParseError> take_error() { return std::move(error_); }
  /// The key given twice, and which key of the document (1-based, in text order) repeated it.
  [[nodiscard]] const std::optional<std::string>& duplicate() const { return duplicate_; }
  [[nodiscard]] size_t duplicate_index() const { return duplicate_index_; }

 private:
  std::optional<JsonParseError> error_;
  std::vector<std::string> open_;  // the keys of every open object, outermost first
  std::vector<size_t> open_keys_;  // where each open object's keys start in open_
  size_t keys_ = 0;
  std::optional<std::string> duplicate_;
  size_t duplicate_index_ = 0;
};

// The byte offset of the `index`th key (1-based) of a JSON text that parsed up to it: a string
// followed by ':' outside any other string.
size_t key_offset(std::string_view text, size_t index) {
  size_t keys = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') {
      continue;
    }
    const size_t open = i;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      i += text[i] == '\\' ? size_t{1} : size_t{0};
    }
    size_t after = i + 1;
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t' ||
                                   text[after] == '\n' || text[after] == '\r')) {
      ++after;
    }
    if (after < text.size() && text[after] == ':' && ++keys == index) {
      return open;
    }
  }
  return 0;
}

}  // namespace

JsonParseResult parse_json(std::string_view text) {
  JsonParseResult result;
  LocatingBuilder builder(result.value);
  const bool ok = Json::sax_parse(text, &builder);
  result.error = builder.take_error();
  if (builder.duplicate()) {
    result.error = JsonParseError{key_offset(text, builder.duplicate_index()),
                                  "duplicate key '" + *builder.duplicate() + "'"};
  }
  if (!ok && !result.error) {
    result.error = JsonParseError{0, "invalid JSON"};
  }
  if (result.error) {
    result.value = nullptr;
  }
  return result;
}

}  // namespace zfetch::model
