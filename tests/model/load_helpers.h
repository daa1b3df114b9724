// Loading scenario text in tests: every diagnostic rendered as the CLI prints it, or the
// scenario when there is none.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "diag/render.h"
#include "model/load.h"

namespace zfetch::model::testing {

/// Every diagnostic of parsing `text` as "input", rendered as the CLI prints it.
inline std::string errors_of(const std::string& text) {
  const LoadResult result = parse_scenario_text("input", text);
  std::string out;
  for (const Diagnostic& diagnostic : result.diagnostics) {
    out += diag::render(diagnostic);
  }
  CHECK(result.scenario.has_value() == result.diagnostics.empty());
  return out;
}

/// The scenario of `text`, which must load without a diagnostic.
inline Scenario load_ok(const std::string& text) {
  LoadResult result = parse_scenario_text("input", text);
  std::string errors;
  for (const Diagnostic& diagnostic : result.diagnostics) {
    errors += diag::render(diagnostic);
  }
  INFO(errors);
  REQUIRE(result.diagnostics.empty());
  return std::move(*result.scenario);
}

/// Every warning of parsing `text` as "input" (which must load), rendered as the CLI prints it.
inline std::string warnings_of(const std::string& text) {
  const LoadResult result = parse_scenario_text("input", text);
  CHECK(result.scenario.has_value());
  std::string out;
  for (const Diagnostic& warning : result.warnings) {
    out += diag::render(warning);
  }
  return out;
}

}  // namespace zfetch::model::testing
