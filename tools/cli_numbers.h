// Number options taken exactly: CLI11 reads an integer option with strtoull/strtoll in base 0,
// so "-1" given to an unsigned option wraps to 2^64 - 1 (--max-events -1 meant no bound), a
// value past 64 bits saturates, "0x10" is hex and "017" octal.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace zfetch::tools {

/// Accepts a plain decimal integer from `min` to `max` (digits only, no leading zero); the
/// error names the range and what it got.
CLI::Validator decimal_unsigned(uint64_t min = 0, uint64_t max = UINT64_MAX);

/// Accepts a finite number greater than 0 (seconds): CLI11's PositiveNumber prints its range as
/// 0 to 1.797...e308 written out, and lets "inf" through.
const CLI::Validator& positive_seconds();

}  // namespace zfetch::tools
