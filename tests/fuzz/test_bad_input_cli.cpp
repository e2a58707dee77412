// Table-driven CLI tests of hostile input (issue 22): each row is a command line, the exit code
// it must give, and what must (not) be left behind. Runs on the simulated GPU.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/run_program.hpp"
#include "common/wait_for_text.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("jp-bad-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tmp");
  }
  void TearDown() override { fs::remove_all(dir_); }

  jp_test::ProgramRun cli(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    env.push_back("JOULEPROF_DB=" + (dir_ / "runs.db").string());
    env.push_back("TMPDIR=" + (dir_ / "tmp").string());
    return jp_test::run_program(JOULEPROF_CLI, args, env, dir_.string(), (dir_ / "out").string(), (dir_ / "err").string(),
                                [](pid_t) {});
  }
  std::vector<std::string> leftovers() const {  // temporaries next to the outputs
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string n = e.path().filename().string();
      if (n.find(".tmp") != std::string::npos) out.push_back(n);
    }
    return out;
  }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  json measured(std::vector<std::string> extra, const std::vector<std::string>& command) {
    std::vector<std::string> args = {"measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--json", "m.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    last_ = cli(args);
    std::ifstream in(dir_ / "m.json");
    return json::parse(in, nullptr, false);
  }
  static bool one_error_line(const std::string& err) {
    return err.rfind("jouleprof: error: ", 0) == 0 && err.find('\n') == err.size() - 1;
  }

  fs::path dir_;
  jp_test::ProgramRun last_;
};

TEST_F(BadInput, InvalidUtf8TagIsStoredReplacedAndFlagged) {
  json j = measured({"--tag", "k=\xfe\x1b[31m"}, {"true"});
  ASSERT_EQ(last_.exit_code, 0) << last_.err;
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["tags"]["k"], "\xEF\xBF\xBD\\x1b[31m");
  EXPECT_NE(j["warnings"].dump().find("not valid UTF-8"), std::string::npos);
  EXPECT_TRUE(leftovers().empty());
  auto list = cli({"runs", "list"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_EQ(list.out.find('\x1b'), std::string::npos);  // nothing that moves the terminal's cursor
}

TEST_F(BadInput, UnwritableOutputsFailAndLeaveNoTemporary) {
  for (const std::string flag : {"--json", "--timeline"}) {
    auto r = cli({"measure", "--device", "sim", "--idle", "0", "--runs", "1", "-q", "--no-store", flag, "/dev/full", "--", "true"});
    EXPECT_NE(r.exit_code, 0) << flag;
    EXPECT_NE(r.err.find("cannot write /dev/full"), std::string::npos) << r.err;
  }
  fs::create_directories(dir_ / "ro");
  auto r = cli({"estimate", "--model", "gemm:64x64x64", "--hw", "h100-sxm", "--json", "/dev/full"});
  EXPECT_NE(r.exit_code, 0);
  r = cli({"estimate", "--model", "gemm:64x64x64", "--hw", "h100-sxm", "--json", (dir_ / "ro").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(BadInput, SizesThatOverflowAreRefusedInWords) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"estimate", "--model", "gemm:9223372036854775807x2x2", "--hw", "h100-sxm"},
        std::vector<std::string>{"estimate", "--model", "resnet18", "--image", "2147483647", "--hw", "h100-sxm"},
        std::vector<std::string>{"estimate", "--model", "gemm:4294967296x4294967296x2", "--hw", "h100-sxm"}}) {
    auto r = cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[2] << ": " << r.out << r.err;
    EXPECT_TRUE(one_error_line(r.err)) << r.err;
    EXPECT_EQ(r.out.find("-"), std::string::npos) << r.out;
  }
  auto r = cli({"bench", "llm", "--device", "sim", "--batch", "2147483647", "--gen", "2", "--prompt", "8", "--no-store"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("GB"), std::string::npos) << r.err;
  r = cli({"bench", "llm", "--device", "sim", "--prompt", "2147483600", "--gen", "2", "--no-store"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("context"), std::string::npos) << r.err;
}

TEST_F(BadInput, StructurallyWrongImportsAreRefusedWhole) {
  ASSERT_TRUE(measured({}, {"true"}).is_object());
  std::ifstream in(dir_ / "m.json");
  const json good = json::parse(in);
  auto variant = [&](const std::function<void(json&)>& edit) {
    json d = good;
    edit(d);
    return write("bad.json", d.dump());
  };
  const std::vector<std::pair<std::string, std::function<void(json&)>>> cases = {
      {"/windows/0/parent", [](json& d) { d["windows"][0]["parent"] = 0; }},
      {"/runs/0/window", [](json& d) { d["runs"][0]["window"] = 1000; }},
      {"/windows", [](json& d) { d["windows"] = json::array(); }},
      {"/status", [](json& d) { d["status"] = "done"; }},
      {"/origin_realtime_ns", [](json& d) { d["origin_realtime_ns"] = 1208925819614629174706176.0; }},
      {"/run_uuid", [](json& d) { d["run_uuid"] = "run-1"; }},
  };
  auto before = cli({"runs", "list", "--json"});
  for (const auto& [path, edit] : cases) {
    auto r = cli({"runs", "import", variant(edit)});
    EXPECT_EQ(r.exit_code, 2) << path;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    EXPECT_TRUE(one_error_line(r.err)) << r.err;
  }
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  auto r = cli({"runs", "import", write("deep.json", deep)});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(cli({"runs", "list", "--json"}).out, before.out);  // nothing half-imported
  r = cli({"estimate", "--validate", dir_.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("directory"), std::string::npos) << r.err;
}

TEST_F(BadInput, MarkerTimesOutsideTheRunAndEndsBeforeBeginsAreNotCompleteFigures) {
  json j = measured({}, {"sh", "-c",
                         "echo 'begin far t=1e300' > $JOULEPROF_MARKERS; echo 'begin past t=1000' > $JOULEPROF_MARKERS;"
                         "sleep 1; now=$(date +%s.%N); e=$(awk -v n=$now 'BEGIN{printf \"%.6f\", n-0.5}');"
                         "echo \"begin w t=$now\" > $JOULEPROF_MARKERS; echo \"end w t=$e\" > $JOULEPROF_MARKERS; sleep 0.2"});
  ASSERT_EQ(last_.exit_code, 0) << last_.err;
  for (const json& w : j["windows"]) {
    EXPECT_NE(w["name"], "far");
    EXPECT_NE(w["name"], "past");
    if (w["name"] == "w") {
      EXPECT_EQ(w["status"], "incomplete");
    }
  }
  EXPECT_NE(j["warnings"].dump().find("before its begin"), std::string::npos) << j["warnings"].dump();
}

TEST_F(BadInput, FiveThousandNestedPhasesAreFast) {
  const auto t0 = std::chrono::steady_clock::now();
  json j = measured({}, {"sh", "-c", "i=0; while [ $i -lt 5000 ]; do echo \"begin p$i\"; i=$((i+1)); done > $JOULEPROF_MARKERS;"
                                     "i=4999; while [ $i -ge 0 ]; do echo \"end p$i\"; i=$((i-1)); done > $JOULEPROF_MARKERS"});
  ASSERT_EQ(last_.exit_code, 0) << last_.err;
  EXPECT_EQ(j["windows"].size(), 5001u);
  // Not a timing test of speed, a bound on a hang: it took 172 s when window ancestry was cubic.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
}

TEST_F(BadInput, ReferencesAndSelectionsThatMeanSomethingElse) {
  ASSERT_TRUE(measured({}, {"true"}).is_object());
  auto r = cli({"runs", "rm", "last~"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(cli({"runs", "show", "last"}).exit_code, 0);  // still there
  r = cli({"measure", "--device", "sim", "--gpus", "0,0", "--idle", "0", "-q", "--no-store", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("twice"), std::string::npos) << r.err;
}

TEST_F(BadInput, CorruptStoreIsRefused) {
  ASSERT_TRUE(measured({}, {"true"}).is_object());
  ASSERT_TRUE(measured({}, {"true"}).is_object());
  // Damage the second page (a table's b-tree root; the header page the open reads stays intact).
  ASSERT_GT(fs::file_size(dir_ / "runs.db"), 8192u);
  {
    std::fstream f(dir_ / "runs.db", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string junk(2048, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto r = cli({"runs", "list"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("corrupt"), std::string::npos) << r.err;
}

TEST_F(BadInput, GpuLostMidRunIsIncompleteAndNonZero) {
  write("lost.txt", "fail_after_s 0.6\n");
  json j = measured({"--sim-scenario", (dir_ / "lost.txt").string()}, {"sleep", "1.5"});
  EXPECT_NE(last_.exit_code, 0);
  ASSERT_TRUE(j.is_object()) << last_.err;
  EXPECT_EQ(j["status"], "incomplete");
  for (const json& w : j["windows"]) {
    if (w["kind"] == "run") {
      EXPECT_EQ(w["status"], "incomplete");
    }
  }
}

TEST_F(BadInput, MarkerFolderUnderTmpdirAndStaleOnesRemoved) {
  // A folder left by a SIGKILLed jouleprof (a pid that no longer runs).
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const fs::path stale = dir_ / "tmp" / ("jouleprof-" + std::to_string(gone) + "-abcdef");
  fs::create_directories(stale);
  ASSERT_EQ(mkfifo((stale / "markers").c_str(), 0600), 0);
  measured({}, {"sh", "-c", "echo $JOULEPROF_MARKERS > where.txt"});
  ASSERT_EQ(last_.exit_code, 0) << last_.err;
  const std::string where = jp_test::slurp_file((dir_ / "where.txt").string());
  EXPECT_EQ(where.rfind((dir_ / "tmp").string(), 0), 0u) << where;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
}

TEST_F(BadInput, WorkloadDiesWithAKilledJouleprof) {
  // Handshakes, no timers: the workload says its pid through a FIFO (the test's read returns once
  // it is written), and the test waits on a pidfd for the workload's exit (up to 10 s: a loaded
  // machine delivers the parent-death signal late).
  const std::string fifo = (dir_ / "child.pid").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  pid_t child = -1;
  int child_fd = -1;
  auto r = jp_test::run_program(
      JOULEPROF_CLI,
      {"measure", "--device", "sim", "--idle", "0", "-q", "--no-store", "--", "sh", "-c", "echo $$ > " + fifo + "; exec sleep 60"},
      {"TMPDIR=" + (dir_ / "tmp").string()}, dir_.string(), (dir_ / "out").string(), (dir_ / "err").string(), [&](pid_t p) {
        const int fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
        pollfd w{fd, POLLIN, 0};
        char buf[32] = {};
        if (fd >= 0 && poll(&w, 1, 10000) == 1 && read(fd, buf, sizeof buf - 1) > 0) child = static_cast<pid_t>(std::atol(buf));
        if (fd >= 0) close(fd);
        if (child > 0) child_fd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
        kill(p, SIGKILL);
      });
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  ASSERT_GT(child, 0);
  ASSERT_GE(child_fd, 0) << "pidfd_open: " << std::strerror(errno);
  pollfd pfd{child_fd, POLLIN, 0};
  const bool gone = poll(&pfd, 1, 10000) == 1;  // readable once the workload has exited
  close(child_fd);
  EXPECT_TRUE(gone) << "the workload (pid " << child << ") outlived jouleprof";
  if (!gone) kill(child, SIGKILL);
}

TEST_F(BadInput, SimulatedBenchWakesOnSigterm) {
  pid_t jp = -1;
  std::chrono::steady_clock::time_point sent;
  auto r = jp_test::run_program(JOULEPROF_CLI,
                                {"bench", "llm", "--device", "sim", "--model", "llama-3.1-8b", "--prompt", "100000", "--gen", "2",
                                 "--idle", "0", "--no-store", "--json", "b.json"},
                                {"TMPDIR=" + (dir_ / "tmp").string()}, dir_.string(), (dir_ / "out").string(), (dir_ / "err").string(),
                                [&](pid_t p) {
                                  jp = p;
                                  // SIGTERM once the long simulated preparation has begun (its progress line).
                                  EXPECT_TRUE(jp_test::wait_for_text((dir_ / "err").string(), ": preparing", std::chrono::seconds(60)));
                                  sent = std::chrono::steady_clock::now();
                                  kill(p, SIGTERM);
                                });
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(after, 2.0) << "exited " << after << " s after SIGTERM";  // a bound on a hang, not a speed test
}

}  // namespace

// Issue 35: long words reached std::regex (recursive per character) and overflowed the stack.
TEST_F(BadInput, LongWordsAndNamesAreNotACrash) {
  auto r = cli({"measure", "--device", std::string(50000, 'x')});
  EXPECT_EQ(r.exit_code, 2) << r.err.substr(0, 200);
  EXPECT_TRUE(one_error_line(r.err));
  r = cli({"runs", "list", "--" + std::string(100000, 'y')});
  EXPECT_EQ(r.exit_code, 2) << r.err.substr(0, 200);
  EXPECT_TRUE(one_error_line(r.err));
  const std::string trace = write("t.json", "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + std::string(40000, 'x') +
                                                "\\u001b[2J\", \"ts\": 1, \"dur\": 2, \"args\": {\"grid\": [1, 1, 1]}}]}");
  r = cli({"kernels", trace});
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 200);
  EXPECT_NE(r.out.find("1 kernels"), std::string::npos) << r.out.substr(0, 300);
  r = cli({"replay", trace, "--plan", (dir_ / "plan.json").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 300);
}
