#include "jouleprof/core/interned.hpp"

#include <mutex>
#include <unordered_set>

namespace jouleprof {
namespace {

struct Pool {
  std::mutex mu;
  std::unordered_set<std::string> strings;  // node-based: the copies never move
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: Interned values may outlive static destructors
  return *p;
}

}  // namespace

const std::string* Interned::intern(std::string_view s) {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mu);
  return &*p.strings.emplace(s).first;
}

const std::string* Interned::empty_string() {
  static const std::string* e = intern({});
  return e;
}

}  // namespace jouleprof
