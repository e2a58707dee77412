// Writes one process's trace file (jouleprof/trace/format.hpp). Thread safe; each batch of
// records (one CUPTI buffer) goes to the file with one write(2), so a process killed with SIGKILL
// leaves every batch completed before the kill readable.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jouleprof/trace/format.hpp"

namespace jouleprof::inject {

class TraceWriter {
 public:
  /// Creates DIR/trace-PID.jpt and writes the header. False (and `error()`) on failure.
  bool open(const std::string& dir, int64_t pid, int64_t ppid, int64_t start_realtime_ns, uint32_t cupti_version);
  bool is_open() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

  /// Appends records to the pending batch (caller holds lock()).
  uint32_t intern(std::string_view s);
  void add(trace_format::RecordType type, const void* payload, uint32_t size);
  template <class T>
  void add(trace_format::RecordType type, const T& payload) {
    add(type, &payload, static_cast<uint32_t>(sizeof(T)));
  }
  void add_text(trace_format::RecordType type, std::string_view text) {
    add(type, text.data(), static_cast<uint32_t>(text.size()));
  }
  void count_activity() { ++records_; }
  void count_dropped(uint64_t n) { dropped_ += n; }
  /// Writes the pending batch to the file.
  void commit();
  /// Writes the End record and closes the file (idempotent).
  void close(int signal);
  /// In a forked child: forget the parent's file without writing to it.
  void abandon();

  std::mutex& lock() { return mu_; }
  uint64_t records() const { return records_; }
  uint64_t dropped() const { return dropped_; }
  /// Which opened file this is (a new number on every open): string ids are per file.
  uint64_t session() const { return session_; }

 private:
  std::mutex mu_;
  int fd_ = -1;
  std::string path_, error_;
  std::vector<char> pending_;
  std::unordered_map<std::string, uint32_t> strings_;
  uint64_t records_ = 0, dropped_ = 0;
  uint64_t session_ = 0;
};

}  // namespace jouleprof::inject
