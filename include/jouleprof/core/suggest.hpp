// "Did you mean …?" for unknown names (commands, options, hardware, models, tags).
#pragma once

#include <string>
#include <vector>

namespace jouleprof {

/// The names closest to `word` by edit distance (case-insensitive), at most `max`, only those
/// close enough to be a plausible typo (distance ≤ max(2, |word|/3)) or sharing its prefix.
std::vector<std::string> closest_names(const std::string& word, const std::vector<std::string>& names, std::size_t max = 3);
/// " (did you mean X?)", " (did you mean X or Y?)", or "" when nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& names);

}  // namespace jouleprof
