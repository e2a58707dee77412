#include "jouleprof/measure/process.hpp"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

extern char** environ;

namespace jouleprof {
namespace {

std::atomic<pid_t> g_child{-1};
std::atomic<int> g_interrupt{0};

void on_signal(int sig, siginfo_t* info, void* /*ctx*/) {
  if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
    int expected = 0;
    g_interrupt.compare_exchange_strong(expected, sig);
  }
  const pid_t child = g_child.load();
  // A terminal's Ctrl-C already reaches the child (same process group); forward only what
  // was sent to jouleprof alone.
  const bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  if (child > 0 && !(sig == SIGINT && from_terminal) && !(sig == SIGQUIT && from_terminal)) {
    kill(child, sig);
  }
}

}  // namespace

void install_signal_forwarding() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaction(s, &sa, nullptr);
}

int interrupting_signal() { return g_interrupt.load(); }
void reset_interrupt() { g_interrupt.store(0); }

Result<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& extra_env) {
  if (argv.empty()) return make_error(Errc::invalid_argument, "no command given");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) env_store.emplace_back(*e);
  for (const auto& kv : extra_env) env_store.push_back(kv);
  std::vector<char*> env;
  for (auto& s : env_store) env.push_back(s.data());
  env.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with default dispositions for the signals jouleprof handles.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), env.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    if (rc == ENOENT) return make_error(Errc::exec, "command not found: " + argv[0]);
    if (rc == EACCES) return make_error(Errc::exec, "permission denied: " + argv[0]);
    return make_error(Errc::exec, "cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  ChildProcess c;
  c.pid_ = pid;
  g_child.store(pid);
  return c;
}

ChildStatus ChildProcess::wait() {
  ChildStatus st;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      st.exit_code = 127;
      g_child.store(-1);
      return st;
    }
  }
  g_child.store(-1);
  if (WIFEXITED(status)) {
    st.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    st.signal = WTERMSIG(status);
    st.exit_code = 128 + st.signal;
  }
  return st;
}

}  // namespace jouleprof
