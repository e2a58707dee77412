// Where the running program is: the one reader of /proc/self/exe. Files installed beside
// jouleprof (jouleprof-burn, jouleprof-llm, the injection library, share/jouleprof) are found from it.
#pragma once

#include <filesystem>

namespace jouleprof {

/// The running executable's path; empty when it cannot be read (no /proc).
std::filesystem::path self_exe_path();

/// The folder of self_exe_path(); empty when it cannot be read.
std::filesystem::path self_exe_dir();

}  // namespace jouleprof
