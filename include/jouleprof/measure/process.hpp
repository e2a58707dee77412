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
  /// Starts argv[0] (searched in PATH) with extra environment entries ("K=V"), as the leader of
/// its own process group, with a parent-death signal (SIGKILL) so it never outlives jouleprof.
  /// Errc::exec when the command does not exist or cannot be executed.
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& extra_env);
  pid_t pid() const { return pid_; }
  /// Waits for the child, forwarding meanwhile the signals sent to jouleprof to the child's
  /// process group; then ends whatever the workload left running in that group.
  ChildStatus wait();

 private:
  pid_t pid_ = -1;
  bool took_terminal_ = false;  ///< the child's group was made the terminal's foreground group
};

/// Blocks SIGINT/TERM/HUP/QUIT/USR1/USR2 in the calling thread (and the threads it starts later)
/// so they are collected synchronously; call once before starting threads.
/// interrupting_signal() returns the first SIGINT/SIGTERM/SIGHUP received so far, 0 if none.
void install_signal_forwarding();
int interrupting_signal();
/// Test hook: clears the recorded interrupt.
void reset_interrupt();

}  // namespace jouleprof
