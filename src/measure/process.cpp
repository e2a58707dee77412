#include "jouleprof/measure/process.hpp"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

extern char** environ;

namespace jouleprof {
namespace {

// Signals are blocked in every jouleprof thread and collected synchronously with sigtimedwait:
// no asynchronous handler, so nothing can interrupt the sampler or the allocator.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
std::atomic<int> g_interrupt{0};
std::atomic<pid_t> g_child{-1};
sigset_t g_set;

void handle(const siginfo_t& info) {
  const int sig = info.si_signo;
  if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
    int expected = 0;
    g_interrupt.compare_exchange_strong(expected, sig);
  }
  // A terminal's Ctrl-C / Ctrl-\ already reached the child (same process group); forward only
  // what was sent to jouleprof alone.
  const bool from_terminal = info.si_code == SI_KERNEL;
  const pid_t child = g_child.load();
  if (child > 0 && !((sig == SIGINT || sig == SIGQUIT) && from_terminal)) kill(child, sig);
}

// Collects pending signals, waiting up to `timeout_ms`.
void collect(int timeout_ms) {
  timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  siginfo_t info{};
  while (sigtimedwait(&g_set, &info, &ts) > 0) {
    handle(info);
    ts = {0, 0};
  }
}

}  // namespace

void install_signal_forwarding() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  sigemptyset(&g_set);
  for (int s : kForwarded) sigaddset(&g_set, s);
  // Threads created after this inherit the mask (call before starting the sampler).
  pthread_sigmask(SIG_BLOCK, &g_set, nullptr);
}

int interrupting_signal() {
  collect(0);
  return g_interrupt.load();
}

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
  // The child starts with default dispositions and nothing blocked.
  sigset_t defaults, none;
  sigemptyset(&defaults);
  sigemptyset(&none);
  for (int s : kForwarded) sigaddset(&defaults, s);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
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
  while (true) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) {
      st.exit_code = 127;
      g_child.store(-1);
      return st;
    }
    collect(20);  // forwards signals while waiting; the child's exit is seen within 20 ms
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
