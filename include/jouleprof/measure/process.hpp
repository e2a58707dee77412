// Launching the workload: fork/exec without a shell, signals forwarded, status returned.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

struct ChildStatus {
  int exit_code = 0;  ///< the child's exit code, or 128 + signal
  int signal = 0;     ///< the signal that killed it (0: exited)
};

class ChildProcess {
 public:
  /// Starts argv[0] (searched in PATH) with extra environment entries ("K=V").
  /// Errc::exec when the command does not exist or cannot be executed.
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& extra_env);
  pid_t pid() const { return pid_; }
  /// Waits for the child; signals SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/2 sent to jouleprof — and
  /// SIGINT sent with kill() rather than from the terminal — are forwarded to it meanwhile.
  ChildStatus wait();

 private:
  pid_t pid_ = -1;
};

/// Installs the forwarding handlers (once). Returns the first interrupting signal seen so far
/// (SIGINT/SIGTERM/SIGHUP), 0 if none.
void install_signal_forwarding();
int interrupting_signal();
/// Test hook: clears the recorded interrupt.
void reset_interrupt();

}  // namespace jouleprof
