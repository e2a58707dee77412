#include "jouleprof/core/files.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace jouleprof {
namespace {

std::string os_error(const std::string& what, int err) { return what + ": " + std::strerror(err); }

// Writes all of `data` to fd; false (errno set) on any short or failed write.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return make_error(err == ENOENT ? Errc::not_found : Errc::io, os_error("cannot read " + path, err));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return make_error(Errc::invalid_argument, path + " is a directory, not a file");
  }
  if (S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return make_error(Errc::invalid_argument, path + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                                                  std::to_string(max_bytes) + " this reader accepts");
  }
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return make_error(Errc::io, os_error("cannot read " + path, err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      return make_error(Errc::invalid_argument, path + ": more than the " + std::to_string(max_bytes) +
                                                    " bytes this reader accepts");
    }
  }
  ::close(fd);
  return out;
}

Result<void> write_file_atomic(const std::string& path, std::string_view content) {
  return write_file_atomic(path, [&](const std::function<void(std::string_view)>& sink) { sink(content); });
}

Result<void> write_file_atomic(const std::string& path,
                               const std::function<void(const std::function<void(std::string_view)>& sink)>& produce) {
  namespace fs = std::filesystem;
  if (path.empty()) return make_error(Errc::invalid_argument, "empty output file name");
  // Standard output, devices and FIFOs cannot be replaced: written in place, still checked.
  struct stat st {};
  const bool in_place = path == "-" || (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return make_error(Errc::invalid_argument, "cannot write " + path + ": it is a directory");
  }
  if (in_place) {
    if (path == "-") std::fflush(stdout);  // what was printed before comes first
    const int fd = path == "-" ? STDOUT_FILENO : ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return make_error(Errc::io, os_error("cannot write " + path, errno));
    int err = 0;
    produce([&](std::string_view d) {
      if (err == 0 && !write_all(fd, d)) err = errno;
    });
    if (path == "-") {
      if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP) err = errno;
    } else if (::close(fd) != 0 && err == 0) {
      err = errno;
    }
    if (err != 0) return make_error(Errc::io, os_error("cannot write " + (path == "-" ? std::string("standard output") : path), err));
    return {};
  }
  const fs::path target(path);
  std::string tmpl = (target.has_parent_path() ? target.parent_path() / ("." + target.filename().string())
                                               : fs::path("." + target.filename().string()))
                         .string() +
                     ".tmp-XXXXXX";
  const int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) return make_error(Errc::io, os_error("cannot write " + path, errno));
  int err = 0;
  produce([&](std::string_view d) {
    if (err == 0 && !write_all(fd, d)) err = errno;
  });
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  // Permissions as a plain open() would have given (mkstemp makes 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (err == 0 && ::fchmod(fd, 0666 & ~mask) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmpl.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmpl.c_str());
    return make_error(Errc::io, os_error("cannot write " + path, err));
  }
  return {};
}

}  // namespace jouleprof
