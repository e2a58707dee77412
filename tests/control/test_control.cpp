// Control layer without a process boundary: planning, validation, journal format, permission
// wording, the simulated GPU's DVFS law.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "jouleprof/control/journal.hpp"
#include "jouleprof/control/sweep.hpp"
#include "jouleprof/sensors/sim_model.hpp"

namespace ctl = jouleprof::control;

namespace {

ctl::GpuCapabilities h100() {
  ctl::GpuCapabilities c;
  c.index = 0;
  c.uuid = "GPU-test";
  c.name = "H100";
  c.mem_clocks_mhz = jouleprof::sim_supported_mem_clocks();
  for (unsigned m : c.mem_clocks_mhz) c.gpu_clocks_mhz[m] = jouleprof::sim_supported_gpu_clocks(m);
  c.power_limit_min_mw = 200000;
  c.power_limit_max_mw = 700000;
  c.locked_clocks = c.mem_locked_clocks = c.power_limit = true;
  return c;
}

}  // namespace

TEST(Plan, ExpandsClockLists) {
  const auto sup = h100().all_gpu_clocks();
  ASSERT_EQ(sup.size(), 110U);
  EXPECT_EQ(sup.front(), 1980U);
  EXPECT_EQ(sup.back(), 345U);
  EXPECT_EQ(ctl::expand_clocks("all", sup)->size(), 110U);
  auto step = ctl::expand_clocks("step:40", sup);
  ASSERT_TRUE(step);
  EXPECT_EQ(*step, (std::vector<unsigned>{1980, 1380, 780, 345}));  // the lowest clock is always included
  EXPECT_EQ(*ctl::expand_clocks("1980,990", sup), (std::vector<unsigned>{1980, 990}));
  EXPECT_FALSE(ctl::expand_clocks("1980,abc", sup));
  EXPECT_FALSE(ctl::expand_clocks("step:0", sup));
}

TEST(Plan, CrossProductOfSettingsAndParameters) {
  ctl::SweepSpec s;
  s.clocks = "1980,990";
  s.power_limits_w = {700, 300};
  s.params = {*ctl::parse_param("batch=1,8")};
  s.command = {"infer", "--batch", "{batch}"};
  s.runs = 3;
  auto p = ctl::plan_sweep(s, {h100()});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->units.size(), 8U);
  EXPECT_EQ(p->units.front().runs, 3);
  // Seeded random order: the same plan twice, a different one with another seed.
  auto again = ctl::plan_sweep(s, {h100()});
  EXPECT_EQ(p->units.front().key, again->units.front().key);
  EXPECT_EQ(p->sweep_id, again->sweep_id);
  s.order = "interleaved";
  auto inter = ctl::plan_sweep(s, {h100()});
  ASSERT_TRUE(inter);
  EXPECT_EQ(inter->units.size(), 24U);  // 8 points × 3 passes of one run
  EXPECT_EQ(inter->units.back().pass, 2);
  EXPECT_EQ(inter->units.back().runs, 1);
  s.mode = "baseline";
  EXPECT_FALSE(ctl::plan_sweep(s, {h100()}));  // baseline changes nothing: settings refused
}

TEST(Plan, BadSettingsNameTheNearestOrTheRange) {
  ctl::SweepSpec s;
  s.clocks = "1000";
  auto p = ctl::plan_sweep(s, {h100()});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("clock 1000 MHz is not supported"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("nearest: 990 or 1005 MHz"), std::string::npos) << p.error().message;
  s.clocks = "";
  s.power_limits_w = {150};
  p = ctl::plan_sweep(s, {h100()});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("power limit 150 W is outside"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("200–700 W"), std::string::npos);
  s.power_limits_w = {};
  s.mem_clocks_mhz = {2000};
  p = ctl::plan_sweep(s, {h100()});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("nearest: 1593 or 2619 MHz"), std::string::npos) << p.error().message;
}

TEST(Plan, SubstitutesParameters) {
  auto c = ctl::substitute({"run", "--b={batch}", "{\"json\": 1}"}, {{"batch", "8"}});
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)[1], "--b=8");
  EXPECT_EQ((*c)[2], "{\"json\": 1}");  // not a placeholder
  auto bad = ctl::substitute({"{seq}"}, {{"batch", "8"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--param seq"), std::string::npos);
  EXPECT_FALSE(ctl::parse_param("batch"));
  EXPECT_FALSE(ctl::parse_param("batch=1,,2"));
  EXPECT_FALSE(ctl::parse_param("b-x=1"));
}

TEST(Plan, RoundTripsThroughThePlanFile) {
  ctl::SweepSpec s;
  s.device = "sim";
  s.clocks = "step:20";
  s.params = {*ctl::parse_param("seq=128,1024")};
  s.command = {"x", "{seq}"};
  auto p = ctl::plan_sweep(s, {h100()});
  ASSERT_TRUE(p);
  auto back = ctl::spec_from_plan_json(ctl::plan_to_json(*p), "plan.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->sweep_id, p->sweep_id);
  auto p2 = ctl::plan_sweep(*back, {h100()});
  ASSERT_TRUE(p2);
  ASSERT_EQ(p2->units.size(), p->units.size());
  for (std::size_t i = 0; i < p->units.size(); ++i) EXPECT_EQ(p2->units[i].key, p->units[i].key);
  EXPECT_FALSE(ctl::spec_from_plan_json("{}", "x.json"));
}

// Every option of the spec reaches the multi-GPU workers and the SLURM tasks: a spec with each
// field away from its default comes back equal (SweepSpec's == compares every field).
TEST(Plan, EveryOptionTravelsThroughThePlanFile) {
  ctl::SweepSpec s;
  s.command = {"infer", "--batch", "{batch}"};
  s.device = "sim";
  s.nvml_library = "/opt/nvml/libnvidia-ml.so.1";
  s.sim_scenario = "/tmp/scenario.txt";
  s.gpus = {"0", "GPU-1"};
  s.clocks = "1980,990";
  s.mem_clocks_mhz = {2619};
  s.power_limits_w = {700, 300};
  s.params = {*ctl::parse_param("batch=1,8")};
  s.mode = "dvfs";
  s.order = "interleaved";
  s.seed = 7;
  s.runs = 4;
  s.warmup = 2;
  s.idle_s = 0.5;
  s.cooldown = true;
  s.observe_only = true;
  s.multi_gpu = "together";
  s.sweep_id = "named";
  s.metrics = true;
  s.metrics_source = "utilization";
  s.sim_power_w = 200;
  s.read_cpu = false;
  s.tags = {{"team", "infer"}, {"site", "a b"}};
  s.invocation = {"jouleprof", "sweep", "--metrics"};
  // A command, path or parameter value need not be UTF-8: the workers run the same bytes.
  s.command.push_back("\xff\x80" "arg");
  s.nvml_library = "/opt/\xfe/libnvidia-ml.so.1";
  s.params.push_back({"name", {"a\xff" "b", "c"}});
  ctl::SweepPlan p;
  p.sweep_id = s.sweep_id;
  p.spec = s;
  auto back = ctl::spec_from_plan_json(ctl::plan_to_json(p), "plan.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, s);
  // A plan of another format (an older jouleprof's, without these options) is refused.
  auto old = nlohmann::json::parse(ctl::plan_to_json(p));
  old["schema_version"] = 1;
  auto refused = ctl::spec_from_plan_json(old.dump(), "old.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("old.json: sweep plan schema_version 1, this jouleprof reads 2"), std::string::npos)
      << refused.error().message;
  old["schema_version"] = 2;
  old["spec"].erase("metrics");
  EXPECT_FALSE(ctl::spec_from_plan_json(old.dump(), "old.json"));
}

// What is recorded is part of the sweep: a rerun with --metrics (or another simulated power, or
// without CPU energy) is a new sweep, not a resume that skips every point; tags and the spelling
// of the command line are not.
TEST(Plan, TheSweepIdCoversWhatIsRecordedNotLabels) {
  ctl::SweepSpec s;
  s.clocks = "1980,990";
  const std::string base = ctl::plan_sweep(s, {h100()})->sweep_id;
  auto id = [&](auto change) {
    ctl::SweepSpec t = s;
    change(t);
    return ctl::plan_sweep(t, {h100()})->sweep_id;
  };
  EXPECT_NE(id([](ctl::SweepSpec& t) { t.metrics = true; }), base);
  EXPECT_NE(id([](ctl::SweepSpec& t) { t.sim_power_w = 200; }), base);
  EXPECT_NE(id([](ctl::SweepSpec& t) { t.read_cpu = false; }), base);
  EXPECT_EQ(id([](ctl::SweepSpec& t) { t.tags = {{"team", "x"}}; }), base);
  EXPECT_EQ(id([](ctl::SweepSpec& t) { t.invocation = {"jouleprof", "sweep"}; }), base);
}

TEST(Permission, SaysWhatIsMissing) {
  EXPECT_EQ(ctl::permission_problem(0, 0, true), "");
  EXPECT_EQ(ctl::permission_problem(1000, 1ULL << 21, false), "");  // CAP_SYS_ADMIN
  const std::string m = ctl::permission_problem(1000, 0, true);
  EXPECT_NE(m.find("root or CAP_SYS_ADMIN"), std::string::npos);
  EXPECT_NE(m.find("uid 1000"), std::string::npos);
  EXPECT_NE(m.find("restricted application clocks to root"), std::string::npos);
  EXPECT_NE(m.find("--observe-only"), std::string::npos);
}

TEST(Journal, RoundTripAndRefusals) {
  ctl::Journal j = ctl::journal_for_this_process();
  j.backend = "nvml";
  j.library = "libnvidia-ml.so.1";
  j.uuid = "GPU-1";
  j.original.power_limit_mw = 650000;
  j.original.app_gpu_mhz = 1410;
  j.original.app_mem_mhz = 2619;
  j.original.persistence = true;
  auto back = ctl::journal_from_json(ctl::journal_to_json(j), "x.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->original, j.original);
  EXPECT_EQ(back->pid, j.pid);
  EXPECT_TRUE(ctl::owner_running(*back));  // this process
  EXPECT_EQ(ctl::foreign_reason(*back), "");
  back->host = "elsewhere";
  EXPECT_NE(ctl::foreign_reason(*back).find("written on host 'elsewhere'"), std::string::npos);
  back->host = j.host;
  back->boot_id = "another-boot";
  EXPECT_NE(ctl::foreign_reason(*back).find("earlier boot"), std::string::npos);
  back->pid_start_ticks += 1;  // a reused pid is not the owner
  EXPECT_FALSE(ctl::owner_running(*back));
  EXPECT_FALSE(ctl::journal_from_json("{\"journal_version\": 99}", "x.json"));
  EXPECT_FALSE(ctl::journal_from_json("not json", "x.json"));
}

TEST(Journal, NumbersOutsideTheirTypeAreRefusedNotWrapped) {
  ctl::Journal j = ctl::journal_for_this_process();
  j.backend = "nvml";
  j.uuid = "GPU-1";
  j.original.power_limit_mw = 650000;
  j.original.gpu_locked = ctl::ClockRange{990, 990};
  const std::string text = ctl::journal_to_json(j);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  // 2^32 + 300000 mW read as an unsigned would wrap to 300 W and be "restored" with exit 0.
  for (const char* bad : {"4295267296", "-1", "1e300", "650000.5", "\"650000\""}) {
    auto r = ctl::journal_from_json(with("\"power_limit_mw\": 650000", std::string("\"power_limit_mw\": ") + bad), "x.json");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("x.json: malformed restore journal"), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(ctl::journal_from_json(with("\"max_mhz\": 990", "\"max_mhz\": 4294968286"), "x.json"));
  EXPECT_FALSE(ctl::journal_from_json(with("\"journal_version\": 1", "\"journal_version\": 4294967297"), "x.json"));
  EXPECT_TRUE(ctl::journal_from_json(text, "x.json"));
}

TEST(SimLaw, LowerClocksTradeTimeForEnergy) {
  jouleprof::SimConfig cfg;
  jouleprof::SimControl free_run, slow, capped;
  slow.sm_clock_lock_mhz = 990;
  capped.power_limit_w = 300;
  const auto a = jouleprof::sim_operating_point(cfg, free_run, 690, 0.9);
  EXPECT_DOUBLE_EQ(a.clock_mhz, 1980);
  EXPECT_NEAR(a.power_w, 690, 1e-9);
  EXPECT_DOUBLE_EQ(a.time_scale, 1.0);
  const auto b = jouleprof::sim_operating_point(cfg, slow, 690, 0.9);
  EXPECT_LT(b.power_w, a.power_w);
  EXPECT_GT(b.time_scale, 1.5);
  EXPECT_LT(b.power_w * b.time_scale, a.power_w * a.time_scale);  // energy falls faster than time rises
  const auto c = jouleprof::sim_operating_point(cfg, capped, 690, 0.9);
  EXPECT_LE(c.power_w, 300);
  EXPECT_LT(c.clock_mhz, 1980);
  // A memory-bound load barely slows down with the graphics clock.
  const auto d = jouleprof::sim_operating_point(cfg, slow, 380, 0.2);
  EXPECT_LT(d.time_scale, 1.25);
}
