// `jouleprof estimate` end to end: args -> exit code -> output pattern.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {
struct Out {
  int rc;
  std::string text;
};
Out cli(const std::string& args) {
  const std::string cmd = std::string("JOULEPROF_DATA_DIR=") + JOULEPROF_DATA + " " + JOULEPROF_CLI + " estimate " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  Out o{-1, {}};
  if (!p) return o;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p)) o.text += buf.data();
  const int st = pclose(p);
  o.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}
}  // namespace

TEST(EstimateCli, TableDriven) {
  const std::string fx = JOULEPROF_ESTIMATE_FIXTURES;
  struct Case {
    std::string args;
    bool ok;
    std::string pattern;
  } cases[] = {
      {"--list-hw", true, "h100-sxm"},
      {"--list-models", true, "llama-3.2-1b"},
      {"--model resnet18 --hw h100-sxm --top 2", true, "subgraphs (top 2"},
      {"--model llama-3.2-1b --phase decode --context 512 --hw h100-sxm,tpu-v5e,xeon-8490h,kpu-t64", true, "kpu-t64"},
      {"--model gemm:256x256x256 --hw h100 --json -", true, "\"schema_version\": 1"},
      {"--model gemm:256x256x256 --hw h100 --csv -", true, "hardware,model,precision"},
      {"--model " + fx + "/resnet50.onnx --hw a100", true, "resnet50.onnx on"},
      {"--model resnet18 --hw h100-sxn", false, "did you mean h100-sxm"},
      {"--model resnt18 --hw h100", false, "did you mean resnet18"},
      {"--model resnet18 --hw v100 --precision bf16", false, "no bf16 peak"},
      {"--model resnet18 --hw h100 --clock 9999", false, "outside"},
      {"--model resnet18 --hw h100 --hw-dir /nonexistent", false, "does not exist"},
      {"--model /nonexistent.onnx", false, "cannot read ONNX file"},
      {"--model gemm:8x8", false, "gemm:MxNxK"},
  };
  for (const auto& c : cases) {
    const Out o = cli(c.args);
    EXPECT_EQ(o.rc == 0, c.ok) << c.args << "\n" << o.text;
    EXPECT_NE(o.text.find(c.pattern), std::string::npos) << c.args << "\n" << o.text;
    if (!c.ok) {
      EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << "one-line error expected: " << o.text;
    }
  }
}
