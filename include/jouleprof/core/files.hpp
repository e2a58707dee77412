// Files in and out, checked. Every input file is read through InputFile: opened once (a pipe
// such as /dev/stdin or <(cmd) cannot be opened twice), a regular file or a pipe/FIFO only
// (a directory, /dev/zero or a socket is refused in one line), with a size limit (a file over it
// is refused before it is read, a pipe as soon as it passes it) and, for pipes, a limit on
// silence. A write is atomic (a temporary in the same folder, renamed over
// the target), every write, flush and close is checked, and the temporary is removed on every
// failure path. "-" means standard output; a target that is not a regular file (/dev/stdout,
// a FIFO, /dev/full) is written in place, still checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "jouleprof/core/error.hpp"

namespace jouleprof {

/// The size limit of an input file read whole: 256 MiB, or $JOULEPROF_MAX_INPUT_MB.
std::size_t max_input_bytes();

/// How long a pipe may stay silent before its read fails: 60 s, or $JOULEPROF_PIPE_TIMEOUT_S.
int pipe_timeout_ms();

/// One input file, opened once: a regular file or a pipe/FIFO. A FIFO with no writer reads as
/// empty (it does not block in open()); a pipe silent for pipe_timeout_ms() fails the read.
class InputFile {
 public:
  InputFile() = default;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile(InputFile&& o) noexcept;
  InputFile& operator=(InputFile&& o) noexcept;
  ~InputFile();

  /// Errors: not_found (missing), invalid_argument (a directory, a device, a socket; or a
  /// regular file over `max_bytes`), io.
  static Result<InputFile> open(const std::string& path, std::size_t max_bytes = max_input_bytes());
  /// Up to n bytes (fewer only at the end); 0 at the end. Fails past `max_bytes` in total.
  Result<std::size_t> read(char* dst, std::size_t n);
  /// The rest of the file.
  Result<std::string> read_all();
  bool is_pipe() const { return pipe_; }
  /// Regular files: the size at open.
  std::optional<uint64_t> size() const { return size_; }
  uint64_t bytes_read() const { return read_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool pipe_ = false;
  std::optional<uint64_t> size_;
  uint64_t read_ = 0;
  std::size_t max_ = 0;
  std::string path_;
};

/// The whole file, through InputFile. Errors: not_found (missing), invalid_argument (a
/// directory or device where a file is expected, or over `max_bytes`), io (read error).
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes = max_input_bytes());

/// "256 MiB", "1.5 GiB", "512 KiB", "300 bytes".
std::string format_bytes(uint64_t n);

/// Writes `content` to `path` atomically ("-": standard output).
Result<void> write_file_atomic(const std::string& path, std::string_view content);

/// Like write_file_atomic, with the content produced piecewise by `produce`, which calls
/// `sink(bytes)` any number of times (large outputs are not held in memory at once).
Result<void> write_file_atomic(const std::string& path,
                               const std::function<void(const std::function<void(std::string_view)>& sink)>& produce);

}  // namespace jouleprof
