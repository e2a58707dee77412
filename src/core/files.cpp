#include "jouleprof/core/files.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

std::size_t max_input_bytes() {
  if (const char* e = std::getenv("JOULEPROF_MAX_INPUT_MB"); e != nullptr && e[0] != '\0') {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(e, &end, 10);
    if (end != nullptr && *end == '\0' && mb > 0 && mb < (std::uint64_t{1} << 40)) return static_cast<std::size_t>(mb) << 20;
  }
  return std::size_t{256} << 20;
}

int pipe_timeout_ms() {
  if (const char* e = std::getenv("JOULEPROF_PIPE_TIMEOUT_S"); e != nullptr && e[0] != '\0') {
    char* end = nullptr;
    const long s = std::strtol(e, &end, 10);
    if (end != nullptr && *end == '\0' && s >= 0 && s < 86400) return static_cast<int>(s * 1000);
  }
  return 60000;
}

std::string format_bytes(uint64_t n) {
  char buf[64];
  if (n >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.3g GiB", static_cast<double>(n) / static_cast<double>(uint64_t{1} << 30));
  } else if (n >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.3g MiB", static_cast<double>(n) / static_cast<double>(uint64_t{1} << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.3g KiB", static_cast<double>(n) / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(n));
  }
  return buf;
}

namespace {

const char* file_type_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string over_limit(const std::string& path, std::size_t max) {
  return path + ": larger than " + format_bytes(max) + ", the limit for an input file (JOULEPROF_MAX_INPUT_MB raises it)";
}

}  // namespace

InputFile::InputFile(InputFile&& o) noexcept
    : fd_(o.fd_), pipe_(o.pipe_), size_(o.size_), read_(o.read_), max_(o.max_), path_(std::move(o.path_)) {
  o.fd_ = -1;
}

InputFile& InputFile::operator=(InputFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    pipe_ = o.pipe_;
    size_ = o.size_;
    read_ = o.read_;
    max_ = o.max_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<InputFile> InputFile::open(const std::string& path, std::size_t max_bytes) {
  if (path.empty()) return make_error(Errc::invalid_argument, "empty file name");
  // O_NONBLOCK: opening a FIFO with no writer must not block (cleared below for the reads).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == EISDIR) return make_error(Errc::invalid_argument, path + " is a directory, not a file");
    return make_error(err == ENOENT ? Errc::not_found : Errc::io, os_error("cannot read " + path, err));
  }
  InputFile f;
  f.fd_ = fd;
  f.path_ = path;
  f.max_ = max_bytes;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error(Errc::io, os_error("cannot read " + path, errno));
  if (S_ISDIR(st.st_mode)) return make_error(Errc::invalid_argument, path + " is a directory, not a file");
  if (S_ISFIFO(st.st_mode)) {
    f.pipe_ = true;
  } else if (!S_ISREG(st.st_mode)) {
    return make_error(Errc::invalid_argument, path + " is " + file_type_name(st.st_mode) + ", not a file (a regular file or a pipe is expected)");
  } else {
    f.size_ = static_cast<uint64_t>(st.st_size);
    if (*f.size_ > max_bytes) return make_error(Errc::invalid_argument, over_limit(path, max_bytes));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && !f.pipe_) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return f;
}

Result<std::size_t> InputFile::read(char* dst, std::size_t n) {
  std::size_t total = 0;
  while (total < n) {
    const ssize_t got = ::read(fd_, dst + total, n - total);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN && pipe_) {
      // A pipe whose writer is there but silent: wait, up to the pipe timeout.
      struct pollfd p {};
      p.fd = fd_;
      p.events = POLLIN;
      int r = 0;
      do {
        r = ::poll(&p, 1, pipe_timeout_ms());
      } while (r < 0 && errno == EINTR);
      if (r == 0) {
        return make_error(Errc::io, path_ + ": nothing from the pipe for " + std::to_string(pipe_timeout_ms() / 1000) +
                                        " s (JOULEPROF_PIPE_TIMEOUT_S sets the limit)");
      }
      continue;
    }
    if (got < 0) return make_error(Errc::io, os_error("cannot read " + path_, errno));
    if (got == 0) break;
    total += static_cast<std::size_t>(got);
    read_ += static_cast<uint64_t>(got);
    if (read_ > max_) return make_error(Errc::invalid_argument, over_limit(path_, max_));
  }
  return total;
}

Result<std::string> InputFile::read_all() {
  std::string out;
  if (size_) out.reserve(static_cast<std::size_t>(*size_));
  char buf[65536];
  for (;;) {
    auto got = read(buf, sizeof(buf));
    if (!got) return got.error();
    if (*got == 0) break;
    out.append(buf, *got);
  }
  return out;
}

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
  auto f = InputFile::open(path, max_bytes);
  if (!f) return f.error();
  return f->read_all();
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
