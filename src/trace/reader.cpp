// Reading the injection library's per-process files (jouleprof/trace/format.hpp).
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <unordered_map>

#include "jouleprof/core/files.hpp"
#include "jouleprof/core/uuid.hpp"
#include "jouleprof/trace/format.hpp"
#include "jouleprof/trace/trace.hpp"

namespace jouleprof {

using namespace trace_format;

const char* activity_kind_name(Activity::Kind k) {
  switch (k) {
    case Activity::Kind::kernel: return "kernel";
    case Activity::Kind::memcpy: return "memcpy";
    case Activity::Kind::memset: return "memset";
    case Activity::Kind::sync: return "sync";
    case Activity::Kind::range: return "range";
    case Activity::Kind::mark: return "mark";
  }
  return "?";
}

uint64_t TraceData::dropped() const {
  uint64_t n = 0;
  for (const auto& p : processes) n += p.dropped;
  return n;
}

bool TraceData::complete() const {
  for (const auto& p : processes) {
    if (!p.ended || p.signal != 0 || !p.damage.empty() || p.dropped != 0 || p.records_stopped) return false;
  }
  return true;
}

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string s(out);
  std::free(out);
  return s;
}

namespace {

template <class T>
T payload_as(std::string_view payload) {
  T v{};  // a shorter payload (older writer) leaves the remaining fields zero
  std::memcpy(&v, payload.data(), std::min(payload.size(), sizeof(T)));
  return v;
}

}  // namespace

const char* memcpy_kind_name(uint32_t copy_kind) {
  switch (copy_kind) {
    case 1: return "HtoD";
    case 2: return "DtoH";
    case 3: return "HtoA";
    case 4: return "AtoH";
    case 5: return "AtoA";
    case 6: return "AtoD";
    case 7: return "DtoA";
    case 8: return "DtoD";
    case 9: return "HtoH";
    case 10: return "PtoP";
    default: return nullptr;
  }
}

namespace {

// One file's records, decoded in order into one ProcessTrace and its activities.
class FileReader {
 public:
  FileReader(ProcessTrace& process, int index) : p(process), proc(index) {}

  // Reads the records from `off` on; damage (a truncated or corrupt record) stops it and is noted.
  void read(const std::string& data, std::size_t off) {
    while (off < data.size()) {
      if (data.size() - off < sizeof(RecordHeader)) {
        p.damage = "truncated record header at offset " + std::to_string(off);
        return;
      }
      RecordHeader rh{};
      std::memcpy(&rh, data.data() + off, sizeof(rh));
      if (rh.size > kMaxRecordSize || rh.type == 0 || rh.type > kLastRecordType) {
        p.damage = "corrupt record (type " + std::to_string(rh.type) + ", size " + std::to_string(rh.size) +
                   ") at offset " + std::to_string(off);
        return;
      }
      if (data.size() - off - sizeof(rh) < rh.size) {
        p.damage = "truncated record at offset " + std::to_string(off);
        return;
      }
      record(static_cast<RecordType>(rh.type), std::string_view(data).substr(off + sizeof(rh), rh.size));
      off += sizeof(rh) + rh.size;
    }
  }

  // Ranges never closed end where the process's last record does.
  std::vector<Activity> finish() {
    int64_t last = p.start_realtime_ns;
    for (const Activity& a : acts) last = std::max(last, a.end_ns);
    for (const auto& [id, idx] : open_ranges) acts[idx].end_ns = std::max(acts[idx].start_ns, last);
    return std::move(acts);
  }

 private:
  Interned str(uint32_t id) const {
    if (id == 0) return {};
    auto it = strings.find(id);
    return it != strings.end() ? it->second : Interned("(string " + std::to_string(id) + ")");
  }

  void record(RecordType type, std::string_view payload) {
    switch (type) {
      case RecordType::string: {
        if (payload.size() < 4) break;
        uint32_t id = 0;
        std::memcpy(&id, payload.data(), 4);
        strings[id] = Interned(payload.substr(4));
        break;
      }
      case RecordType::kernel: kernel(payload); break;
      case RecordType::memcpy:
      case RecordType::memset: copy(payload, type == RecordType::memcpy); break;
      case RecordType::sync: sync(payload); break;
      case RecordType::marker: marker(payload); break;
      case RecordType::api: {
        const auto c = payload_as<ApiRecord>(payload);
        p.launches.push_back({c.correlation, c.thread_id, static_cast<int64_t>(c.start_ns),
                              c.domain == 1 && c.cbid == kAnchorDriverCbid});
        break;
      }
      case RecordType::dropped: p.dropped += payload_as<DroppedRecord>(payload).count; break;
      case RecordType::clock: {
        const auto c = payload_as<ClockRecord>(payload);
        p.clocks.push_back({c.cupti_ns, c.realtime_ns, c.half_bracket_ns});
        break;
      }
      case RecordType::note:
        p.notes.emplace_back(payload);
        p.records_stopped |= payload == kRecordsStoppedNote;
        break;
      case RecordType::command: {
        std::size_t s = 0;
        while (s < payload.size()) {
          std::size_t e = payload.find('\0', s);
          if (e == std::string_view::npos) e = payload.size();
          p.command.emplace_back(payload.substr(s, e - s));
          s = e + 1;
        }
        break;
      }
      case RecordType::device: {
        const auto d = payload_as<DeviceRecord>(payload);
        p.device_uuids[d.id] = gpu_uuid_text(d.uuid);
        break;
      }
      case RecordType::end: {
        const auto e = payload_as<EndRecord>(payload);
        p.ended = true;
        p.signal = e.signal;
        p.dropped = std::max<uint64_t>(p.dropped, e.dropped);
        break;
      }
    }
  }

  // What a GPU record of CUPTI's activity API carries whatever its kind: the process, the context,
  // stream and correlation id, and its start and end.
  template <class Record>
  Activity gpu_activity(Activity::Kind kind, const Record& r) const {
    Activity a;
    a.kind = kind;
    a.process = proc;
    a.context = r.context;
    a.stream = r.stream;
    a.correlation = r.correlation;
    a.start_ns = static_cast<int64_t>(r.start_ns);
    a.end_ns = static_cast<int64_t>(r.end_ns);
    return a;
  }

  void kernel(std::string_view payload) {
    const auto k = payload_as<KernelRecord>(payload);
    Activity a = gpu_activity(Activity::Kind::kernel, k);
    a.device = k.device;
    if (auto dn = demangled.find(k.name_id); dn != demangled.end()) {
      a.name = dn->second;  // demangled once per name
    } else {
      a.name = Interned(demangle(str(k.name_id).str()));
      if (strings.count(k.name_id) != 0) demangled.emplace(k.name_id, a.name);
    }
    a.grid[0] = k.grid_x, a.grid[1] = k.grid_y, a.grid[2] = k.grid_z;
    a.block[0] = k.block_x, a.block[1] = k.block_y, a.block[2] = k.block_z;
    a.registers = k.registers;
    a.static_shared_bytes = k.static_shared_bytes;
    a.dynamic_shared_bytes = k.dynamic_shared_bytes;
    a.graph_id = k.graph_id;
    acts.push_back(std::move(a));
    ++p.records;
  }

  void copy(std::string_view payload, bool is_copy) {
    const auto c = payload_as<CopyRecord>(payload);
    Activity a = gpu_activity(is_copy ? Activity::Kind::memcpy : Activity::Kind::memset, c);
    a.device = c.device;
    a.bytes = c.bytes;
    a.copy_kind = c.copy_kind;
    const char* copy_kind = memcpy_kind_name(c.copy_kind);
    a.name = is_copy ? std::string("memcpy ") + (copy_kind != nullptr ? copy_kind : "other") : "memset";
    acts.push_back(std::move(a));
    ++p.records;
  }

  void sync(std::string_view payload) {
    const auto s = payload_as<SyncRecord>(payload);
    static const char* names[] = {"sync", "event synchronize", "stream wait event", "stream synchronize",
                                  "context synchronize"};
    Activity a = gpu_activity(Activity::Kind::sync, s);
    a.name = names[s.sync_type < 5 ? s.sync_type : 0];
    acts.push_back(std::move(a));
    ++p.records;
  }

  // NVTX: a mark, or a range opened here and closed by the end record carrying the same id.
  void marker(std::string_view payload) {
    const auto m = payload_as<MarkerRecord>(payload);
    ++p.records;
    if ((m.flags & marker_end) != 0) {
      auto it = open_ranges.find(m.id);
      if (it == open_ranges.end() && m.object_kind == 2) {
        // A pop whose id does not match: close the innermost open range of its thread and domain.
        const Interned domain = str(m.domain_id);
        for (auto j = open_ranges.begin(); j != open_ranges.end(); ++j) {
          const Activity& r = acts[j->second];
          if (r.thread == m.object_id && r.domain == domain && (it == open_ranges.end() || r.start_ns >= acts[it->second].start_ns)) {
            it = j;
          }
        }
      }
      if (it != open_ranges.end()) {
        acts[it->second].end_ns = static_cast<int64_t>(m.timestamp_ns);
        acts[it->second].complete = true;
        open_ranges.erase(it);
      }
      return;
    }
    Activity a;
    a.process = proc;
    a.kind = (m.flags & marker_start) != 0 ? Activity::Kind::range : Activity::Kind::mark;
    a.start_ns = a.end_ns = static_cast<int64_t>(m.timestamp_ns);
    a.name = str(m.name_id);
    a.domain = str(m.domain_id);
    a.thread = m.object_kind == 2 ? m.object_id : 0;
    if (a.kind == Activity::Kind::range) {
      a.complete = false;
      open_ranges[m.id] = acts.size();
    }
    acts.push_back(std::move(a));
  }

  ProcessTrace& p;
  const int proc;
  std::unordered_map<uint32_t, Interned> strings;
  std::unordered_map<uint32_t, Interned> demangled;
  // Open NVTX ranges by (id), closed by the end record carrying the same id.
  std::unordered_map<uint32_t, std::size_t> open_ranges;
  std::vector<Activity> acts;
};

}  // namespace

Result<void> read_trace_file(const std::string& path, TraceData& into) {
  // Whatever size the traced program's records came to (a long run writes gigabytes).
  auto file = read_text_file(path, std::numeric_limits<std::size_t>::max());
  if (!file) return file.error();
  const std::string& data = *file;
  if (data.size() < sizeof(FileHeader) || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return make_error(Errc::parse, path + ": not a jouleprof trace file (bad magic at offset 0)");
  }
  const auto h = payload_as<FileHeader>(std::string_view(data).substr(0, sizeof(FileHeader)));
  if (h.version != kVersion) {
    return make_error(Errc::parse, path + ": trace format version " + std::to_string(h.version) + ", this jouleprof reads " +
                                       std::to_string(kVersion));
  }
  if (h.header_size < sizeof(FileHeader) || h.header_size > data.size()) {
    return make_error(Errc::parse, path + ": corrupt header (size " + std::to_string(h.header_size) + ") at offset 8");
  }
  ProcessTrace p;
  p.file = path;
  p.pid = h.pid;
  p.ppid = h.ppid;
  p.start_realtime_ns = h.start_realtime_ns;
  p.cupti_version = h.cupti_version;
  FileReader reader(p, static_cast<int>(into.processes.size()));
  reader.read(data, h.header_size);
  std::vector<Activity> acts = reader.finish();
  into.processes.push_back(std::move(p));
  into.activities.insert(into.activities.end(), std::make_move_iterator(acts.begin()), std::make_move_iterator(acts.end()));
  return {};
}

Result<TraceData> read_trace_dir(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kFilePrefix, 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == kFileSuffix) {
      files.push_back(e.path().string());
    }
  }
  if (ec) return make_error(Errc::not_found, "cannot read trace directory " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  TraceData t;
  for (const std::string& f : files) {
    if (auto r = read_trace_file(f, t); !r) t.warnings.push_back(r.error().message + " (file skipped)");
  }
  for (const ProcessTrace& p : t.processes) {
    const std::string who = "process " + std::to_string(p.pid) + " (" + p.file + ")";
    if (!p.damage.empty()) t.warnings.push_back(who + ": " + p.damage + "; records before it kept");
    if (!p.ended) t.warnings.push_back(who + ": trace cut off (no end record: the process was killed?); records flushed before kept");
    if (p.signal != 0) t.warnings.push_back(who + ": ended by signal " + std::to_string(p.signal));
    if (p.dropped != 0) t.warnings.push_back(who + ": CUPTI dropped " + std::to_string(p.dropped) + " records");
    for (const std::string& n : p.notes) t.warnings.push_back(who + ": " + n);
  }
  return t;
}

}  // namespace jouleprof
