// Guaranteed restore: journal first, restore always (docs/sweep.md "Safety").
#include "jouleprof/control/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "jouleprof/core/text.hpp"

namespace jouleprof::control {
namespace {

// The readable fields of `now` that differ from `original`, in words (empty: none).
std::string differences(const GpuControlState& original, const GpuControlState& now) {
  std::string d;
  auto add = [&](const std::string& s) { d += (d.empty() ? "" : ", ") + s; };
  if (now.power_limit_mw && original.power_limit_mw && *now.power_limit_mw != *original.power_limit_mw) {
    add(fmt::format("power limit {} W, originally {} W", *now.power_limit_mw / 1000.0, *original.power_limit_mw / 1000.0));
  }
  if (now.app_gpu_mhz && original.app_gpu_mhz &&
      (*now.app_gpu_mhz != *original.app_gpu_mhz || now.app_mem_mhz != original.app_mem_mhz)) {
    add(fmt::format("application clocks {}/{} MHz, originally {}/{} MHz", *now.app_gpu_mhz, now.app_mem_mhz.value_or(0),
                    *original.app_gpu_mhz, original.app_mem_mhz.value_or(0)));
  }
  // Locked clocks are compared only where the backend can read them back (the simulated GPU).
  // (NVML cannot read them: both are then unset.)
  if (now.gpu_locked != original.gpu_locked) add("locked graphics clocks differ");
  if (now.mem_locked != original.mem_locked) add("locked memory clocks differ");
  return d;
}

Result<void> restore_one(ControlBackend& b, const Journal& j, const std::string& dir) {
  if (auto r = b.restore(j.uuid, j.original); !r) return r;
  auto now = b.read_state(j.uuid);
  if (!now) return now.error();
  if (const std::string d = differences(j.original, *now); !d.empty()) {
    return make_error(Errc::vendor, "GPU " + j.uuid + " still differs after restore: " + d);
  }
  if (!dir.empty()) return retire_journal(dir, j);
  return {};
}

}  // namespace

ControlSession::ControlSession(ControlBackend& b, std::vector<GpuCapabilities> gpus, SessionOptions opt)
    : backend_(b), gpus_(std::move(gpus)), opt_(std::move(opt)) {}

Result<std::unique_ptr<ControlSession>> ControlSession::begin(ControlBackend& backend, std::vector<GpuCapabilities> gpus,
                                                              SessionOptions opt) {
  if (opt.journal_dir.empty()) opt.journal_dir = default_journal_dir();
  std::unique_ptr<ControlSession> s(new ControlSession(backend, std::move(gpus), std::move(opt)));
  for (const auto& g : s->gpus_) {
    Journal j = journal_for_this_process();
    j.backend = backend.name();
    j.library = backend.library();
    j.uuid = g.uuid;
    j.name = g.name;
    j.index = g.index;
    s->journals_.push_back(j);
  }
  if (s->opt_.observe_only) {
    for (auto& j : s->journals_) {
      auto st = backend.read_state(j.uuid);
      if (!st) return st.error();
      j.original = *st;
    }
    return s;
  }
  for (const auto& g : s->gpus_) {
    if (const std::string p = backend.permission(g.uuid); !p.empty()) {
      return make_error(Errc::unavailable, fmt::format("GPU {}: {}", g.index, p));
    }
  }
  if (backend.durable()) {
    // What an earlier jouleprof left on these GPUs: refuse a running owner, restore a dead one's.
    auto folder = scan_journals(s->opt_.journal_dir);
    if (!folder) return folder.error();
    // A file that cannot be read is never restored. It blocks this sweep only where it names one
    // of its GPUs (a newer jouleprof's journal, a damaged one): that GPU may still be changed.
    for (const BadJournal& bad : folder->bad) {
      const bool ours = !bad.uuid.empty() &&
                        std::any_of(s->gpus_.begin(), s->gpus_.end(), [&](const auto& g) { return g.uuid == bad.uuid; });
      if (ours) {
        return make_error(Errc::unavailable,
                          fmt::format("GPU {} may still be changed: {}; restore it with the jouleprof that wrote the "
                                      "journal, or move the file away once the GPU is checked",
                                      for_terminal(bad.uuid), bad.reason));
      }
      if (s->opt_.note) s->opt_.note("ignored: " + bad.reason);
    }
    for (const Journal& old : folder->journals) {
      const bool ours = std::any_of(s->gpus_.begin(), s->gpus_.end(), [&](const auto& g) { return g.uuid == old.uuid; });
      if (!ours) continue;
      if (const std::string why = foreign_reason(old); !why.empty()) return make_error(Errc::invalid_argument, why);
      if (owner_running(old)) {
        return make_error(Errc::unavailable, fmt::format("GPU {} is being changed by jouleprof pid {} (journal {})",
                                                         old.index, old.pid, old.path));
      }
      if (s->opt_.note) s->opt_.note(fmt::format("restoring GPU {} left changed by jouleprof pid {} (journal {})",
                                                 old.index, old.pid, old.path));
      if (auto r = restore_one(backend, old, s->opt_.journal_dir); !r) return r.error();
    }
  }
  // The original state is read and journaled, synced, before any change.
  for (auto& j : s->journals_) {
    auto st = backend.read_state(j.uuid);
    if (!st) return st.error();
    j.original = *st;
    if (backend.durable()) {
      if (auto r = write_journal(s->opt_.journal_dir, j); !r) return r.error();
      j.path = s->opt_.journal_dir + "/" + j.uuid + ".json";
    }
  }
  return s;
}

ControlSession::~ControlSession() {
  if (auto r = restore(); !r && opt_.note) opt_.note("restore failed: " + r.error().message);
}

const GpuControlState& ControlSession::original(const std::string& uuid) const {
  for (const auto& j : journals_) {
    if (j.uuid == uuid) return j.original;
  }
  static const GpuControlState none;
  return none;
}

Result<void> ControlSession::apply(const std::string& uuid, const Setting& s) {
  auto g = std::find_if(gpus_.begin(), gpus_.end(), [&](const auto& c) { return c.uuid == uuid; });
  if (g == gpus_.end()) return make_error(Errc::not_found, "GPU " + uuid + " is not part of this session");
  if (auto r = validate_setting(*g, s); !r) return r;
  if (opt_.observe_only || s.empty()) return {};
  changed_ = true;
  restored_ = false;
  return backend_.apply(uuid, s);
}

Result<void> ControlSession::restore() {
  if (opt_.observe_only || restored_) return {};
  std::string failures;
  for (const Journal& j : journals_) {
    // A journal this session did not write (begin() failed before) belongs to someone else.
    if (backend_.durable() && j.path.empty()) continue;
    // Without a change nothing needs restoring, but the journal is retired all the same.
    Result<void> r = changed_ ? restore_one(backend_, j, backend_.durable() ? opt_.journal_dir : "")
                              : (backend_.durable() ? retire_journal(opt_.journal_dir, j) : Result<void>{});
    if (!r) failures += (failures.empty() ? "" : "; ") + r.error().message;
  }
  if (!failures.empty()) return make_error(Errc::vendor, failures);
  restored_ = true;
  return {};
}

std::string configured_nvml_library(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* e = std::getenv("JOULEPROF_NVML_LIB"); e != nullptr && e[0] != '\0') return e;
  return "libnvidia-ml.so.1";
}

Result<std::vector<RestoreOutcome>> restore_from_journals(const std::string& dir, bool include_running,
                                                          const std::string& nvml_library) {
  auto folder = scan_journals(dir);
  if (!folder) return folder.error();
  std::vector<RestoreOutcome> out;
  // One backend, the configured NVML, for every journal: the library a journal names is never loaded.
  std::unique_ptr<ControlBackend> backend;
  std::string backend_error;
  for (const Journal& j : folder->journals) {
    RestoreOutcome o;
    o.uuid = j.uuid;
    o.path = j.path;
    if (std::string why = foreign_reason(j); !why.empty()) {
      o.kind = RestoreOutcome::Kind::foreign;
      o.message = why;
    } else if (!include_running && owner_running(j)) {
      o.kind = RestoreOutcome::Kind::in_use;
      o.message = fmt::format("GPU {} is being changed by jouleprof pid {} (still running)", j.index, j.pid);
    } else {
      if (!backend && backend_error.empty()) {
        auto b = open_backend("nvml", configured_nvml_library(nvml_library));
        if (b) {
          backend = std::move(*b);
        } else {
          backend_error = b.error().message;
        }
      }
      if (!backend) {
        o.kind = RestoreOutcome::Kind::failed;
        o.message = "cannot reach GPU " + j.uuid + ": " + backend_error;
      } else if (auto r = restore_one(*backend, j, dir); !r) {
        o.kind = RestoreOutcome::Kind::failed;
        o.message = r.error().message;
      } else {
        o.message = fmt::format("GPU {} ({}) restored to its state before jouleprof pid {}", j.index, j.uuid, j.pid);
      }
    }
    out.push_back(o);
  }
  for (const BadJournal& b : folder->bad) {
    RestoreOutcome o;
    o.kind = RestoreOutcome::Kind::unreadable;
    o.uuid = b.uuid;
    o.path = b.path;
    o.message = b.reason + "; not restored: check " +
                (b.uuid.empty() ? std::string("the GPUs") : "GPU " + for_terminal(b.uuid)) + ", then move the file away";
    out.push_back(o);
  }
  return out;
}

Result<std::vector<CheckOutcome>> check_journals(const std::string& dir, const std::string& nvml_library) {
  std::vector<CheckOutcome> out;
  auto folder = scan_journals(dir);
  if (!folder) return folder.error();
  for (const BadJournal& b : folder->bad) out.push_back({b.uuid, false, b.reason});
  for (const Journal& j : folder->journals) {
    out.push_back({j.uuid, false,
                   fmt::format("GPU {} ({}) has a restore journal left by jouleprof pid {}{}: run `jouleprof restore`",
                               j.index, j.uuid, j.pid, owner_running(j) ? " (still running)" : "")});
  }
  auto records = read_restored_records(dir);
  if (!records) return records.error();
  std::unique_ptr<ControlBackend> backend;
  for (const Journal& j : *records) {
    if (!foreign_reason(j).empty()) continue;  // another host or boot: not this GPU's state now
    if (!backend) {
      auto b = open_backend("nvml", configured_nvml_library(nvml_library));
      if (!b) return b.error();
      backend = std::move(*b);
    }
    auto now = backend->read_state(j.uuid);
    if (!now) {
      out.push_back({j.uuid, false, now.error().message});
      continue;
    }
    const std::string d = differences(j.original, *now);
    out.push_back({j.uuid, d.empty(),
                   d.empty() ? fmt::format("GPU {} ({}) matches its state before jouleprof", j.index, j.uuid)
                             : fmt::format("GPU {} ({}) differs from its state before jouleprof: {}", j.index, j.uuid, d)});
  }
  return out;
}

void restore_leftovers_at_start(const std::function<void(const std::string&)>& note) {
  const std::string dir = default_journal_dir();
  auto folder = scan_journals(dir);
  if (!folder || (folder->journals.empty() && folder->bad.empty())) return;
  auto done = restore_from_journals(dir);
  if (!done) {
    note("cannot restore GPUs left changed: " + done.error().message);
    return;
  }
  // Every good journal is restored, and each GPU restored or still changed gets its line. Files this
  // start cannot use (unreadable, another host's) stay until a person moves them, so they would
  // repeat on every command: one line counts them, `jouleprof restore` reports each.
  std::size_t unreadable = 0, foreign = 0;
  for (const auto& o : *done) {
    if (o.kind == RestoreOutcome::Kind::restored) note(o.message + " (left by a jouleprof that was killed)");
    if (o.kind == RestoreOutcome::Kind::failed) note(o.message);
    unreadable += o.kind == RestoreOutcome::Kind::unreadable ? 1 : 0;
    foreign += o.kind == RestoreOutcome::Kind::foreign ? 1 : 0;
  }
  if (unreadable + foreign == 0) return;
  auto count = [](std::size_t n, const char* what) {
    return n == 0 ? std::string() : fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
  };
  const std::string a = count(unreadable, "unreadable journal"), b = count(foreign, "journal of another host or boot");
  note(fmt::format("{}{}{} in {}; run `jouleprof restore` for details", a, a.empty() || b.empty() ? "" : " and ", b,
                   for_terminal(dir)));
}

}  // namespace jouleprof::control
