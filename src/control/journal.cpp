// The restore journal on disk: JSON, written atomically and durably (docs/sweep.md).
#include "jouleprof/control/journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jouleprof/core/files.hpp"
#include "jouleprof/core/json_checked.hpp"
#include "jouleprof/core/text.hpp"

namespace jouleprof::control {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

unsigned long long start_ticks(long pid) {
  // Field 22 of /proc/PID/stat, after the command name in parentheses (which may hold spaces).
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && (in >> field); ++i) {
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

std::string utc_now() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json range_json(const std::optional<ClockRange>& r) {
  if (!r) return nullptr;
  return {{"min_mhz", r->min_mhz}, {"max_mhz", r->max_mhz}};
}

template <class T>
json opt_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

std::optional<ClockRange> range_from(const json& j) {
  if (!j.is_object()) return std::nullopt;
  return ClockRange{checked_json<unsigned>(j.at("min_mhz")), checked_json<unsigned>(j.at("max_mhz"))};
}

template <class T>
std::optional<T> opt_from(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return checked_json<T>(j.at(key));
}

Result<void> fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return make_error(Errc::io, "cannot open " + dir + ": " + std::strerror(errno));
  ::fsync(fd);
  ::close(fd);
  return {};
}

Result<void> ensure_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(Errc::io, "cannot create the journal folder " + dir + ": " + ec.message());
  return {};
}

// A journal is a few hundred bytes; anything far larger is not one (and is not read whole).
constexpr std::size_t kMaxJournalBytes = 64 * 1024;

// The uuid a file that is not a readable journal still names, where it names one: a newer
// jouleprof's journal (another journal_version) or a damaged one may belong to a GPU this
// process is about to change.
std::string uuid_of_unreadable(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  const auto u = j.find("uuid");
  if (u == j.end() || !u->is_string() || !valid_journal_uuid(u->get<std::string>())) return "";
  return u->get<std::string>();
}

Result<JournalFolder> read_folder(const std::string& dir) {
  JournalFolder out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code ec2;
    if (e.is_directory(ec2) || e.path().extension() != ".json" || name.rfind(".tmp", 0) == 0) continue;
    // One file that cannot be read never hides the others: each is reported on its own.
    const std::string path = e.path().string();
    auto text = read_text_file(path, kMaxJournalBytes);
    if (!text) {
      out.bad.push_back({path, "", "cannot be read as a restore journal: " + text.error().message});
      continue;
    }
    auto j = journal_from_json(*text, path);
    if (!j) {
      out.bad.push_back({path, uuid_of_unreadable(*text), j.error().message});
      continue;
    }
    out.journals.push_back(*j);
  }
  if (ec) return make_error(Errc::io, "cannot list the journal folder " + dir + ": " + ec.message());
  std::sort(out.journals.begin(), out.journals.end(), [](const Journal& a, const Journal& b) { return a.index < b.index; });
  std::sort(out.bad.begin(), out.bad.end(), [](const BadJournal& a, const BadJournal& b) { return a.path < b.path; });
  return out;
}

}  // namespace

std::string default_journal_dir() {
  if (const char* e = std::getenv(kJournalDirEnv); e != nullptr && e[0] != '\0') return e;
  if (geteuid() == 0) return "/var/lib/jouleprof/control";
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && x[0] != '\0') {
    return std::string(x) + "/jouleprof/control";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.local/state/jouleprof/control";
}

std::string this_host() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

std::string this_boot_id() {
  std::string id = read_text("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

Journal journal_for_this_process() {
  Journal j;
  j.host = this_host();
  j.boot_id = this_boot_id();
  j.pid = static_cast<long>(getpid());
  j.pid_start_ticks = start_ticks(j.pid);
  j.created_utc = utc_now();
  return j;
}

std::string journal_to_json(const Journal& j) {
  const GpuControlState& o = j.original;
  json out = {{"journal_version", j.version},
              {"host", j.host},
              {"boot_id", j.boot_id},
              {"pid", j.pid},
              {"pid_start_ticks", j.pid_start_ticks},
              {"created_utc", j.created_utc},
              {"backend", j.backend},
              {"library", j.library},
              {"uuid", j.uuid},
              {"name", j.name},
              {"index", j.index},
              {"original",
               {{"gpu_locked_clocks", range_json(o.gpu_locked)},
                {"mem_locked_clocks", range_json(o.mem_locked)},
                {"app_gpu_clock_mhz", opt_json(o.app_gpu_mhz)},
                {"app_mem_clock_mhz", opt_json(o.app_mem_mhz)},
                {"power_limit_mw", opt_json(o.power_limit_mw)},
                {"persistence", opt_json(o.persistence)}}}};
  return out.dump(2) + "\n";
}

Result<Journal> journal_from_json(const std::string& text, const std::string& path) {
  const std::string where = for_terminal(path);
  if (text.find('\0') != std::string::npos) return make_error(Errc::parse, where + ": not a jouleprof restore journal (a NUL byte)");
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return make_error(Errc::parse, where + ": not a jouleprof restore journal (not JSON)");
  if (!j.is_object()) return make_error(Errc::parse, where + ": not a jouleprof restore journal (not a JSON object)");
  try {
    Journal out;
    // Numbers checked in their type's range: a journal edited to 2^32 + 300000 mW must not restore 300 W.
    out.version = checked_json<int>(j.at("journal_version"));
    if (out.version != kJournalVersion) {
      return make_error(Errc::parse, fmt::format("{}: journal version {} (this jouleprof reads {}): restore it with the "
                                                 "jouleprof that wrote it",
                                                 where, out.version, kJournalVersion));
    }
    out.host = j.at("host").get<std::string>();
    out.boot_id = j.at("boot_id").get<std::string>();
    out.pid = checked_json<long>(j.at("pid"));
    out.pid_start_ticks = checked_json<unsigned long long>(j.at("pid_start_ticks"));
    out.created_utc = j.value("created_utc", "");
    out.backend = j.at("backend").get<std::string>();
    // Recorded for the reader only: a restore drives the NVML this jouleprof is configured with,
    // never a library a journal names (anyone who can write the folder could name theirs).
    out.library = j.value("library", "");
    if (out.backend != "nvml") {
      return make_error(Errc::parse, where + ": backend '" + for_terminal(out.backend) + "' (journals are written for nvml only)");
    }
    out.uuid = j.at("uuid").get<std::string>();
    if (!valid_journal_uuid(out.uuid)) {
      return make_error(Errc::parse, where + ": '" + for_terminal(out.uuid) + "' is not a GPU UUID");
    }
    out.name = j.value("name", "");
    out.index = j.contains("index") ? checked_json<int>(j.at("index")) : 0;
    const json& o = j.at("original");
    out.original.gpu_locked = range_from(o.value("gpu_locked_clocks", json(nullptr)));
    out.original.mem_locked = range_from(o.value("mem_locked_clocks", json(nullptr)));
    out.original.app_gpu_mhz = opt_from<unsigned>(o, "app_gpu_clock_mhz");
    out.original.app_mem_mhz = opt_from<unsigned>(o, "app_mem_clock_mhz");
    out.original.power_limit_mw = opt_from<unsigned>(o, "power_limit_mw");
    out.original.persistence = opt_from<bool>(o, "persistence");
    out.path = path;
    return out;
  } catch (const std::exception& e) {
    // nlohmann's "[json.exception.type_error.302] " prefix is the library's, not the reader's words.
    std::string why = e.what();
    if (why.rfind("[json.exception.", 0) == 0 && why.find("] ") != std::string::npos) why.erase(0, why.find("] ") + 2);
    return make_error(Errc::parse, where + ": malformed restore journal (" + for_terminal(why) + ")");
  }
}

Result<void> write_journal(const std::string& dir, const Journal& j) {
  if (!valid_journal_uuid(j.uuid)) return make_error(Errc::invalid_argument, "'" + for_terminal(j.uuid) + "' is not a GPU UUID");
  if (auto r = ensure_dir(dir); !r) return r;
  const std::string path = dir + "/" + j.uuid + ".json";
  const std::string tmp = dir + "/.tmp." + j.uuid + "." + std::to_string(getpid());
  const std::string text = journal_to_json(j);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(Errc::io, "cannot write the restore journal " + tmp + ": " + std::strerror(errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return make_error(Errc::io, "cannot write the restore journal " + path + ": " + std::strerror(errno));
  }
  return fsync_dir(dir);
}

bool valid_journal_uuid(const std::string& uuid) {
  // NVML UUIDs ("GPU-xxxxxxxx-...", "MIG-..."): letters, digits and '-'; the name of a file.
  return !uuid.empty() && uuid.size() <= 96 && uuid.front() != '-' &&
         uuid.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

Result<JournalFolder> scan_journals(const std::string& dir) { return read_folder(dir); }

Result<std::vector<Journal>> read_journals(const std::string& dir) {
  auto f = read_folder(dir);
  if (!f) return f.error();
  return f->journals;
}

Result<std::vector<Journal>> read_restored_records(const std::string& dir) { return read_journals(dir + "/restored"); }

Result<void> retire_journal(const std::string& dir, const Journal& j) {
  const std::string done = dir + "/restored";
  if (auto r = ensure_dir(done); !r) return r;
  const std::string from = j.path.empty() ? dir + "/" + j.uuid + ".json" : j.path;
  if (std::rename(from.c_str(), (done + "/" + j.uuid + ".json").c_str()) != 0 && errno != ENOENT) {
    return make_error(Errc::io, "cannot retire the restore journal " + from + ": " + std::strerror(errno));
  }
  if (auto r = fsync_dir(done); !r) return r;
  return fsync_dir(dir);
}

bool owner_running(const Journal& j) {
  if (j.pid <= 0) return false;
  if (::kill(static_cast<pid_t>(j.pid), 0) != 0 && errno != EPERM) return false;
  return start_ticks(j.pid) == j.pid_start_ticks;
}

std::string foreign_reason(const Journal& j) {
  if (j.host != this_host()) {
    return fmt::format("journal {} was written on host '{}', this is '{}': restore it there", j.path, j.host,
                       this_host());
  }
  if (j.boot_id != this_boot_id()) {
    return fmt::format(
        "journal {} is from an earlier boot of this host ({}): the driver reset the GPU's clocks and power limit "
        "at reboot; delete the file once you have checked the GPU",
        j.path, j.created_utc);
  }
  return "";
}

}  // namespace jouleprof::control
