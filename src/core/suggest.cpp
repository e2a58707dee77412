#include "jouleprof/core/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace jouleprof {
namespace {

std::string lower(const std::string& s) {
  std::string o = s;
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> closest_names(const std::string& word, const std::vector<std::string>& names, std::size_t max) {
  const std::string w = lower(word);
  const std::size_t limit = std::max<std::size_t>(2, w.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& n : names) {
    const std::string ln = lower(n);
    if (ln == w) continue;
    std::size_t d = edit_distance(w, ln);
    // A word that starts a name ("h100" for "h100-sxm") is a good guess whatever the distance.
    if (w.size() >= 2 && ln.rfind(w, 0) == 0) d = std::min<std::size_t>(d, 1);
    if (d <= limit) scored.emplace_back(d, n);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, n] : scored) {
    if (out.size() >= max) break;
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const auto c = closest_names(word, names);
  if (c.empty()) return "";
  std::string s = " (did you mean ";
  for (std::size_t i = 0; i < c.size(); ++i) s += (i == 0 ? "" : (i + 1 == c.size() ? " or " : ", ")) + c[i];
  return s + "?)";
}

}  // namespace jouleprof
