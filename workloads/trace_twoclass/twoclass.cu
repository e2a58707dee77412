// jouleprof-twoclass MODE SECONDS [MIN_MS MAX_MS] [SEED]
//   gemm   bf16 GEMMs (4096^3, cuBLAS) back to back for SECONDS
//   copy   a memory-bound copy kernel (256 MiB per call) back to back for SECONDS
//   mixed  alternating bursts of the two, each burst MIN_MS..MAX_MS long (uniformly random)
// Prints, per class, the number of kernels and the GPU busy time it measured with CUDA events
// (the ground truth of busy time that `jouleprof trace`'s attribution is compared with).
// Built with -DTWOCLASS_LIBRARY as a shared library instead (libjouleprof-twoclass.so), it has no
// main() but twoclass_capture(): one call of each class captured into a CUDA graph, set up as the
// program sets them up (same shapes, cuBLAS workspace, launch configuration), for the exact replay
// (scripts/validation/trace/twoclass_replay.py: the classes' replayed energy per call).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "jouleprof-twoclass: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "jouleprof-twoclass: %s failed (%d)\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

__global__ void stream_copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

struct Work {
  cublasHandle_t h{};
  cudaStream_t stream = nullptr;  // the legacy default stream, except in a capture
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  float4 *src = nullptr, *dst = nullptr;
  void* workspace = nullptr;
  int n = 4096;
  size_t words = (256u << 20) / sizeof(float4);
  size_t workspace_bytes = 32u << 20;  // cuBLAS's own default on Hopper, set explicitly: a capture must not allocate
  int sms = 132;
  void init() {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    sms = prop.multiProcessorCount;
    const size_t nn = static_cast<size_t>(n) * n;
    check(cudaMalloc(&a, nn * sizeof(__nv_bfloat16)), "cudaMalloc");
    check(cudaMalloc(&b, nn * sizeof(__nv_bfloat16)), "cudaMalloc");
    check(cudaMalloc(&c, nn * sizeof(__nv_bfloat16)), "cudaMalloc");
    check(cudaMemset(a, 0x3c, nn * sizeof(__nv_bfloat16)), "cudaMemset");
    check(cudaMemset(b, 0x3c, nn * sizeof(__nv_bfloat16)), "cudaMemset");
    check(cudaMalloc(&src, words * sizeof(float4)), "cudaMalloc");
    check(cudaMalloc(&dst, words * sizeof(float4)), "cudaMalloc");
    check(cudaMemset(src, 1, words * sizeof(float4)), "cudaMemset");
    check(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc");
    check(cublasCreate(&h), "cublasCreate");
    check(cublasSetWorkspace(h, workspace, workspace_bytes), "cublasSetWorkspace");
  }
  void gemm() {
    const float alpha = 1.0f, beta = 0.0f;
    check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &beta, c, CUDA_R_16BF, n,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }
  void copy() { stream_copy_kernel<<<sms * 8, 512, 0, stream>>>(src, dst, words); }
};

// Mean GPU time of one call, by CUDA events over a batch.
double time_ms(Work& w, bool gemm, int reps) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  for (int i = 0; i < reps; ++i) gemm ? w.gemm() : w.copy();
  cudaEventRecord(e1);
  check(cudaEventSynchronize(e1), "timing");
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms / reps;
}

}  // namespace

#ifdef TWOCLASS_LIBRARY
// One GEMM and one copy call in a CUDA graph (captured on a stream of its own, after a warm-up of
// each); the graph's buffers stay alive for the replay. 0 and the graph (a cudaGraph_t) in *graph,
// else 1 with the reason on stderr.
extern "C" __attribute__((visibility("default"))) int twoclass_capture(unsigned long long* graph) {
  static Work w;
  w.init();
  time_ms(w, true, 5);
  time_ms(w, false, 5);
  check(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cublasSetStream(w.h, w.stream), "cublasSetStream");
  cudaGraph_t g = nullptr;
  check(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  w.gemm();
  w.copy();
  check(cudaStreamEndCapture(w.stream, &g), "cudaStreamEndCapture");
  *graph = reinterpret_cast<unsigned long long>(g);
  return 0;
}
#else
int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: jouleprof-twoclass gemm|copy|mixed SECONDS [MIN_MS MAX_MS] [SEED]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const double seconds = std::atof(argv[2]);
  const double min_ms = argc > 3 ? std::atof(argv[3]) : 5;
  const double max_ms = argc > 4 ? std::atof(argv[4]) : 30;
  const unsigned seed = argc > 5 ? static_cast<unsigned>(std::atoi(argv[5])) : 1;
  if ((mode != "gemm" && mode != "copy" && mode != "mixed") || seconds <= 0 || min_ms <= 0 || max_ms < min_ms) {
    std::fprintf(stderr, "jouleprof-twoclass: bad arguments\n");
    return 2;
  }
  Work w;
  w.init();
  // Warm-up and per-call times (the GPU is busy ~100% inside a burst: calls are back to back).
  time_ms(w, true, 20);
  time_ms(w, false, 20);
  const double gemm_ms = time_ms(w, true, 50), copy_ms = time_ms(w, false, 50);
  std::printf("per call: gemm %.4f ms, copy %.4f ms\n", gemm_ms, copy_ms);

  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> burst(min_ms, max_ms);
  long n_gemm = 0, n_copy = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  bool gemm_turn = true;
  while (elapsed() < seconds) {
    if (mode == "gemm" || (mode == "mixed" && gemm_turn)) {
      const long k = mode == "mixed" ? std::max(1L, std::lround(burst(rng) / gemm_ms)) : 50;
      for (long i = 0; i < k; ++i) w.gemm();
      n_gemm += k;
    } else {
      const long k = mode == "mixed" ? std::max(1L, std::lround(burst(rng) / copy_ms)) : 50;
      for (long i = 0; i < k; ++i) w.copy();
      n_copy += k;
    }
    gemm_turn = !gemm_turn;
    // Keep the CPU within ~100 ms of the GPU so that the run ends when SECONDS are up.
    static cudaEvent_t ev = nullptr;
    if (ev == nullptr) cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    check(cudaEventSynchronize(ev), "sync");
    cudaEventRecord(ev);
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::printf("kernels: gemm %ld copy %ld; estimated busy: gemm %.3f s copy %.3f s; wall %.3f s\n", n_gemm, n_copy,
              n_gemm * gemm_ms / 1e3, n_copy * copy_ms / 1e3, elapsed());
  cublasDestroy(w.h);
  return 0;
}
#endif
