// `jouleprof restore [--check]`: puts back the GPU settings a killed jouleprof left changed,
// from its journal; `--check` (for a SLURM epilog) exits non-zero if a GPU differs from its
// recorded original state or a journal is left.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/control/session.hpp"
#include "jouleprof/core/text.hpp"

namespace jouleprof::cli {
namespace {

struct RestoreFlags {
  std::string dir, json, nvml_lib;
  bool check = false, include_running = false, quiet = false;
};

const char* kind_name(control::RestoreOutcome::Kind k) {
  switch (k) {
    case control::RestoreOutcome::Kind::restored: return "restored";
    case control::RestoreOutcome::Kind::in_use: return "in_use";
    case control::RestoreOutcome::Kind::foreign: return "refused";
    case control::RestoreOutcome::Kind::failed: return "failed";
    case control::RestoreOutcome::Kind::unreadable: return "unreadable";
  }
  return "failed";
}

// One shape for both modes (schemas/restore.schema.json): {schema_version, mode, journal_dir,
// ok, gpus: [{uuid, outcome, ok, message, journal (restore mode)}]}.
int write_json(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return 0;
  if (auto w = write_output(path, j.dump(2) + "\n"); !w) return report(w.error());
  return 0;
}

int run(const RestoreFlags& f) {
  const std::string dir = f.dir.empty() ? control::default_journal_dir() : f.dir;
  nlohmann::json j = {{"schema_version", 1}, {"mode", f.check ? "check" : "restore"}, {"journal_dir", dir},
                      {"gpus", nlohmann::json::array()}};
  if (f.check) {
    auto out = control::check_journals(dir, f.nvml_lib);
    if (!out) return report(out.error());
    bool ok = true;
    for (const auto& o : *out) {
      ok = ok && o.ok;
      if (!f.quiet || !o.ok) fmt::print(stderr, "jouleprof: {}{}\n", o.ok ? "" : "error: ", for_terminal(o.message));
      j["gpus"].push_back({{"uuid", o.uuid}, {"outcome", o.ok ? "matches" : "differs"}, {"ok", o.ok}, {"message", o.message}});
    }
    if (out->empty() && !f.quiet) fmt::print(stderr, "jouleprof: no journal in {}: nothing was left changed\n", dir);
    j["ok"] = ok;
    if (int w = write_json(f.json, j); w != 0) return w;
    return ok ? 0 : 1;
  }
  auto out = control::restore_from_journals(dir, f.include_running, f.nvml_lib);
  if (!out) return report(out.error());
  int rc = 0;
  for (const auto& o : *out) {
    const bool bad = o.kind != control::RestoreOutcome::Kind::restored;
    // Every journal is tried; the exit status is the worst outcome (a journal of another host or
    // boot: 2; one that failed or a file that is no readable journal: 1).
    if (bad) rc = std::max(rc, o.kind == control::RestoreOutcome::Kind::foreign ? kExitUsage : 1);
    if (!f.quiet || bad) fmt::print(stderr, "jouleprof: {}{}\n", bad ? "error: " : "", for_terminal(o.message));
    j["gpus"].push_back({{"uuid", o.uuid}, {"outcome", kind_name(o.kind)}, {"ok", !bad}, {"journal", o.path}, {"message", o.message}});
  }
  if (out->empty() && !f.quiet) fmt::print(stderr, "jouleprof: no journal in {}: nothing to restore\n", dir);
  j["ok"] = rc == 0;
  if (int w = write_json(f.json, j); w != 0) return w;
  return rc;
}

Runner add_restore(CLI::App& app) {
  auto f = std::make_shared<RestoreFlags>();
  CLI::App* c = app.add_subcommand("restore", "Put back GPU clocks and power limits a killed jouleprof left changed");
  c->footer(
      "Reads the restore journals (one per GPU, written before any change) and restores each GPU's original\n"
      "locked clocks, application clocks and power limit. jouleprof also does this at its next start.\n"
      "Journals from another host or boot are refused; a file that is no readable journal is reported (one line\n"
      "each) and left, and every good journal is still restored. --check: exit 1 if a journal is left or a GPU differs\n"
      "from its recorded original state (a SLURM epilog: docs/sweep.md).");
  c->add_flag("--check", f->check, "verify only: exit 1 if a GPU is not back to its original state");
  c->add_option("--journal-dir", f->dir, "journal folder (default: $JOULEPROF_CONTROL_DIR, else /var/lib/jouleprof/control "
                                        "for root, else ~/.local/state/jouleprof/control)");
  c->add_flag("--include-running", f->include_running,
              "also restore GPUs whose jouleprof still runs (it will find its GPUs changed back)");
  c->add_option("--nvml-lib", f->nvml_lib,
                "NVML library the restore drives (default: $JOULEPROF_NVML_LIB, else libnvidia-ml.so.1; never the one a "
                "journal names)");
  add_json_option(c, f->json, "write the outcome as JSON (schemas/restore.schema.json)");
  c->add_flag("-q,--quiet", f->quiet, "print only problems");
  return [f] { return run(*f); };
}

const bool registered = register_command(add_restore);

}  // namespace
}  // namespace jouleprof::cli
