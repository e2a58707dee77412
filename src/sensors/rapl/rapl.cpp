#include "jouleprof/sensors/rapl.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "jouleprof/core/integrate.hpp"

namespace jouleprof {
namespace fs = std::filesystem;
namespace {

bool read_u64(const fs::path& p, uint64_t& out) {
  std::ifstream in(p);
  return static_cast<bool>(in >> out);
}

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

Result<Rapl> Rapl::open(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return make_error(Errc::unavailable, "no powercap/RAPL at " + root + " (not exposed on this machine)");
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("intel-rapl:", 0) == 0) dirs.push_back(e.path());
  }
  // Sub-domains (intel-rapl:0:1) live inside their package directory too.
  for (std::size_t i = 0, n = dirs.size(); i < n; ++i) {
    for (const auto& e : fs::directory_iterator(dirs[i], ec)) {
      const std::string s = e.path().filename().string();
      if (s.rfind("intel-rapl:", 0) == 0 &&
          std::find(dirs.begin(), dirs.end(), e.path()) == dirs.end()) {
        bool dup = false;
        for (const auto& d : dirs) dup |= d.filename() == e.path().filename();
        if (!dup) dirs.push_back(e.path());
      }
    }
  }
  std::sort(dirs.begin(), dirs.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  Rapl r;
  std::string denied;
  for (const auto& d : dirs) {
    std::string name = read_line(d / "name");
    // Package and DRAM are what we report; core/uncore are inside the package figure.
    if (name.rfind("package", 0) != 0 && name != "dram" && name != "psys") continue;
    RaplDomain dom;
    dom.path = d.string();
    if (name == "dram" || name == "psys") name += "-" + d.filename().string().substr(11);
    dom.name = name;
    if (!read_u64(d / "max_energy_range_uj", dom.max_energy_range_uj)) dom.max_energy_range_uj = 0;
    if (!read_u64(d / "energy_uj", dom.last_raw_uj)) {
      denied = (d / "energy_uj").string();
      continue;
    }
    r.domains_.push_back(dom);
  }
  if (r.domains_.empty()) {
    return make_error(Errc::unavailable, denied.empty()
                                             ? "no RAPL package/DRAM domain under " + root
                                             : "cannot read " + denied + " (needs root since Linux 5.10)");
  }
  return r;
}

Result<std::vector<double>> Rapl::read() {
  std::vector<double> out;
  out.reserve(domains_.size());
  for (auto& d : domains_) {
    uint64_t raw = 0;
    if (!read_u64(fs::path(d.path) / "energy_uj", raw)) {
      return make_error(Errc::io, "cannot read " + d.path + "/energy_uj");
    }
    // max_energy_range_uj is the largest value; the counter wraps to 0 after it.
    const auto delta = counter_delta(d.last_raw_uj, raw, d.max_energy_range_uj ? d.max_energy_range_uj + 1 : 0);
    if (delta) d.accumulated_j += static_cast<double>(*delta) * 1e-6;
    d.last_raw_uj = raw;
    out.push_back(d.accumulated_j);
  }
  return out;
}

}  // namespace jouleprof
