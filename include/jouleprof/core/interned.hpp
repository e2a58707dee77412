// A string stored once per distinct value for the life of the process. A traced program repeats
// a few thousand kernel names and NVTX paths millions of times; each activity holding its own
// copies took ~1.5 GB per million kernels. An Interned is one pointer, converts to the
// std::string it points to and compares like it.
#pragma once

#include <compare>
#include <cstddef>
#include <string>
#include <string_view>

namespace jouleprof {

class Interned {
 public:
  Interned() = default;
  Interned(std::string_view s) : s_(intern(s)) {}  // NOLINT: implicit, a string where a string goes
  Interned(const std::string& s) : s_(intern(s)) {}  // NOLINT
  Interned(const char* s) : s_(intern(s)) {}  // NOLINT

  const std::string& str() const { return *s_; }
  operator const std::string&() const { return *s_; }  // NOLINT
  operator std::string_view() const { return *s_; }     // NOLINT
  bool empty() const { return s_->empty(); }
  std::size_t size() const { return s_->size(); }
  const char* c_str() const { return s_->c_str(); }

  friend bool operator==(const Interned& a, const Interned& b) { return a.s_ == b.s_; }  // one copy per value
  friend bool operator==(const Interned& a, std::string_view b) { return std::string_view(*a.s_) == b; }
  friend bool operator==(const Interned& a, const char* b) { return std::string_view(*a.s_) == b; }
  friend bool operator==(const Interned& a, const std::string& b) { return *a.s_ == b; }
  friend std::strong_ordering operator<=>(const Interned& a, const Interned& b) { return *a.s_ <=> *b.s_; }

 private:
  /// The pool's copy of s (thread-safe; copies are never freed).
  static const std::string* intern(std::string_view s);
  static const std::string* empty_string();
  const std::string* s_ = empty_string();
};

inline std::string operator+(const Interned& a, std::string_view b) { return a.str() + std::string(b); }
inline std::string operator+(std::string_view a, const Interned& b) { return std::string(a) + b.str(); }

}  // namespace jouleprof

template <>
struct std::hash<jouleprof::Interned> {
  std::size_t operator()(const jouleprof::Interned& s) const noexcept { return std::hash<std::string>()(s.str()); }
};
