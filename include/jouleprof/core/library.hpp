// Loading a vendor library at run time (CUPTI, the CUDA driver, DCGM): the name the user gave,
// else the one in an environment variable, else the usual sonames; the first that opens.
// Header-only: the CUPTI injection library, which links nothing else of jouleprof's, uses it too.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace jouleprof {

/// The names to try: `given` alone, else $`env` alone (when set and not empty), else `defaults`.
inline std::vector<std::string> library_candidates(const std::string& given, const char* env,
                                                   std::vector<std::string> defaults) {
  if (!given.empty()) return {given};
  if (const char* e = std::getenv(env); e != nullptr && e[0] != '\0') return {e};
  return defaults;
}

struct OpenedLibrary {
  void* handle = nullptr;  ///< nullptr when no candidate opened
  std::string name;        ///< the candidate that opened
  std::string tried;       ///< the candidates that did not open, ", "-separated
  std::string why;         ///< the loader's reason for each of them, "; "-separated
};

/// dlopen(name, flags) of each candidate in turn until one opens.
inline OpenedLibrary open_first_library(const std::vector<std::string>& names, int flags) {
  OpenedLibrary lib;
  for (const std::string& n : names) {
    if ((lib.handle = dlopen(n.c_str(), flags)) != nullptr) {
      lib.name = n;
      return lib;
    }
    const char* e = dlerror();
    lib.tried += (lib.tried.empty() ? "" : ", ") + n;
    lib.why += (lib.why.empty() ? "" : "; ") + std::string(e != nullptr ? e : n.c_str());
  }
  return lib;
}

}  // namespace jouleprof
