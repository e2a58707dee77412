// Errors as values: the library returns them, the CLI turns them into messages and exit codes.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace jouleprof {

/// Broad error classes; the CLI maps them to exit codes.
enum class Errc {
  invalid_argument,  ///< bad user input (flag, file content)
  not_found,         ///< a file, GPU or run that does not exist
  exec,              ///< the workload command cannot be executed (not found, not executable)
  unavailable,       ///< a backend that is not present here (no driver, no RAPL)
  not_present,       ///< a device id (GPU index or UUID) that names no present device
  unsupported,       ///< present, but this reading/feature is not supported
  io,                ///< the OS refused (open, read, fork ...)
  parse,             ///< malformed input file; message names the line
  vendor,            ///< a vendor library call failed; message holds call and vendor text
  lost,              ///< the device stopped answering mid-run
  internal,
};

const char* to_string(Errc c);

struct Error {
  Errc code = Errc::internal;
  std::string message;
};

/// A small expected-like type (std::expected is C++23).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

inline Error make_error(Errc c, std::string msg) { return Error{c, std::move(msg)}; }

/// The process exit code for an error (README "Exit codes"): 2 bad input, 3 no device / not
/// present / lost, 127 the workload cannot be executed, 1 anything else.
int exit_code_for(const Error& e);
/// Prints "jouleprof: error: MESSAGE" as one line on stderr and returns exit_code_for(e).
int report_error(const Error& e);

}  // namespace jouleprof
