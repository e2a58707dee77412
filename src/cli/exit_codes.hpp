// How library errors become exit codes (documented in README "Exit codes").
#pragma once

#include "jouleprof/core/error.hpp"

namespace jouleprof::cli {

inline constexpr int kExitUsage = 2;      ///< bad flags or input files
inline constexpr int kExitNoDevice = 3;   ///< no driver / GPU not present
inline constexpr int kExitExec = 127;     ///< the workload command cannot be executed

int exit_code_for(const Error& e);
/// Prints "jouleprof: error: MESSAGE" (one line) and returns the exit code.
int report(const Error& e);

}  // namespace jouleprof::cli
