#include "writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jouleprof::inject {

using namespace trace_format;

bool TraceWriter::open(const std::string& dir, int64_t pid, int64_t ppid, int64_t start_realtime_ns,
                       uint32_t cupti_version) {
  static std::atomic<uint64_t> sessions{0};
  session_ = ++sessions;
  path_ = dir + "/" + kFilePrefix + std::to_string(pid) + kFileSuffix;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error_ = "cannot create " + path_ + ": " + std::strerror(errno);
    return false;
  }
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kVersion;
  h.header_size = sizeof(FileHeader);
  h.pid = pid;
  h.ppid = ppid;
  h.start_realtime_ns = start_realtime_ns;
  h.cupti_version = cupti_version;
  const char* p = reinterpret_cast<const char*>(&h);
  pending_.insert(pending_.end(), p, p + sizeof(h));
  commit();
  return fd_ >= 0;
}

uint32_t TraceWriter::intern(std::string_view s) {
  auto it = strings_.find(std::string(s));
  if (it != strings_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(strings_.size() + 1);  // 0 means "none"
  strings_.emplace(std::string(s), id);
  std::vector<char> payload(sizeof(uint32_t) + s.size());
  std::memcpy(payload.data(), &id, sizeof(id));
  std::memcpy(payload.data() + sizeof(id), s.data(), s.size());
  add(RecordType::string, payload.data(), static_cast<uint32_t>(payload.size()));
  return id;
}

void TraceWriter::add(RecordType type, const void* payload, uint32_t size) {
  RecordHeader h{static_cast<uint16_t>(type), 0, size};
  const char* p = reinterpret_cast<const char*>(&h);
  pending_.insert(pending_.end(), p, p + sizeof(h));
  const char* q = static_cast<const char*>(payload);
  pending_.insert(pending_.end(), q, q + size);
}

void TraceWriter::commit() {
  if (fd_ < 0) {
    pending_.clear();
    return;
  }
  std::size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = "write to " + path_ + " failed: " + std::strerror(errno);
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  pending_.clear();
}

void TraceWriter::close(int signal) {
  if (fd_ < 0) return;
  EndRecord e{records_, dropped_, signal, 0};
  add(RecordType::end, e);
  commit();
  ::close(fd_);
  fd_ = -1;
}

void TraceWriter::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  pending_.clear();
}

}  // namespace jouleprof::inject
