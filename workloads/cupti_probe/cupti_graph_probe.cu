// What CUPTI's activity modes cost on CUDA-graph and eager launches, one mode per process
// (issue 33 item 4a; docs/validation/trace.md "CUDA graphs recorded whole"). CUPTI linked:
// a probe of CUPTI itself, not jouleprof's tracer.
//   jouleprof-cupti-probe MODE   MODE: none | device | kernel | graph | both | kernel_paused | detach
// Prints one line: mode, cuptiActivityEnable results, µs per eager launch, µs per graph launch
// (small and busy graphs), records received per kind. `detach`: eager launches recording, after
// CUPTI is detached (cuptiFinalize) and attached again, and what each switch took.
#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace {
std::map<int, long> g_records;

void CUPTIAPI requested(uint8_t** buf, size_t* size, size_t* max) {
  *size = 8 << 20;
  *buf = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max = 0;
}
void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) ++g_records[static_cast<int>(r->kind)];
  free(buf);
}

__global__ void tiny(float* p) {
  if (threadIdx.x == 0 && blockIdx.x == 0) p[0] += 1.f;
}
__global__ void busy(float* p, int iters) {  // ~5-10 us on an H100/H200 at 132 blocks
  float x = p[threadIdx.x];
  for (int i = 0; i < iters; ++i) x = x * 1.0001f + 0.5f;
  p[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

cudaGraphExec_t make_graph(cudaStream_t s, float* p, int nodes, int iters) {
  cudaGraph_t g;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < nodes; ++i) {
    if (iters == 0) tiny<<<1, 32, 0, s>>>(p);
    else busy<<<132, 256, 0, s>>>(p, iters);
  }
  cudaStreamEndCapture(s, &g);
  cudaGraphExec_t e;
  cudaGraphInstantiate(&e, g, 0);
  cudaGraphDestroy(g);
  return e;
}

double per_graph_us(cudaGraphExec_t e, cudaStream_t s, int launches) {
  for (int i = 0; i < 20; ++i) cudaGraphLaunch(e, s);
  cudaStreamSynchronize(s);
  const double t0 = now_us();
  for (int i = 0; i < launches; ++i) cudaGraphLaunch(e, s);
  cudaStreamSynchronize(s);
  return (now_us() - t0) / launches;
}

// µs per eager launch of the tiny kernel: the best of `reps` runs of `n` launches.
double eager_us(cudaStream_t s, float* p, int n = 20000, int reps = 3) {
  double best = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    const double t0 = now_us();
    for (int i = 0; i < n; ++i) tiny<<<1, 32, 0, s>>>(p);
    cudaStreamSynchronize(s);
    best = std::min(best, (now_us() - t0) / n);
  }
  return best;
}

// CUPTI detached and attached again (the documented way: cuptiFinalize from an API callback's
// exit site, as PyTorch's Kineto does): what a sampled mode's off phase would cost if it
// detached, and what each switch costs.
std::atomic<bool> g_detach{false}, g_detached{false};
void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (d->callbackSite == CUPTI_API_EXIT && g_detach.exchange(false)) {
    cuptiActivityFlushAll(1);
    cuptiFinalize();
    g_detached = true;
  }
}

int detach_cycle() {
  float* p = nullptr;
  cudaMalloc(&p, 132 * 256 * sizeof(float));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cuptiActivityRegisterCallbacks(requested, completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  eager_us(s, p, 2000);
  const double recording = eager_us(s, p);
  CUpti_SubscriberHandle sub;
  cuptiSubscribe(&sub, reinterpret_cast<CUpti_CallbackFunc>(on_api), nullptr);
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  double t0 = now_us();
  g_detach = true;
  tiny<<<1, 32, 0, s>>>(p);  // its API exit detaches
  cudaStreamSynchronize(s);
  const double detach_ms = (now_us() - t0) / 1e3;
  const long before = g_records[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
  const double detached = eager_us(s, p);
  t0 = now_us();
  cuptiActivityRegisterCallbacks(requested, completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  tiny<<<1, 32, 0, s>>>(p);
  cudaStreamSynchronize(s);
  const double attach_ms = (now_us() - t0) / 1e3;
  const double reattached = eager_us(s, p);
  cuptiActivityFlushAll(1);
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("mode=detach        eager_us recording=%.3f detached=%.3f reattached=%.3f detach_ms=%.2f attach_ms=%.2f detached_ok=%d "
              "kernel records before detach %ld, after re-attach %ld cuda=%s\n",
              recording, detached, reattached, detach_ms, attach_ms, g_detached.load() ? 1 : 0, before,
              g_records[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] - before, cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "none";
  if (mode == "detach") return detach_cycle();
  std::string enabled;
  auto enable = [&](CUpti_ActivityKind k, const char* name) {
    CUptiResult rc = cuptiActivityEnable(k);
    const char* s = nullptr;
    cuptiGetResultString(rc, &s);
    enabled += std::string(name) + "=" + (rc == CUPTI_SUCCESS ? "ok" : s) + " ";
  };
  if (mode != "none") {
    cuptiActivityRegisterCallbacks(requested, completed);
    enable(CUPTI_ACTIVITY_KIND_DEVICE, "device");
    if (mode == "kernel" || mode == "both" || mode == "kernel_paused") enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel");
    if (mode == "graph" || mode == "both") enable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE, "graph");
  }
  float* p = nullptr;
  cudaMalloc(&p, 132 * 256 * sizeof(float));
  cudaMemset(p, 0, 132 * 256 * sizeof(float));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraphExec_t small = make_graph(s, p, 400, 0), big = make_graph(s, p, 100, 2000);
  if (mode == "kernel_paused") {  // instantiated while kernels were recorded, launched with them off
    cudaDeviceSynchronize();
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  eager_us(s, p, 2000, 1);  // warm
  double best_eager = 1e30, best_small = 1e30, best_big = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    best_eager = std::min(best_eager, eager_us(s, p, 20000, 1));
    best_small = std::min(best_small, per_graph_us(small, s, 200));
    best_big = std::min(best_big, per_graph_us(big, s, 50));
  }
  const cudaError_t err = cudaDeviceSynchronize();
  if (mode != "none") cuptiActivityFlushAll(1);
  std::string kinds;
  for (auto [k, n] : g_records) kinds += std::to_string(k) + ":" + std::to_string(n) + " ";
  std::printf("mode=%-13s eager_us=%.3f small_graph_us=%.1f (400 tiny nodes) busy_graph_us=%.1f (100 busy nodes) cuda=%s enable: %s records(kind:n): %s\n",
              mode.c_str(), best_eager, best_small, best_big, cudaGetErrorString(err), enabled.c_str(), kinds.c_str());
  return err == cudaSuccess ? 0 : 1;
}
