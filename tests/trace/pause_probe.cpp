// A traced program's stand-in for the pause test (test_inject_pause.cpp): loads the injection
// library as CUDA would (its path in $CUDA_INJECTION64_PATH, CUPTI the fake of
// $JOULEPROF_CUPTI_LIB), calls InitializeInjection, then launches fake kernels recording, paused
// and resumed through the public header, printing the state after each step. Exits normally: the
// library writes its file.
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "jouleprof/trace/pause.hpp"
#include "nvtx/nvtx_instance.hpp"

// `pause_probe sampled` (under $JOULEPROF_TRACE_SAMPLE): launches until the timer thread has
// switched the kernel records on and off twice after the start (at most 5 s), then says how: per
// context, and whether they were ever enabled globally.
int sampled(void* fake) {
  auto launch = reinterpret_cast<void (*)(const char*)>(dlsym(fake, "fake_cupti_launch"));
  auto per_context = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cupti_context_switches"));
  auto global = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cupti_global_switches"));
  auto ever_global = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cupti_kernels_ever_global"));
  if (launch == nullptr || per_context == nullptr || global == nullptr || ever_global == nullptr) return 4;
  const int start = per_context() + global();  // initialize()'s global enable, if any
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int launched = 0;
  while (per_context() + global() - start < 4 && std::chrono::steady_clock::now() < deadline) {
    launch("sampled_kernel");
    ++launched;
  }
  std::printf("sampled per-context=%d ever-global=%d launched=%d\n", per_context() >= 4 ? 1 : 0, ever_global(), launched);
  return 0;
}

// `pause_probe ranges`: the injection's NVTX tool installed over a stand-in NVTX (fakes/nvtx), 10
// ranges pushed and popped on this thread, then how many anchor calls (cuDriverGetVersion) they made.
int ranges(void* lib, void* fake) {
  auto init_nvtx = reinterpret_cast<int (*)(NvtxGetExportTableFunc_t)>(dlsym(lib, "InitializeInjectionNvtx2"));
  auto anchor_calls = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cupti_anchor_calls"));
  if (init_nvtx == nullptr || anchor_calls == nullptr) return 4;
  static jouleprof::fake_nvtx::Instance nvtx;
  jouleprof::fake_nvtx::current = &nvtx;
  if (init_nvtx(jouleprof::fake_nvtx::export_table) == 0) return 5;
  using PushA = int (*)(const char*);
  using Pop = int (*)();
  const int before = anchor_calls();
  for (int i = 0; i < 10; ++i) {
    nvtx.c<PushA>(NVTX_CBID_CORE_RangePushA)("layer");
    nvtx.c<Pop>(NVTX_CBID_CORE_RangePop)();
  }
  std::printf("ranges anchors=%d\n", anchor_calls() - before);
  return 0;
}

int main(int argc, char** argv) {
  const char* inject = std::getenv("CUDA_INJECTION64_PATH");
  const char* cupti = std::getenv("JOULEPROF_CUPTI_LIB");
  if (inject == nullptr || cupti == nullptr) return 2;
  void* lib = dlopen(inject, RTLD_NOW | RTLD_LOCAL);
  void* fake = dlopen(cupti, RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr || fake == nullptr) {
    std::printf("dlopen: %s\n", dlerror());
    return 3;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  if (argc > 1 && std::strcmp(argv[1], "sampled") == 0) {
    if (init == nullptr) return 4;
    init();
    return sampled(fake);
  }
  if (argc > 1 && std::strcmp(argv[1], "ranges") == 0) {
    if (init == nullptr) return 4;
    init();
    return ranges(lib, fake);
  }
  auto launch = reinterpret_cast<void (*)(const char*)>(dlsym(fake, "fake_cupti_launch"));
  auto kernels_on = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cupti_kernels_on"));
  auto anchor_on = reinterpret_cast<int (*)()>(dlsym(fake, "fake_cupti_anchor_on"));
  if (init == nullptr || launch == nullptr || kernels_on == nullptr || anchor_on == nullptr)
    return 4;
  auto state = [&](const char* when) {
    std::printf("%s recording=%d kernels=%d anchor=%d\n", when, jouleprof::trace_pause::recording(),
                kernels_on(), anchor_on());
  };
  state("before");
  init();
  state("started");
  for (int i = 0; i < 3; ++i) launch("recorded_before_kernel");
  std::printf("pause=%d\n", jouleprof::trace_pause::pause() ? 1 : 0);
  state("paused");
  for (int i = 0; i < 5; ++i) launch("paused_kernel");
  std::printf("resume=%d\n", jouleprof::trace_pause::resume() ? 1 : 0);
  state("resumed");
  for (int i = 0; i < 2; ++i) launch("recorded_after_kernel");
  // A CUDA graph of 3 kernels, launched twice: graph-level records unless
  // $JOULEPROF_TRACE_CUDA_GRAPHS=node.
  auto graph_launch = reinterpret_cast<void (*)(uint32_t, int, const char*)>(dlsym(fake, "fake_cupti_graph_launch"));
  auto kind_on = reinterpret_cast<int (*)(int)>(dlsym(fake, "fake_cupti_kind_on"));
  if (graph_launch == nullptr || kind_on == nullptr) return 4;
  std::printf("graph-level=%d\n", kind_on(51));  // CUPTI_ACTIVITY_KIND_GRAPH_TRACE
  for (int i = 0; i < 2; ++i) graph_launch(7, 3, "graph_node_kernel");
  return 0;
}
