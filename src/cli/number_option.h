// cli/number_option.h — the one check every numeric option uses, so a bad value
// is refused the same clear way everywhere (exit 2, as any usage error):
//   orch: --jobs: must be a whole number of at least 1, not '0'
//   orch: --attempt: must be a whole number of at least 1; 'abc' is not a number
//   orch: --jobs: must be a whole number of at most 2147483647, not '99999999999'
//   orch: --interval: must be a finite number greater than 0, not '0'
// CLI11 puts the option's name in front. Attach them with Option::transform():
// a value that passes is rewritten in plain decimal, so CLI11's own conversion
// (which reads "010" as octal) takes exactly the number that was checked, and
// never fails.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>

namespace orch::cli {

// A whole number from `least` to `most`; `most` is the largest value of the
// option's type (int unless said otherwise).
CLI::Validator whole_number(std::int64_t least, std::int64_t most = std::numeric_limits<int>::max());

// A finite number, decimals allowed: at least `least` (seconds to wait, a cost).
CLI::Validator number_at_least(double least);

// A finite number, decimals allowed, greater than `bound` (seconds between redraws).
CLI::Validator number_above(double bound);

// Any text but the empty one: `--models ""` (an unset variable) is refused, never
// read as "not given". `wanted` says what to give instead:
//   orch: --models: is empty: give the models file
CLI::Validator not_empty(std::string wanted);

// What not_empty asks for in place of an empty RUN_ID (resume, logs, cancel, approve).
inline constexpr const char* kRunIdWanted = "a run id (`orch runs` lists them)";

}  // namespace orch::cli
