// The diagnostic for an input file that io::read_input_file could not read, shared by every
// reader of a whole file (scenario, ds_config, calibration, order file).
#pragma once

#include <string>
#include <string_view>

#include "io/input_file.h"
#include "model/diagnostic.h"

namespace zfetch::model {

/// "PATH: error: WHAT: why" for a file that could not be read ("cannot read file: is a
/// directory"), or, for a byte no text holds, the error at its line and column with the line
/// quoted ("PATH:3:7: error: a NUL byte ...").
Diagnostic read_error(const std::string& path, const io::InputText& input, std::string_view what);

}  // namespace zfetch::model
