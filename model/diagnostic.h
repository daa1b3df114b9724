// The scenario loader reports problems as located diagnostics (diag/diagnostic.h); these names
// keep model/'s interface readable without a second definition.
#pragma once

#include "diag/diagnostic.h"

namespace zfetch::model {

using diag::Diagnostic;
using diag::DiagnosticList;
using diag::Note;
using diag::SourceLoc;

}  // namespace zfetch::model
