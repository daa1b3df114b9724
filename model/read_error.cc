// read_error (see read_error.h).
#include "model/read_error.h"

#include <fmt/format.h>

namespace zfetch::model {

Diagnostic read_error(const std::string& path, const io::InputText& input, std::string_view what) {
  Diagnostic diagnostic;
  diagnostic.file = path;
  if (input.error_line != 0) {
    diagnostic.loc = {input.error_line, input.error_col};
    diagnostic.message = input.error;
    diagnostic.source_line = input.error_source_line;
  } else {
    diagnostic.message = fmt::format("{}: {}", what, input.error);
  }
  return diagnostic;
}

}  // namespace zfetch::model
