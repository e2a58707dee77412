// The sweeps a store holds, and the id a user types for one (`sweep --list`, `--report last`,
// unique prefixes): one word, "sweep id", everywhere (docs/sweep.md "Finding a sweep").
#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "jouleprof/control/sweep.hpp"
#include "jouleprof/core/text.hpp"

namespace jouleprof::control {

Result<std::vector<SweepListing>> list_sweeps(Store& store) {
  RunFilter f;
  f.tags.push_back({"sweep", "*"});
  auto runs = store.list(f);
  if (!runs) return runs.error();
  std::map<std::string, SweepListing> by_id;
  std::map<std::string, std::vector<std::string>> points;
  for (const RunSummary& r : *runs) {
    // A sweep's runs carry their point; `bench llm` tags its configurations with a sweep of its
    // own (its start time), which is no clock sweep and has no report here.
    if (!r.tags.count("point")) continue;
    const std::string& id = r.tags.at("sweep");
    SweepListing& s = by_id[id];
    s.sweep_id = id;
    ++s.runs;
    if (r.status == "complete") ++s.complete;
    if (s.last_run_id < r.id) {
      s.last_run_id = r.id;
      s.last_recorded_utc = r.recorded_at_utc;
      s.command.clear();
      for (const auto& a : r.command) s.command += (s.command.empty() ? "" : " ") + a;
      s.simulated = r.simulated;
    }
    if (s.first_recorded_utc.empty() || r.recorded_at_utc < s.first_recorded_utc) s.first_recorded_utc = r.recorded_at_utc;
    if (auto p = r.tags.find("point"); p != r.tags.end()) points[id].push_back(p->second);
  }
  std::vector<SweepListing> out;
  for (auto& [id, s] : by_id) {
    auto& p = points[id];
    std::sort(p.begin(), p.end());
    s.points = static_cast<int>(std::unique(p.begin(), p.end()) - p.begin());
    out.push_back(s);
  }
  // Newest first: `last` is the first row.
  std::sort(out.begin(), out.end(), [](const SweepListing& a, const SweepListing& b) { return a.last_run_id > b.last_run_id; });
  return out;
}

Result<std::string> resolve_sweep_id(Store& store, const std::string& text) {
  if (text.empty()) return make_error(Errc::invalid_argument, "--report needs a sweep id (see `jouleprof sweep --list`)");
  auto all = list_sweeps(store);
  if (!all) return all.error();
  auto known = [&] {
    std::string k;
    for (std::size_t i = 0; i < all->size() && i < 8; ++i) k += (k.empty() ? "" : ", ") + (*all)[i].sweep_id;
    if (all->size() > 8) k += fmt::format(" and {} more (jouleprof sweep --list)", all->size() - 8);
    return k.empty() ? std::string("none: this store holds no sweep") : k;
  };
  if (all->empty()) {
    return make_error(Errc::not_found, "no sweep '" + for_terminal(text) + "' in this store: it holds no sweep");
  }
  if (text == "last") return all->front().sweep_id;
  std::vector<std::string> match;
  for (const auto& s : *all) {
    if (s.sweep_id == text) return s.sweep_id;
    if (s.sweep_id.rfind(text, 0) == 0) match.push_back(s.sweep_id);
  }
  if (match.size() == 1) return match.front();
  if (match.size() > 1) {
    std::string m;
    for (const auto& id : match) m += (m.empty() ? "" : ", ") + id;
    return make_error(Errc::invalid_argument, "sweep id '" + for_terminal(text) + "' is ambiguous: " + m);
  }
  return make_error(Errc::not_found, "no sweep '" + for_terminal(text) + "' in this store; known sweep ids, newest first: " + known());
}

}  // namespace jouleprof::control
