// How library errors become exit codes (documented in README "Exit codes").
#pragma once

#include "jouleprof/core/error.hpp"

namespace jouleprof::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;   ///< a bug or an OS failure
inline constexpr int kExitUsage = 2;      ///< bad input: flags, files, names, ids
inline constexpr int kExitNoDevice = 3;   ///< GPU or driver unavailable: no driver, GPU not present or lost
inline constexpr int kExitExec = 127;     ///< the workload command cannot be executed

int exit_code_for(const Error& e);
/// Prints "jouleprof: error: MESSAGE" (one line) and returns the exit code.
int report(const Error& e);

}  // namespace jouleprof::cli
