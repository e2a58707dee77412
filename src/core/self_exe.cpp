#include "jouleprof/core/self_exe.hpp"

#include <system_error>

namespace jouleprof {

std::filesystem::path self_exe_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : p;
}

std::filesystem::path self_exe_dir() {
  const auto p = self_exe_path();
  return p.empty() ? p : p.parent_path();
}

}  // namespace jouleprof
