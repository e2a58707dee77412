// Kernel classes (GEMM, attention, normalization, elementwise, reduction, copy, communication,
// other) from ordered name rules in a data file (data/kernel-classes.tsv; users add their own).
// The rules are RE2 expressions (case-insensitive, searched anywhere in the name): matching takes
// time linear in the name, whatever its length, and uses no stack recursion.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace re2 {
class RE2;
}

namespace jouleprof {

class KernelClassifier {
 public:
  /// Parses rules ("CLASS<TAB>REGEX" lines, '#' comments). `origin` names the file in errors.
  static Result<KernelClassifier> parse(const std::string& text, const std::string& origin);
  static Result<KernelClassifier> load(const std::string& path);
  /// The default rules (default_kernel_classes_path()) with `extra`'s rules tried first (a file;
  /// "": none), as every command's `--classes FILE` gives them.
  static Result<KernelClassifier> load_default(const std::string& extra = "");
  /// The rules of `first` are tried before this one's.
  void prepend(const KernelClassifier& first);
  /// The class of a demangled kernel or copy name; "other" when no rule matches.
  const std::string& classify(const std::string& name) const;
  std::size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    std::string kclass;
    std::shared_ptr<const re2::RE2> re;  ///< RE2: linear time in the name's length, no recursion
  };
  std::vector<Rule> rules_;
};

/// The built-in rules file: $JOULEPROF_DATA_DIR/kernel-classes.tsv, else the data/ folder
/// beside the executable (../share/jouleprof, ../../data), else the source tree's data/.
std::string default_kernel_classes_path();

}  // namespace jouleprof
