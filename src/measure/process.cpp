#include "jouleprof/measure/process.hpp"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/prctl.h>
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
  // The workload leads its own process group (and holds the terminal while it runs, so a
  // terminal's Ctrl-C reaches it directly): what reaches jouleprof goes to the whole group.
  const pid_t child = g_child.load();
  if (child > 0) kill(-child, sig);
}

// Gives the terminal to a process group; SIGTTOU blocked, as jouleprof may be in the background.
void set_foreground(pid_t group) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, group);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
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

  // fork/exec rather than posix_spawn: the child needs a parent-death signal, so a SIGKILLed
  // jouleprof takes its workload along instead of leaving it orphaned. Between fork and exec the
  // child makes only async-signal-safe calls; an exec failure comes back through the pipe.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return make_error(Errc::io, std::string("cannot start ") + argv[0] + ": pipe: " + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    ::close(report[0]);
    ::close(report[1]);
    return make_error(Errc::io, "cannot start " + argv[0] + ": fork: " + std::strerror(err));
  }
  if (pid == 0) {
    ::close(report[0]);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // jouleprof died before the line above
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : kForwarded) sigaction(s, &dfl, nullptr);
    sigaction(SIGPIPE, &dfl, nullptr);
    sigaction(SIGTTOU, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(args[0], args.data(), env.data());
    const int err = errno;
    (void)!::write(report[1], &err, sizeof(err));
    _exit(127);
  }
  ::close(report[1]);
  setpgid(pid, pid);  // also here: whichever runs first, the group exists before signals go to it
  int child_errno = 0;
  ssize_t got;
  do {
    got = ::read(report[0], &child_errno, sizeof(child_errno));
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  const int rc = got == static_cast<ssize_t>(sizeof(child_errno)) ? child_errno : 0;
  if (rc != 0) {
    int ignored = 0;
    waitpid(pid, &ignored, 0);
    if (rc == ENOENT) return make_error(Errc::exec, "command not found: " + argv[0]);
    if (rc == EACCES) return make_error(Errc::exec, "permission denied: " + argv[0]);
    return make_error(Errc::exec, "cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  ChildProcess c;
  c.pid_ = pid;
  g_child.store(pid);
  // An interactive workload keeps the terminal: its group becomes the foreground one.
  if (isatty(STDIN_FILENO) == 1 && tcgetpgrp(STDIN_FILENO) == getpgrp()) {
    set_foreground(pid);
    c.took_terminal_ = true;
  }
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
      if (took_terminal_) set_foreground(getpgrp());
      return st;
    }
    collect(20);  // forwards signals while waiting; the child's exit is seen within 20 ms
  }
  g_child.store(-1);
  if (took_terminal_) set_foreground(getpgrp());
  kill(-pid_, SIGKILL);  // what the workload left running in its group ends with it
  if (WIFEXITED(status)) {
    st.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    st.signal = WTERMSIG(status);
    st.exit_code = 128 + st.signal;
  }
  return st;
}

}  // namespace jouleprof
