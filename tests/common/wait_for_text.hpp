// Waits until a file (a child's stderr, say) holds a text: woken by inotify at each change of the
// file, not by a timer. For tests that act when a child reaches a step it reports.
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace jp_test {

/// True once `path` contains `text`; false after `timeout` (a bound on a hang, never the wait itself).
inline bool wait_for_text(const std::string& path, const std::string& text, std::chrono::seconds timeout) {
  auto holds = [&] {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str().find(text) != std::string::npos;
  };
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return false;
  // Its folder is watched (the file may not exist yet: a child opens its stderr after the fork),
  // before the first look, so no change between the look and the wait is missed.
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const int wd = inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CREATE | IN_CLOSE_WRITE);
  const auto until = std::chrono::steady_clock::now() + timeout;
  bool found = wd >= 0 && holds();
  while (wd >= 0 && !found) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    found = holds();
  }
  close(fd);
  return found;
}

}  // namespace jp_test
