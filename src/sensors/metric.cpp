#include <cstdint>
#include <string>
#include <vector>

#include "jouleprof/sensors/gpu_sensor.hpp"

namespace jouleprof {

std::vector<std::string> split_gpu_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      const auto b = cur.find_first_not_of(" \t");
      const auto e = cur.find_last_not_of(" \t");
      if (b != std::string::npos) out.push_back(cur.substr(b, e - b + 1));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

}  // namespace jouleprof
