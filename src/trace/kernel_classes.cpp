#include "jouleprof/trace/kernel_classes.hpp"
#include "jouleprof/core/self_exe.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef JOULEPROF_SOURCE_DATA_DIR
#define JOULEPROF_SOURCE_DATA_DIR ""
#endif

namespace jouleprof {

Result<KernelClassifier> KernelClassifier::parse(const std::string& text, const std::string& origin) {
  KernelClassifier k;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 >= line.size()) {
      return make_error(Errc::parse, origin + ":" + std::to_string(n) + ": expected CLASS<TAB>REGEX");
    }
    try {
      k.rules_.push_back({line.substr(0, tab), std::regex(line.substr(tab + 1), std::regex::ECMAScript | std::regex::icase |
                                                                                 std::regex::optimize)});
    } catch (const std::regex_error& e) {
      return make_error(Errc::parse, origin + ":" + std::to_string(n) + ": bad regular expression: " + e.what());
    }
  }
  return k;
}

Result<KernelClassifier> KernelClassifier::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(Errc::invalid_argument, "cannot read kernel class rules " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

void KernelClassifier::prepend(const KernelClassifier& first) {
  rules_.insert(rules_.begin(), first.rules_.begin(), first.rules_.end());
}

const std::string& KernelClassifier::classify(const std::string& name) const {
  static const std::string other = "other";
  for (const Rule& r : rules_) {
    if (std::regex_search(name, r.re)) return r.kclass;
  }
  return other;
}

std::string default_kernel_classes_path() {
  namespace fs = std::filesystem;
  const std::string file = "kernel-classes.tsv";
  if (const char* d = std::getenv("JOULEPROF_DATA_DIR"); d != nullptr && d[0] != '\0') return (fs::path(d) / file).string();
  std::error_code ec;
  if (const fs::path dir = self_exe_dir(); !dir.empty()) {
    for (const fs::path& rel : {fs::path("../share/jouleprof"), fs::path("../data"), fs::path("../../data"), fs::path("data")}) {
      const fs::path p = dir / rel / file;
      if (fs::exists(p, ec)) return p.string();
    }
  }
  return (fs::path(JOULEPROF_SOURCE_DATA_DIR) / file).string();
}

}  // namespace jouleprof
