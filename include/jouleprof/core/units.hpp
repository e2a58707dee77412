// Words for units (docs/cli.md, "Units and words"): "J/token" in text, `_per_token_j` in keys.
#pragma once

#include <string>

namespace jouleprof {

/// The singular of a count's key, for "J/token" and "gpu_energy_per_token_j": "tokens" →
/// "token", "images" → "image", "calls" → "call"; a key not ending in one 's' is kept.
inline std::string per_unit_name(const std::string& count_key) {
  const std::size_t n = count_key.size();
  if (n > 2 && count_key[n - 1] == 's' && count_key[n - 2] != 's') return count_key.substr(0, n - 1);
  return count_key;
}

/// A statistics or comparison key with its count made singular, so runs stored before the
/// rename ("gpu_energy_per_tokens_j") read as now ("gpu_energy_per_token_j").
inline std::string normalize_per_count_key(const std::string& key) {
  const std::string mark = "gpu_energy_per_";
  const auto p = key.find(mark);
  if (p == std::string::npos || key.size() < p + mark.size() + 2 || key.compare(key.size() - 2, 2, "_j") != 0) return key;
  const std::string count = key.substr(p + mark.size(), key.size() - 2 - (p + mark.size()));
  return key.substr(0, p + mark.size()) + per_unit_name(count) + "_j";
}

}  // namespace jouleprof
