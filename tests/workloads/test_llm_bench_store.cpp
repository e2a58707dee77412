// `bench llm` results in the run store: one run per configuration, split in-process and through
// the CLI (simulated engine), recorded from jouleprof-llm's JSON (a fake jouleprof-llm named by
// $JOULEPROF_LLM), --no-store, an unwritable --db, an interrupted sweep, runs import/compare.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../common/run_program.hpp"
#include "../common/wait_for_text.hpp"
#include "jouleprof/workloads/bench_llm.hpp"
#include "jouleprof/workloads/bench_record.hpp"
#include "jouleprof/result/result_io.hpp"
#include "jouleprof/core/uuid.hpp"

using namespace jouleprof;
using namespace jouleprof::llm;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class BenchStore : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jp-bench-store-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  struct Cli {
    int code = -1;
    std::string out, err;
  };
  /// Runs jouleprof in the test's folder with JOULEPROF_DB=<dir>/default.db plus `env`;
  /// `while_running` gets the pid.
  Cli cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
          const std::function<void(pid_t)>& while_running = nullptr) const {
    std::vector<std::string> all{"JOULEPROF_DB=" + path("default.db")};
    all.insert(all.end(), env.begin(), env.end());
    const auto r = jp_test::run_program(JOULEPROF_CLI, args, all, dir_, path("cli.out"), path("cli.err"), [&](pid_t pid) {
      if (while_running) while_running(pid);
    });
    return Cli{r.exit_code, r.out, r.err};
  }
  static std::string slurp(const std::string& p) { return jp_test::slurp_file(p); }
  static json read_json(const std::string& p) {
    std::ifstream in(p);
    return json::parse(in);
  }
  /// `runs ... --json` output, parsed.
  json runs_json(const std::vector<std::string>& args) const {
    auto r = cli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }
  /// A quick simulated sweep (list flags must not repeat: CLI11 would append).
  static std::vector<std::string> small_sweep(const std::string& batch, const std::string& prompt, std::vector<std::string> extra = {},
                                              const std::string& min_seconds = "0.05") {
    std::vector<std::string> a{"bench", "llm", "--device", "sim", "--model", "tiny", "--batch", batch, "--prompt", prompt,
                               "--gen", "8", "--min-seconds", min_seconds, "--iso-seconds", "0.02", "--idle", "0.2", "-q"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string dir_;
};

const json* window_named(const json& result, const std::string& name) {
  for (const auto& w : result["windows"]) {
    if (w["name"] == name) return &w;
  }
  return nullptr;
}

TEST_F(BenchStore, SplitGivesOneRunPerConfigurationOnItsOwnTimeBase) {
  BenchOptions o;
  o.device = "sim";
  o.models = {"tiny"};
  o.dtypes = {"bf16", "fp16"};
  o.gens = {4, 6};
  o.prompts = {16};
  o.min_seconds = 0.05;
  o.iso_seconds = 0.02;
  o.idle_s = 0.2;
  auto r = run_bench(o, sim_engine_factory(), nullptr);
  ASSERT_TRUE(r) << r.error().message;
  const Measurement& sweep = r->measurement;
  ASSERT_TRUE(sweep.complete);
  ASSERT_EQ(r->llm["points"].size(), 4u);  // 2 dtypes x 2 generation lengths
  ASSERT_TRUE(is_bench_sweep(sweep));
  // Window names carry the swept dtype and generation length; one run window per configuration.
  bool named = false;
  for (const auto& w : sweep.windows) named = named || w.name == "tiny/fp16/b1/p16/g6/decode";
  EXPECT_TRUE(named);
  EXPECT_TRUE(sweep.runs.empty());  // no statistics across configurations
  EXPECT_EQ(std::count_if(sweep.windows.begin(), sweep.windows.end(), [](const WindowResult& w) { return w.kind == "run"; }), 4);

  auto parts = split_bench_sweep(sweep);
  ASSERT_TRUE(parts) << parts.error().message;
  ASSERT_EQ(parts->size(), 4u);
  std::set<int64_t> origins;
  std::set<std::string> uuids;
  ASSERT_TRUE(is_uuid(sweep.run_uuid)) << sweep.run_uuid;
  auto split_again = split_bench_sweep(sweep);
  ASSERT_TRUE(split_again);
  for (std::size_t k = 0; k < parts->size(); ++k) {
    const Measurement& m = (*parts)[k];
    const json& p = r->llm["points"][k];
    EXPECT_TRUE(m.complete);
    EXPECT_FALSE(is_bench_sweep(m));
    origins.insert(m.origin_realtime_ns);
    // Each configuration is a run of its own, the same one each time the sweep is split.
    EXPECT_TRUE(is_uuid(m.run_uuid)) << m.run_uuid;
    EXPECT_NE(m.run_uuid, sweep.run_uuid);
    EXPECT_EQ(m.run_uuid, (*split_again)[k].run_uuid);
    uuids.insert(m.run_uuid);
    EXPECT_EQ(m.tags.at("bench"), "llm");
    EXPECT_EQ(m.tags.at("dtype"), p["dtype"].get<std::string>());
    EXPECT_EQ(m.tags.at("gen"), p["gen"].dump());
    EXPECT_EQ(m.tags.at("device"), "sim");
    ASSERT_EQ(m.runs.size(), 1u);
    ASSERT_FALSE(m.windows.empty());
    EXPECT_EQ(m.windows[0].name, "run");
    EXPECT_EQ(m.windows[0].kind, "run");
    EXPECT_NEAR(m.windows[0].t0_s, 0.25, 1e-9);
    // The same energies as the sweep's windows, renamed and renumbered.
    const std::string base = sweep.windows[static_cast<std::size_t>(p["run_window"].get<int>())].name;
    for (const auto& w : m.windows) {
      EXPECT_GE(w.t0_s, 0.0);
      EXPECT_LE(w.t1_s, m.duration_s + 1e-9);
      if (w.name == "run") continue;
      const auto it = std::find_if(sweep.windows.begin(), sweep.windows.end(),
                                   [&](const WindowResult& x) { return x.name == base + "/" + w.name; });
      ASSERT_NE(it, sweep.windows.end()) << w.name;
      EXPECT_EQ(w.gpu_energy_j, it->gpu_energy_j) << w.name;
      EXPECT_EQ(w.counts, it->counts);
    }
    const json section = json::parse(m.sections.at("llm"));
    EXPECT_EQ(section["configuration"]["index"], k);
    EXPECT_EQ(section["configuration"]["of"], 4);
    const json& q = section["points"][0];
    const auto& dec = m.windows.at(q["decode"]["window"].get<std::size_t>());
    EXPECT_EQ(dec.name, "decode");
    EXPECT_EQ(dec.kind, "phase");
    EXPECT_EQ(q["decode"]["j_per_token"], p["decode"]["j_per_token"]);
    EXPECT_EQ(m.windows.at(q["components"][0]["window"].get<std::size_t>()).name, "component/attn_qkv");
    // Samples of this configuration only, on its time base.
    ASSERT_EQ(m.timelines.size(), 1u);
    const auto power = m.timelines[0]->series[static_cast<std::size_t>(Metric::power_sample_w)].all();
    ASSERT_GT(power.size(), 5u);
    EXPECT_GE(power.front().t_s, 0.0);
    EXPECT_LE(power.back().t_s, m.duration_s + 1e-9);
    // Statistics over its one run: the run window's energy.
    ASSERT_FALSE(m.stats.empty());
    EXPECT_EQ(m.stats[0].what, "gpu_energy_j");
    EXPECT_EQ(m.stats[0].summary.mean, m.windows[0].gpu_energy_j);
  }
  EXPECT_EQ(origins.size(), 4u);  // distinct start times
  EXPECT_EQ(uuids.size(), 4u);    // distinct runs in the store
}

TEST_F(BenchStore, SweepIsStoredWithTagsAndTheJsonNumbers) {
  const std::string db = path("runs.db");
  auto r = cli(small_sweep("1,2", "16,32", {"--db", db, "--json", "b.json", "--tag", "who=ci"}));
  ASSERT_EQ(r.code, 0) << r.err;
  const json sweep = read_json(path("b.json"));
  ASSERT_EQ(sweep["llm"]["points"].size(), 4u);
  EXPECT_EQ(sweep.count("timelines"), 0u);  // the user's JSON is as before: no samples

  const json list = runs_json({"runs", "--db", db, "list", "--tag", "bench=llm", "--json"});
  ASSERT_EQ(list.size(), 4u);
  for (std::size_t k = 0; k < 4; ++k) {
    const json& run = list[k];
    const json& p = sweep["llm"]["points"][k];
    EXPECT_EQ(run["status"], "complete");
    EXPECT_TRUE(run["simulated"].get<bool>());
    EXPECT_EQ(run["source"], "bench llm");
    const json& tags = run["tags"];
    EXPECT_EQ(tags["model"], "tiny");
    EXPECT_EQ(tags["dtype"], "bf16");
    EXPECT_EQ(tags["batch"], p["batch"].dump());
    EXPECT_EQ(tags["prompt"], p["prompt"].dump());
    EXPECT_EQ(tags["gen"], "8");
    EXPECT_EQ(tags["device"], "sim");
    EXPECT_EQ(tags["variant"], "auto");
    EXPECT_EQ(tags["who"], "ci");
    EXPECT_EQ(tags["workload"], "bench-llm");
    // The stored run's figures are the JSON's, bit for bit.
    const json shown = runs_json({"runs", "--db", db, "show", std::to_string(run["id"].get<int>()), "--json"}).at(0);
    const json& q = shown["llm"]["points"][0];
    for (const char* phase : {"prefill", "decode"}) {
      for (const char* key : {"j_per_token", "above_idle_j_per_token", "tokens_per_s", "mean_power_w", "energy_j"}) {
        EXPECT_EQ(q[phase][key], p[phase][key]) << phase << "." << key;
      }
      const json* w = window_named(shown, phase);
      ASSERT_NE(w, nullptr);
      EXPECT_EQ((*w)["kind"], "phase");
      EXPECT_EQ((*w)["gpu_energy_j"], p[phase]["energy_j"]);
      EXPECT_EQ((*w)["counts"]["tokens"], p[phase]["tokens"]);
    }
    ASSERT_EQ(q["components"].size(), p["components"].size());
    for (std::size_t c = 0; c < q["components"].size(); ++c) {
      EXPECT_EQ(q["components"][c]["j_per_token"], p["components"][c]["j_per_token"]);
    }
    // The command reruns this configuration alone, without the sweep's output file.
    const auto cmd = run["command"].get<std::vector<std::string>>();
    const auto at = [&](const std::string& flag) { return *(std::find(cmd.begin(), cmd.end(), flag) + 1); };
    EXPECT_EQ(at("--batch"), p["batch"].dump());
    EXPECT_EQ(at("--prompt"), p["prompt"].dump());
    EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "--json"), cmd.end());
  }
  // runs show prints the benchmark's table; runs export keeps the samples and the section.
  auto show = cli({"runs", "--db", db, "show", "last"});
  EXPECT_NE(show.out.find("bench llm:"), std::string::npos);
  EXPECT_NE(show.out.find("mlp_gate_up"), std::string::npos);
  auto exp = cli({"runs", "--db", db, "export", "1", "--json", "-"});
  ASSERT_EQ(exp.code, 0) << exp.err;
  const json exported = json::parse(exp.out).at(0);  // an array, whatever the count
  EXPECT_FALSE(exported["timelines"].empty());
  EXPECT_EQ(exported["llm"]["points"][0]["decode"]["j_per_token"], sweep["llm"]["points"][0]["decode"]["j_per_token"]);
  auto csv = cli({"runs", "--db", db, "export", "1", "2", "--csv", "-"});
  EXPECT_NE(csv.out.find(",decode,phase,"), std::string::npos);

  // compare: decode J/token of batch 1 against batch 2 (the same prompt).
  const json cmp = runs_json({"runs", "--db", db, "compare", "1", "3", "--phase", "decode", "--json"});
  ASSERT_EQ(cmp.size(), 2u);
  const char* key = "phase:decode:gpu_energy_per_token_j";
  ASSERT_TRUE(cmp[1]["values"].contains(key)) << cmp.dump();
  EXPECT_EQ(cmp[0]["values"][key]["mean"], sweep["llm"]["points"][0]["decode"]["j_per_token"]);
  EXPECT_EQ(cmp[1]["values"][key]["mean"], sweep["llm"]["points"][2]["decode"]["j_per_token"]);
  EXPECT_TRUE(cmp[1]["values"][key].contains("diff_relative"));
  auto plain = cli({"runs", "--db", db, "compare", "1", "3"});
  EXPECT_EQ(plain.code, 0) << plain.err;

  // The report shows the scaling charts.
  auto rep = cli({"report", "1", "2", "3", "4", "--db", db, "-o", "bench.html", "-q"});
  ASSERT_EQ(rep.code, 0) << rep.err;
  const std::string html = slurp(path("bench.html"));
  for (const char* id : {"bench-energy-prompt", "bench-energy-batch", "bench-throughput-batch", "bench-components"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  // The sweep's JSON file reports the same way, and imports as one run per configuration.
  auto rep2 = cli({"report", "b.json", "-o", "file.html", "-q"});
  ASSERT_EQ(rep2.code, 0) << rep2.err;
  EXPECT_NE(slurp(path("file.html")).find("id=\"bench-energy-prompt\""), std::string::npos);
  const std::string db2 = path("imported.db");
  auto imp = cli({"runs", "--db", db2, "import", "b.json"});
  ASSERT_EQ(imp.code, 0) << imp.err;
  const json imported = runs_json({"runs", "--db", db2, "list", "--tag", "bench=llm", "--json"});
  ASSERT_EQ(imported.size(), 4u);
  EXPECT_EQ(imported[3]["tags"]["batch"], "2");
  auto again = cli({"runs", "--db", db2, "import", "b.json"});
  EXPECT_NE(again.code, 0);
  EXPECT_NE(again.err.find("already stored"), std::string::npos);
  // The configurations bench llm recorded are the ones its JSON file splits into.
  auto recorded = cli({"runs", "--db", db, "import", "b.json"});
  EXPECT_NE(recorded.code, 0);
  EXPECT_NE(recorded.err.find("already stored"), std::string::npos) << recorded.err;
}

TEST_F(BenchStore, NoStoreStoresNothing) {
  auto r = cli(small_sweep("1", "16", {"--no-store", "--json", "b.json"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(path("b.json")));
  EXPECT_FALSE(fs::exists(path("default.db")));
  // Without --no-store the default store ($JOULEPROF_DB) gets it.
  auto s = cli(small_sweep("1", "16"));
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_TRUE(fs::exists(path("default.db")));
}

TEST_F(BenchStore, UnwritableDbIsOneLineButTableAndJsonAreWritten) {
  std::ofstream(path("file")) << "not a folder\n";
  auto r = cli(small_sweep("1", "16", {"--db", path("file") + "/runs.db", "--json", "b.json"}));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("SIMULATED"), std::string::npos);  // the table
  EXPECT_NE(r.out.find("decode"), std::string::npos);
  EXPECT_TRUE(fs::exists(path("b.json")));
  EXPECT_EQ(read_json(path("b.json"))["llm"]["points"].size(), 1u);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("jouleprof: error: ", 0), 0u) << r.err;
  // Without --json the result is kept in a file to import later.
  auto k = cli(small_sweep("1", "16", {"--db", path("file") + "/runs.db"}));
  EXPECT_NE(k.code, 0);
  const auto at = k.err.find("the result is kept in ");
  ASSERT_NE(at, std::string::npos) << k.err;
  const std::string kept = k.err.substr(at + 22, k.err.find(' ', at + 22) - at - 22);
  ASSERT_TRUE(fs::exists(kept)) << kept;
  auto imp = cli({"runs", "--db", path("later.db"), "import", kept});
  EXPECT_EQ(imp.code, 0) << imp.err;
  fs::remove(kept);
}

TEST_F(BenchStore, InterruptedSweepKeepsWhatWasMeasured) {
  const std::string db = path("runs.db");
  std::vector<std::string> args = small_sweep("1,2,3,4,5,6", "16", {"--db", db, "--json", "b.json"}, "0.2");
  args.erase(std::find(args.begin(), args.end(), "-q"));
  auto r = cli(args, {}, [&](pid_t pid) {
    // Ctrl-C once the second configuration is being measured (its progress line is in stderr).
    EXPECT_TRUE(jp_test::wait_for_text(path("cli.err"), "tiny/b2/p16: prefill", std::chrono::seconds(60)));
    kill(pid, SIGINT);
  });
  EXPECT_EQ(r.code, 130) << r.err;
  const json sweep = read_json(path("b.json"));
  EXPECT_EQ(sweep["status"], "incomplete");
  EXPECT_NE(sweep["incomplete_reason"].get<std::string>().find("signal 2"), std::string::npos);
  const auto& pts = sweep["llm"]["points"];
  ASSERT_GE(pts.size(), 2u);
  ASSERT_LT(pts.size(), 6u);
  EXPECT_EQ(pts[0]["status"], "complete");
  EXPECT_EQ(pts.back()["status"], "incomplete");
  const json list = runs_json({"runs", "--db", db, "list", "--json"});
  ASSERT_EQ(list.size(), pts.size());
  EXPECT_EQ(list[0]["status"], "complete");
  EXPECT_EQ(list.back()["status"], "incomplete");
  EXPECT_EQ(list.back()["tags"]["batch"], pts.back()["batch"].dump());
}

// A stand-in for jouleprof-llm: records its arguments, copies a known result to --json, exits
// with $FAKE_EXIT; with $FAKE_WAIT (a FIFO) it says "ready" there, then waits for SIGINT (and
// writes on it): a handshake, no polling.
void write_fake_llm(const std::string& script, const std::string& known, const std::string& args_file) {
  std::ofstream(script) << "#!/bin/sh\n"
                           "echo \"$@\" > '" << args_file << "'\n"
                           "out=''; prev=''\n"
                           "for a in \"$@\"; do [ \"$prev\" = --json ] && out=\"$a\"; prev=\"$a\"; done\n"
                           "if [ -n \"$FAKE_WAIT\" ]; then\n"
                           "  trap 'kill $holder 2>/dev/null; cp \"" << known << "\" \"$out\"; exit 130' INT\n"
                           "  sleep 3600 & holder=$!\n"  // a blocker, not a timer: `wait` returns on the trapped SIGINT
                           "  echo ready > \"$FAKE_WAIT\"\n"
                           "  wait $holder\n"
                           "fi\n"
                           "[ -n \"$FAKE_NO_RESULT\" ] || cp '" << known << "' \"$out\"\n"
                           "exit ${FAKE_EXIT:-0}\n";
  chmod(script.c_str(), 0755);
}

TEST_F(BenchStore, GpuPathRecordsWhatJouleprofLlmWrote) {
  // The known result: a simulated sweep with its samples, dressed as an H100 run.
  auto made = cli(small_sweep("1", "16,32", {"--no-store", "--json-timelines", "--json", "sim.json"}));
  ASSERT_EQ(made.code, 0) << made.err;
  json known = read_json(path("sim.json"));
  ASSERT_FALSE(known["timelines"].empty());
  known["llm"]["simulated"] = false;
  known["llm"]["device"] = "NVIDIA H100 80GB HBM3";
  std::ofstream(path("known.json")) << known.dump();
  write_fake_llm(path("fake-llm"), path("known.json"), path("args.txt"));
  const std::string env = "JOULEPROF_LLM=" + path("fake-llm");
  const std::string db = path("runs.db");

  auto r = cli({"bench", "llm", "--device", "nvml", "--model", "tiny", "--batch", "1", "--prompt", "16,32", "--gen", "8",
                "--db", db, "--json", "user.json"},
               {env});
  ASSERT_EQ(r.code, 0) << r.err;
  // jouleprof-llm got the sweep, a JSON path of ours and the request for samples.
  const std::string args = slurp(path("args.txt"));
  EXPECT_EQ(args.rfind("bench --model tiny --batch 1 --prompt 16,32 --gen 8 ", 0), 0u) << args;
  EXPECT_NE(args.find("--json-timelines"), std::string::npos);
  EXPECT_EQ(args.find("user.json"), std::string::npos);
  // The user's JSON is the child's document without the samples, with the user's command.
  json expect = known;
  expect.erase("timelines");
  json user = read_json(path("user.json"));
  const auto cmd = user["command"].get<std::vector<std::string>>();
  EXPECT_EQ(std::vector<std::string>(cmd.begin(), cmd.begin() + 5), (std::vector<std::string>{"jouleprof", "bench", "llm", "--model", "tiny"}));
  EXPECT_EQ(*(std::find(cmd.begin(), cmd.end(), "--json") + 1), "user.json");
  EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "--json-timelines"), cmd.end());
  user.erase("command");
  expect.erase("command");
  EXPECT_EQ(user, expect);
  EXPECT_EQ(slurp(path("user.json")), read_json(path("user.json")).dump(2) + "\n");
  // Recorded: one run per configuration, with the GPU's name and the samples.
  const json list = runs_json({"runs", "--db", db, "list", "--tag", "device=NVIDIA H100 80GB HBM3", "--json"});
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1]["tags"]["prompt"], "32");
  auto exp = cli({"runs", "--db", db, "export", std::to_string(list[1]["id"].get<int>()), "--json", "-"});
  const json run = json::parse(exp.out).at(0);
  EXPECT_FALSE(run["timelines"].empty());
  EXPECT_EQ(run["llm"]["points"][0]["decode"]["j_per_token"], known["llm"]["points"][1]["decode"]["j_per_token"]);

  // Its exit status is ours; without a result nothing is recorded, and one line says which
  // program failed (issue 35: the exit status alone, with no line, told the user nothing).
  auto fail = cli({"bench", "llm", "--device", "nvml", "--model", "tiny", "--db", path("none.db")},
                  {env, "FAKE_EXIT=3", "FAKE_NO_RESULT=1"});
  EXPECT_EQ(fail.code, 3);
  EXPECT_FALSE(fs::exists(path("none.db")));
  EXPECT_NE(fail.err.find("jouleprof: error: "), std::string::npos) << fail.err;
  EXPECT_NE(fail.err.find("failed (exit 3) before writing a result"), std::string::npos) << fail.err;
  EXPECT_EQ(std::count(fail.err.begin(), fail.err.end(), '\n'), 1) << fail.err;
  auto partial = cli({"bench", "llm", "--device", "nvml", "--model", "tiny", "--db", path("partial.db"), "-q"},
                     {env, "FAKE_EXIT=130"});
  EXPECT_EQ(partial.code, 130);
  EXPECT_EQ(runs_json({"runs", "--db", path("partial.db"), "list", "--json"}).size(), 2u);

  // SIGINT sent to jouleprof alone reaches jouleprof-llm, whose result is still recorded.
  const std::string ready = path("ready");
  ASSERT_EQ(mkfifo(ready.c_str(), 0600), 0);
  auto intr = cli({"bench", "llm", "--device", "nvml", "--model", "tiny", "--db", path("int.db"), "-q"},
                  {env, "FAKE_WAIT=" + ready}, [&](pid_t pid) {
                    std::string word;
                    std::ifstream(ready) >> word;  // blocks until the stand-in has its SIGINT trap set
                    EXPECT_EQ(word, "ready");
                    kill(pid, SIGINT);
                  });
  EXPECT_EQ(intr.code, 130) << intr.err;
  EXPECT_EQ(runs_json({"runs", "--db", path("int.db"), "list", "--json"}).size(), 2u);
}

}  // namespace
