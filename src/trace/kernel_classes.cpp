#include "jouleprof/trace/kernel_classes.hpp"
#include "jouleprof/core/self_exe.hpp"

#include <re2/re2.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "jouleprof/core/files.hpp"

#ifndef JOULEPROF_SOURCE_DATA_DIR
#define JOULEPROF_SOURCE_DATA_DIR ""
#endif

namespace jouleprof {
namespace {
constexpr std::size_t kMaxRulesBytes = std::size_t{16} << 20;  // a rules file is a few KB
}  // namespace

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
    RE2::Options opts;
    opts.set_case_sensitive(false);
    opts.set_log_errors(false);
    auto re = std::make_shared<const RE2>(line.substr(tab + 1), opts);
    if (!re->ok()) {
      return make_error(Errc::parse, origin + ":" + std::to_string(n) + ": bad regular expression: " + re->error());
    }
    k.rules_.push_back({line.substr(0, tab), std::move(re)});
  }
  return k;
}

Result<KernelClassifier> KernelClassifier::load(const std::string& path) {
  auto text = read_text_file(path, kMaxRulesBytes);
  if (!text) return make_error(text.error().code, "cannot read rules: " + text.error().message);
  return parse(*text, path);
}

void KernelClassifier::prepend(const KernelClassifier& first) {
  rules_.insert(rules_.begin(), first.rules_.begin(), first.rules_.end());
}

const std::string& KernelClassifier::classify(const std::string& name) const {
  static const std::string other = "other";
  for (const Rule& r : rules_) {
    if (RE2::PartialMatch(name, *r.re)) return r.kclass;
  }
  return other;
}

Result<KernelClassifier> KernelClassifier::load_default(const std::string& extra) {
  auto classes = load(default_kernel_classes_path());
  if (!classes) return classes.error();
  if (!extra.empty()) {
    auto first = load(extra);
    if (!first) return first.error();
    classes->prepend(*first);
  }
  return classes;
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
