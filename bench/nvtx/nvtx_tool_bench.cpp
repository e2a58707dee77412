// What the injection library's NVTX handlers cost the program's thread per range (push + pop), in
// each state of a trace (issue 33 (c): the sampled mode's off phase keeps recording NVTX ranges):
// recording with anchors (full tracing and the sampled mode's windows), between windows (anchors
// off), and paused (only each thread's nesting kept). The baseline, in the same run: NVTX's
// function-table slots filled with handlers that do nothing (what any NVTX tool costs). Events
// are written to a trace file in batches, as in a traced process. Not included: the anchor itself
// (a driver call and its CUPTI record: a GPU-path cost, in the recording state only) and CUPTI's
// clock (stood in for by CLOCK_REALTIME, the clock it reads: docs/validation/trace.md).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <filesystem>
#include <mutex>

#include "nvtx/nvtx_instance.hpp"
#include "nvtx_tool.hpp"
#include "writer.hpp"

using namespace jouleprof;

namespace {

fake_nvtx::Instance g_instance;

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t thread_id() { return static_cast<uint64_t>(gettid()); }
std::atomic<uint64_t> g_anchors{0};
void anchor() { g_anchors.fetch_add(1, std::memory_order_relaxed); }
void anchor_record(bool) {}

inject::TraceWriter g_writer;
void flush() {
  std::lock_guard<std::mutex> lock(g_writer.lock());
  inject::write_nvtx_events(g_writer);
  g_writer.commit();
}

std::atomic<bool> g_anchoring{true}, g_recording{true};

using PushA = int(NVTX_API*)(const char*);
using Pop = int(NVTX_API*)();

std::filesystem::path bench_dir() {
  return std::filesystem::temp_directory_path() / ("jouleprof-nvtx-bench-" + std::to_string(getpid()));
}

// The tool installed once; each benchmark writes a trace file of its own (a long earlier file
// weighed on the next benchmark's writes), in a temporary folder removed at exit.
void install_with_new_file() {
  static const bool installed = [] {
    std::filesystem::create_directories(bench_dir());
    std::atexit([] { std::filesystem::remove_all(bench_dir()); });
    inject::NvtxHooks h;
    h.now_ns = realtime_ns;
    h.thread_id = thread_id;
    h.anchor = anchor;
    h.flush = flush;
    h.anchoring = &g_anchoring;
    h.anchor_record = anchor_record;
    h.recording = &g_recording;
    fake_nvtx::current = &g_instance;
    return inject::install_nvtx_tool(fake_nvtx::export_table, h) == 1;
  }();
  std::lock_guard<std::mutex> lock(g_writer.lock());
  if (g_writer.is_open()) g_writer.close(0);
  if (!installed || !g_writer.open(bench_dir().string(), getpid(), getppid(), 0, 0)) std::abort();
}

void push_pop(benchmark::State& state, PushA push, Pop pop) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(push("model.layers.0.self_attn"));
    benchmark::DoNotOptimize(pop());
  }
  state.SetItemsProcessed(state.iterations());
}

int NVTX_API nothing_push(const char*) { return 0; }
int NVTX_API nothing_pop() { return 0; }

void BM_NvtxRange_Baseline(benchmark::State& state) {
  NvtxFunctionPointer slots[2] = {reinterpret_cast<NvtxFunctionPointer>(nothing_push), reinterpret_cast<NvtxFunctionPointer>(nothing_pop)};
  benchmark::DoNotOptimize(slots);  // called through the table, as NVTX calls a tool
  push_pop(state, reinterpret_cast<PushA>(slots[0]), reinterpret_cast<Pop>(slots[1]));
}

void tool_state(benchmark::State& state, bool recording, bool anchoring) {
  install_with_new_file();
  g_recording = recording;
  g_anchoring = anchoring;
  push_pop(state, reinterpret_cast<PushA>(g_instance.core[NVTX_CBID_CORE_RangePushA]),
           reinterpret_cast<Pop>(g_instance.core[NVTX_CBID_CORE_RangePop]));
  flush();
}

void BM_NvtxRange_Recording(benchmark::State& state) { tool_state(state, true, true); }
void BM_NvtxRange_BetweenWindows(benchmark::State& state) { tool_state(state, true, false); }
void BM_NvtxRange_Paused(benchmark::State& state) { tool_state(state, false, false); }

}  // namespace

BENCHMARK(BM_NvtxRange_Baseline);
BENCHMARK(BM_NvtxRange_Recording);
BENCHMARK(BM_NvtxRange_BetweenWindows);
BENCHMARK(BM_NvtxRange_Paused);

BENCHMARK_MAIN();
