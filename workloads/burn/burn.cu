// jouleprof-burn: a bf16 GEMM load for measuring and validating energy readings.
//   --seconds S        steady load for S seconds (default 5)
//   --iters N          exactly N GEMMs, then print the elapsed time (overhead benchmarks)
//   --square ON,OFF    alternate ON ms of load and OFF ms of idle for --seconds
//   --bursts MS,N      N bursts of MS ms load, each followed by 0.5 s idle, each marked as a window
//   --phases           mark the steady load as phase "gemm" with its GEMM count
//   --size N           matrix size (default 8192)
// Markers go to the FIFO in $JOULEPROF_MARKERS (if set), with explicit wall-clock times taken
// after cudaDeviceSynchronize, so windows match the GPU work.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "jouleprof-burn: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "jouleprof-burn: %s: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(3);
  }
}

double unix_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int g_marker_fd = -1;
void marker(const std::string& line) {
  if (g_marker_fd < 0) return;
  const std::string l = line + "\n";
  if (write(g_marker_fd, l.data(), l.size()) < 0) g_marker_fd = -1;
}
void mark(const char* verb, const std::string& name) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), " t=%.6f", unix_now());
  marker(std::string(verb) + " " + name + buf);
}

struct Gemm {
  int n;
  cublasHandle_t h{};
  __nv_bfloat16 *a{}, *b{}, *c{};
  explicit Gemm(int size) : n(size) {
    const size_t bytes = sizeof(__nv_bfloat16) * static_cast<size_t>(n) * n;
    check(cudaMalloc(&a, bytes), "cudaMalloc");
    check(cudaMalloc(&b, bytes), "cudaMalloc");
    check(cudaMalloc(&c, bytes), "cudaMalloc");
    check(cudaMemset(a, 0x3c, bytes), "cudaMemset");  // small non-zero values keep the ALUs busy
    check(cudaMemset(b, 0x3c, bytes), "cudaMemset");
    check(cublasCreate(&h), "cublasCreate");
  }
  void run() {
    const float alpha = 1.0f, beta = 0.0f;
    check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &beta,
                       c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }
  void sync() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
  // Runs GEMMs until `seconds` of wall time have passed; returns how many.
  long run_for(double seconds) {
    long count = 0;
    const double end = unix_now() + seconds;
    while (unix_now() < end) {
      for (int i = 0; i < 4; ++i) run();
      sync();
      count += 4;
    }
    return count;
  }
  ~Gemm() {
    cublasDestroy(h);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
};

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  long iters = 0;
  int size = 8192;
  double on_ms = 0, off_ms = 0, burst_ms = 0;
  int bursts = 0;
  bool phases = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "jouleprof-burn: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seconds") {
      seconds = std::atof(next());
    } else if (a == "--iters") {
      iters = std::atol(next());
    } else if (a == "--size") {
      size = std::atoi(next());
    } else if (a == "--square") {
      if (std::sscanf(next(), "%lf,%lf", &on_ms, &off_ms) != 2) return 2;
    } else if (a == "--bursts") {
      if (std::sscanf(next(), "%lf,%d", &burst_ms, &bursts) != 2) return 2;
    } else if (a == "--phases") {
      phases = true;
    } else {
      std::fprintf(stderr, "jouleprof-burn: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (const char* m = std::getenv("JOULEPROF_MARKERS")) g_marker_fd = open(m, O_WRONLY | O_NONBLOCK);

  Gemm g(size);
  g.run();  // cuBLAS initialisation and first-launch costs stay outside the measured work
  g.sync();
  const double flop = 2.0 * size * double(size) * size;
  if (iters > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long k = 0; k < iters; ++k) g.run();
    g.sync();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("iters %ld elapsed_s %.6f tflops %.1f\n", iters, s, flop * iters / s / 1e12);
    return 0;
  }
  if (on_ms > 0) {
    const double end = unix_now() + seconds;
    mark("begin", "square");
    while (unix_now() < end) {
      g.run_for(on_ms / 1000.0);
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(off_ms));
    }
    mark("end", "square");
    return 0;
  }
  if (bursts > 0) {
    // The enclosing "bursts" window is long enough for the energy counter: it checks the sum
    // of the short windows' estimates (docs/validation/measure.md).
    mark("begin", "bursts");
    for (int k = 0; k < bursts; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      const std::string name = "burst" + std::to_string(k);
      mark("begin", name);
      const long n = g.run_for(burst_ms / 1000.0);
      mark("end", name);
      marker("count gemms " + std::to_string(n) + " " + name);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    mark("end", "bursts");
    return 0;
  }
  if (phases) mark("begin", "gemm");
  const double t0 = unix_now();
  const long n = g.run_for(seconds);
  const double dt = unix_now() - t0;
  if (phases) {
    mark("end", "gemm");
    marker("count gemms " + std::to_string(n) + " gemm");
  }
  std::fprintf(stderr, "jouleprof-burn: %ld GEMMs of %d^3 bf16 in %.2f s (%.0f TFLOP/s)\n", n, size, dt,
               flop * n / dt / 1e12);
  return 0;
}
