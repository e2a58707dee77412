// `jouleprof runs list|show|compare|export|import|rm`: the run store (docs/store.md).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "db_option.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/core/files.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "options.hpp"
#include "jouleprof/workloads/bench_llm.hpp"
#include "jouleprof/workloads/bench_record.hpp"
#include "jouleprof/core/units.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/result/sections.hpp"
#include "jouleprof/control/slurm.hpp"
#include "jouleprof/store/compare.hpp"
#include "jouleprof/result/result_io.hpp"
#include "jouleprof/store/run_source.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::cli {
namespace {

using nlohmann::json;

struct RunsFlags {
  std::string db;
  // list
  std::vector<std::string> tags;
  std::string command, gpu, since, until;
  int limit = 0;
  std::string json_out;  ///< --json [FILE] of list/show/compare ('-': stdout)
  // show / compare / export / rm
  std::vector<std::string> refs;
  std::string phase;
  bool timelines = false;
  std::string json_file, csv_file;
  bool no_timelines = false;
  // import
  std::vector<std::string> files;
  std::string timeline_csv;
  std::vector<std::string> import_tags;
  bool allow_duplicate = false;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<std::pair<std::string, std::string>> parse_tag(const std::string& t, bool allow_key_only) {
  const auto eq = t.find('=');
  if (eq == std::string::npos && allow_key_only && !t.empty()) return std::pair<std::string, std::string>{t, "*"};
  if (eq == std::string::npos || eq == 0) return make_error(Errc::invalid_argument, "--tag needs KEY=VALUE, got '" + t + "'");
  return std::pair<std::string, std::string>{t.substr(0, eq), t.substr(eq + 1)};
}

std::string join_command(const std::vector<std::string>& c) {
  std::string s;
  for (const auto& a : c) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string tags_text(const std::map<std::string, std::string>& tags) {
  std::string s;
  for (const auto& [k, v] : tags) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

std::string gpus_text(const std::vector<std::string>& names) {
  if (names.empty()) return "-";
  bool same = true;
  for (const auto& n : names) same = same && n == names.front();
  if (same) return names.size() == 1 ? names.front() : fmt::format("{}x {}", names.size(), names.front());
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

json summary_json(const RunSummary& r) {
  return {{"schema_version", 1},
          {"id", r.id},
          {"started_at_utc", r.started_at_utc},
          {"recorded_at_utc", r.recorded_at_utc},
          {"command", r.command},
          {"tags", r.tags},
          {"host", r.host},
          {"gpus", r.gpu_names},
          {"simulated", r.simulated},
          {"status", r.status},
          {"source", r.source},
          {"duration_s", r.duration_s},
          {"measured_runs", r.measured_runs},
          {"gpu_energy_j", r.gpu_energy_j ? json(*r.gpu_energy_j) : json(nullptr)},
          {"gpu_energy_ci95_j", r.gpu_energy_ci95_j ? json(*r.gpu_energy_ci95_j) : json(nullptr)},
          {"run_duration_s", r.run_duration_s ? json(*r.run_duration_s) : json(nullptr)}};
}

Result<Store> open_store(const RunsFlags& f, Store::Mode mode) { return Store::open(resolve_db_path(f.db), mode); }

int cmd_list(const RunsFlags& f) {
  RunFilter filter;
  for (const auto& t : f.tags) {
    auto kv = parse_tag(t, true);
    if (!kv) return report(kv.error());
    filter.tags.push_back(*kv);
  }
  filter.command_contains = f.command;
  filter.gpu_contains = f.gpu;
  filter.limit = f.limit;
  if (!f.since.empty()) {
    auto t = parse_time_filter(f.since, now_ns());
    if (!t) return report(t.error());
    filter.since_ns = *t;
  }
  if (!f.until.empty()) {
    auto t = parse_time_filter(f.until, now_ns());
    if (!t) return report(t.error());
    filter.until_ns = *t;
  }
  auto store = open_store(f, Store::Mode::read);
  if (!store) return report(store.error());
  auto runs = store->list(filter);
  if (!runs) return report(runs.error());
  if (!f.json_out.empty()) {
    json arr = json::array();
    for (const auto& r : *runs) arr.push_back(summary_json(r));
    if (auto w = write_output(f.json_out, arr.dump(2) + "\n"); !w) return report(w.error());
    return 0;
  }
  if (runs->empty()) {
    std::cerr << "jouleprof: no runs match in " << store->path() << "\n";
    return 0;
  }
  // The sweep a run belongs to gets its own column (the id `sweep --report` takes), not a place among the tags.
  const bool any_sweep = std::any_of(runs->begin(), runs->end(), [](const auto& r) { return r.tags.count("sweep") != 0; });
  fmt::print("{:>5}  {:<20} {:<30} {:>4} {:>20} {:>9}  {}{}\n", "id", "started (UTC)", "GPUs", "runs", "GPU energy/run J",
             "time/run", any_sweep ? fmt::format("{:<20} ", "sweep") : "", "tags · command");
  for (auto r : *runs) {
    std::string sweep;
    if (any_sweep) {
      const auto it = r.tags.find("sweep");
      sweep = fmt::format("{:<20} ", it == r.tags.end() ? "-" : for_terminal(it->second));
      if (it != r.tags.end()) r.tags.erase(it);
    }
    std::string energy = "-";
    if (r.gpu_energy_j) {
      energy = r.gpu_energy_ci95_j ? fmt::format("{:.1f} ± {:.1f}", *r.gpu_energy_j, *r.gpu_energy_ci95_j)
                                   : fmt::format("{:.1f}", *r.gpu_energy_j);
    }
    std::string gpus = gpus_text(r.gpu_names);
    if (gpus.size() > 30) gpus = gpus.substr(0, 29) + "~";
    std::string status = r.status == "complete" ? "" : " [" + r.status + "]";
    fmt::print("{:>5}  {:<20} {:<30} {:>4} {:>20} {:>9}  {}{}{}{}{}\n", r.id, r.started_at_utc, gpus, r.measured_runs, energy,
               r.run_duration_s ? fmt::format("{:.3f} s", *r.run_duration_s) : "-", sweep, tags_text(r.tags),
               r.tags.empty() ? "" : " · ", join_command(r.command), status);
  }
  return 0;
}

int cmd_show(const RunsFlags& f) {
  auto store = open_store(f, Store::Mode::read);
  if (!store) return report(store.error());
  // JSON: one array of result documents, however many runs (docs/cli.md).
  std::string docs;
  const bool as_json = !f.json_out.empty();
  for (const std::string& ref : f.refs) {
    auto id = resolve_run_ref(*store, ref);
    if (!id) return report(id.error());
    auto m = store->load(*id, as_json && f.timelines);
    if (!m) return report(m.error());
    auto s = store->summary(*id);
    if (!s) return report(s.error());
    if (as_json) {
      docs += std::string(docs.empty() ? "[\n" : ",\n") + (f.timelines ? result_to_json_with_timelines(*m, -1) : result_to_json(*m, 2));
      continue;
    }
    fmt::print("run {} — stored {} from {}\n", *id, s->recorded_at_utc, s->source);
    fmt::print("  started {} on {}, command: {}\n", s->started_at_utc, s->host, join_command(s->command));
    if (!s->tags.empty()) fmt::print("  tags: {}\n", tags_text(s->tags));
    print_summary(*m, std::cout);
    // Sections of producers (a `bench llm` configuration ...) through their registered renderers.
    print_sections(*m, std::cout);
  }
  if (as_json) {
    if (auto w = write_output(f.json_out, docs + "\n]\n"); !w) return report(w.error());
  }
  return 0;
}

std::string fmt_value(const std::optional<Summary>& s) {
  if (!s) return "-";
  if (s->n >= 2) return fmt::format("{:.4g} ± {:.2g}", s->mean, s->ci95_half_width);
  return fmt::format("{:.4g}", s->mean);
}

int cmd_compare(const RunsFlags& f) {
  auto runs = load_runs(f.refs, f.db, false);
  if (!runs) return report(runs.error());
  std::vector<const Measurement*> ms;
  for (const auto& r : *runs) ms.push_back(&r.m);
  const Comparison c = compare_runs(ms, f.phase);
  if (c.keys.empty()) {
    return report(make_error(Errc::invalid_argument, f.phase.empty() ? "the runs have no measured repeats to compare"
                                                                     : "no run has a phase named '" + f.phase + "'"));
  }
  if (!f.json_out.empty()) {
    json out = json::array();
    for (std::size_t r = 0; r < runs->size(); ++r) {
      json vals = json::object();
      for (std::size_t k = 0; k < c.keys.size(); ++k) {
        const CompareCell& cell = c.cells[r][k];
        if (!cell.value) continue;
        json v = {{"n", cell.value->n}, {"mean", cell.value->mean}, {"ci95_half_width", cell.value->ci95_half_width}};
        if (cell.diff) v["diff"] = *cell.diff;
        if (cell.diff_rel) v["diff_relative"] = *cell.diff_rel;
        v["significant_95"] = cell.significant ? json(*cell.significant) : json(nullptr);
        vals[c.keys[k]] = v;
      }
      out.push_back({{"schema_version", 1},
                     {"run", (*runs)[r].id != 0 ? json((*runs)[r].id) : json((*runs)[r].label)},
                     {"baseline", r == 0},
                     {"tags", (*runs)[r].m.tags},
                     {"values", vals}});
    }
    if (auto w = write_output(f.json_out, out.dump(2) + "\n"); !w) return report(w.error());
    return 0;
  }
  fmt::print("baseline: {}{}; ± is the 95% CI over repeats; '*' marks a difference beyond it (Welch t-test, 95%)\n",
             (*runs)[0].label, f.phase.empty() ? "" : ", phase " + f.phase);
  std::string header = fmt::format("{:<36}", "quantity");
  for (const auto& r : *runs) header += fmt::format(" {:>24}", r.label);
  fmt::print("{}\n", header);
  std::string tagrow = fmt::format("{:<36}", "tags");
  bool any_tags = false;
  for (const auto& r : *runs) {
    std::string t = tags_text(r.m.tags);
    any_tags = any_tags || !t.empty();
    if (t.size() > 24) t = t.substr(0, 23) + "~";
    tagrow += fmt::format(" {:>24}", t);
  }
  if (any_tags) fmt::print("{}\n", tagrow);
  for (std::size_t k = 0; k < c.keys.size(); ++k) {
    std::string row = fmt::format("{:<36}", c.keys[k]);
    for (std::size_t r = 0; r < runs->size(); ++r) {
      const CompareCell& cell = c.cells[r][k];
      std::string v = fmt_value(cell.value);
      if (cell.diff_rel) v += fmt::format(" ({:+.1f}%{})", 100 * *cell.diff_rel, cell.significant.value_or(false) ? "*" : "");
      row += fmt::format(" {:>24}", v);
    }
    fmt::print("{}\n", row);
  }
  return 0;
}

int cmd_export(const RunsFlags& f) {
  if (f.json_file.empty() == f.csv_file.empty()) {
    return report(make_error(Errc::invalid_argument, "runs export needs one of --json FILE or --csv FILE ('-': stdout)"));
  }
  auto runs = load_runs(f.refs, f.db, !f.json_file.empty() && !f.no_timelines);
  if (!runs) return report(runs.error());
  std::string text;
  if (!f.json_file.empty()) {
    auto doc = [&](const Measurement& m) {
      return f.no_timelines ? result_to_json(m, -1) : result_to_json_with_timelines(m, -1);
    };
    // One array of result documents, however many runs (docs/cli.md); runs import reads it.
    text = "[\n";
    for (std::size_t i = 0; i < runs->size(); ++i) text += doc((*runs)[i].m) + (i + 1 < runs->size() ? ",\n" : "\n");
    text += "]\n";
  } else {
    // For pandas: one column per tag ("tag:KEY") and per count ("count:KEY" and its
    // "energy_per_KEY_j", the row's GPU energy divided by the count), over all runs exported.
    std::vector<std::string> tag_keys, count_keys;
    auto add_key = [](std::vector<std::string>& keys, const std::string& k) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    };
    for (const auto& r : *runs) {
      for (const auto& [k, v] : r.m.tags) add_key(tag_keys, k);
      for (const WindowResult& w : r.m.windows) {
        for (const auto& [k, v] : w.counts) add_key(count_keys, k);
      }
    }
    std::sort(tag_keys.begin(), tag_keys.end());
    std::sort(count_keys.begin(), count_keys.end());
    text = "run";
    for (const auto& k : tag_keys) text += "," + csv_field("tag:" + k);
    text += ",command,window,kind,run_index,t0_s,t1_s,duration_s,status,gpu,energy_j,method,uncertainty_j,above_idle_j,mean_power_w";
    for (const auto& k : count_keys) text += "," + csv_field("count:" + k) + "," + csv_field("energy_per_" + per_unit_name(k) + "_j");
    text += "\n";
    for (const auto& r : *runs) {
      const std::string id = r.id != 0 ? std::to_string(r.id) : r.label;
      std::string tags;
      for (const auto& k : tag_keys) {
        const auto it = r.m.tags.find(k);
        tags += "," + (it == r.m.tags.end() ? std::string() : csv_field(it->second));
      }
      for (const WindowResult& w : r.m.windows) {
        for (std::size_t g = 0; g < w.gpus.size(); ++g) {
          const GpuEnergy& e = w.gpus[g];
          std::string counts;
          for (const auto& k : count_keys) {
            const auto it = w.counts.find(k);
            if (it == w.counts.end() || it->second <= 0) {
              counts += ",,";
            } else {
              counts += fmt::format(",{},{}", it->second, e.energy_j / it->second);
            }
          }
          text += fmt::format("{}{},{},{},{},{},{:.6f},{:.6f},{:.6f},{},{},{},{},{},{},{}{}\n", csv_field(id), tags,
                              csv_field(join_command(r.m.command)), csv_field(w.name), w.kind, w.run, w.t0_s, w.t1_s,
                              w.duration_s(), w.complete ? "complete" : "incomplete",
                              g < r.m.gpus.size() ? r.m.gpus[g].index : static_cast<int>(g), e.energy_j, e.method,
                              e.uncertainty_j, e.above_idle_j ? fmt::format("{}", *e.above_idle_j) : "", e.mean_power_w,
                              counts);
        }
      }
    }
  }
  if (auto w = write_output(f.json_file.empty() ? f.csv_file : f.json_file, text); !w) return report(w.error());
  return 0;
}

int cmd_import(const RunsFlags& f) {
  std::vector<std::pair<std::string, std::string>> extra_tags;
  for (const auto& t : f.import_tags) {
    auto kv = parse_tag(t, false);
    if (!kv) return report(kv.error());
    extra_tags.push_back(*kv);
  }
  if (!f.timeline_csv.empty() && f.files.size() != 1) {
    return report(make_error(Errc::invalid_argument, "--timeline goes with exactly one result file"));
  }
  // Read and check everything first: a bad file leaves the store untouched.
  std::vector<std::pair<std::string, Measurement>> all;
  for (const std::string& file : f.files) {
    auto docs = read_result_documents(file);
    if (!docs) return report(docs.error());
    for (auto& doc : *docs) {
      if (!f.timeline_csv.empty()) {
        if (auto r = read_timeline_csv(f.timeline_csv, doc); !r) return report(r.error());
      }
      // A `bench llm --json` sweep becomes one run per configuration, as bench llm records it.
      std::vector<Measurement> parts;
      if (llm::is_bench_sweep(doc)) {
        auto split = llm::split_bench_sweep(doc);
        if (!split) return report(make_error(split.error().code, file + ": " + split.error().message));
        parts = std::move(*split);
      } else {
        parts.push_back(std::move(doc));
      }
      for (auto& m : parts) {
        for (const auto& [k, v] : extra_tags) m.tags[k] = v;
        all.emplace_back(file, std::move(m));
      }
    }
  }
  auto store = open_store(f, Store::Mode::write);
  if (!store) return report(store.error());
  for (const auto& [file, m] : all) {
    StoreOptions o;
    o.source = "import:" + file;
    o.allow_duplicate = f.allow_duplicate;
    auto id = store->insert(m, o);
    if (!id) return report(id.error());
    fmt::print("imported {} as run {} ({} samples)\n", file, *id, timeline_sample_count(m));
  }
  return 0;
}

int cmd_rm(const RunsFlags& f) {
  auto store = open_store(f, Store::Mode::read);
  if (!store) return report(store.error());
  std::vector<int64_t> ids;
  for (const auto& ref : f.refs) {
    auto id = resolve_run_ref(*store, ref);
    if (!id) return report(id.error());
    // "rm 1 1" or "rm 3 last": each run once (a second removal would find it gone).
    if (std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  if (auto r = store->remove(ids); !r) return report(r.error());
  for (int64_t id : ids) fmt::print("removed run {}\n", id);
  return 0;
}

// `runs merge TASK.db...`: the stores of a SLURM sweep's tasks into this one (issue 17).
int cmd_merge(const RunsFlags& f) {
  auto out = control::merge_run_stores(resolve_db_path(f.db), f.files);
  if (!out) return report(out.error());
  for (const auto& m : *out) fmt::print(stderr, "jouleprof: {}: {} runs merged, {} already stored\n", m.file, m.merged, m.duplicates);
  return 0;
}

Runner add_runs(CLI::App& app) {
  auto f = std::make_shared<RunsFlags>();
  CLI::App* c = app.add_subcommand("runs", "The run store: list, show, compare, export, import and remove runs");
  c->require_subcommand(1);
  c->add_option("--db", f->db, kDbOptionHelp);
  c->footer(
      "RUN is a run id, 'last' (the newest run) or 'last~N'; compare and export also take result JSON files.\n"
      "Examples:\n"
      "  jouleprof runs list --tag model=llama-3.2-1b --since 7d\n"
      "  jouleprof runs compare 12 13 14 --phase decode\n"
      "  jouleprof runs export last --json run.json && jouleprof runs --db other.db import run.json");

  CLI::App* list = c->add_subcommand("list", "List stored runs (oldest first)");
  list->add_option("--tag", f->tags, "KEY=VALUE (or KEY: any value) the run must have (repeatable)");
  list->add_option("--command", f->command, "substring of the command line");
  list->add_option("--gpu", f->gpu, "substring of a GPU's name, UUID or PCI id (case-insensitive)");
  list->add_option("--since", f->since, "started at or after: YYYY-MM-DD[THH:MM[:SS]] (UTC) or an age: 30m, 12h, 7d");
  list->add_option("--until", f->until, "started before (same forms as --since)");
  checked(list->add_option("-n,--limit", f->limit, "only the newest N runs (0: all)"), IntRange{.min = 0});
  add_json_option(list, f->json_out, "JSON array of run summaries");

  CLI::App* show = c->add_subcommand("show", "Show runs in full");
  show->add_option("run", f->refs, "RUN...")->required();
  add_json_option(show, f->json_out, "JSON array of the runs' result documents");
  show->add_flag("--timelines", f->timelines, "with --json: include every sample");

  CLI::App* cmp = c->add_subcommand("compare", "Compare runs against the first: energy, time, power, energy per count");
  cmp->add_option("run", f->refs, "RUN... (the first is the baseline)")->required()->expected(2, -1);
  cmp->add_option("--phase", f->phase, "compare this phase instead of whole runs");
  add_json_option(cmp, f->json_out, "JSON array, one object per run");

  CLI::App* exp = c->add_subcommand("export", "Write runs as result JSON (with timelines) or as a CSV of window energies");
  exp->add_option("run", f->refs, "RUN...")->required();
  exp->add_option("--json", f->json_file, "a JSON array of result documents here ('-': stdout)");
  exp->add_option("--csv", f->csv_file, "one row per run, window and GPU here ('-': stdout); a column per tag and per count");
  exp->add_flag("--no-timelines", f->no_timelines, "leave the samples out of the JSON");

  CLI::App* imp = c->add_subcommand("import", "Store result JSON files made elsewhere (measure --json, runs export)");
  imp->add_option("file", f->files, "FILE.json...")->required()->check(CLI::ExistingFile);
  imp->add_option("--timeline", f->timeline_csv, "the timeline CSV written with the result (measure --timeline)")
      ->check(CLI::ExistingFile);
  imp->add_option("--tag", f->import_tags, "KEY=VALUE added to the imported runs (repeatable)");
  imp->add_flag("--allow-duplicate", f->allow_duplicate, "store a run that is already stored");

  CLI::App* rm = c->add_subcommand("rm", "Remove runs (all or none)");
  rm->add_option("run", f->refs, "RUN...")->required();

  CLI::App* merge = c->add_subcommand("merge", "Copy every run of other run stores (e.g. a SLURM sweep's task-*.db) into this one");
  merge->add_option("file", f->files, "STORE.db...")->required()->check(CLI::ExistingFile);

  return [f, list, show, cmp, exp, imp, rm, merge] {
    if (merge->parsed()) return cmd_merge(*f);
    if (list->parsed()) return cmd_list(*f);
    if (show->parsed()) return cmd_show(*f);
    if (cmp->parsed()) return cmd_compare(*f);
    if (exp->parsed()) return cmd_export(*f);
    if (imp->parsed()) return cmd_import(*f);
    if (rm->parsed()) return cmd_rm(*f);
    return kExitUsage;
  };
}

const bool registered = register_command(add_runs);

}  // namespace
}  // namespace jouleprof::cli
