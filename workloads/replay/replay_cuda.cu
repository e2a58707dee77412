// jouleprof-replay's CUDA side (replay_cuda.hpp): GEMMs through cuBLASLt with the traced shapes,
// dtypes, transposes, leading dimensions and batch strides; convolutions through cuDNN (loaded at
// run time: cudnn_conv.hpp) with the traced sizes, layout, groups and dtype; inference batch norms
// through cuDNN (cudnn_batchnorm.hpp) with x's sizes, layout and dtype; attention through cuDNN's
// fused SDPA (cudnn_sdpa.hpp), else as its two batched GEMMs and a pass over the score matrix; copies/sets with cudaMemcpyAsync/cudaMemsetAsync (pinned
// host memory: a graph cannot capture pageable copies); the rest as a memory-bound kernel with
// the traced launch shape moving the op's bytes; time-matched proxies where shapes are unknown.
// Each re-created kernel is a Unit: one at a time for the isolated measurements, all of a context
// sequence's at once for its replay.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "cudnn_batchnorm.hpp"
#include "cudnn_conv.hpp"
#include "cudnn_sdpa.hpp"
#include "jouleprof/core/uuid.hpp"
#include "replay_cuda.hpp"

namespace jouleprof::replay {
namespace {

__global__ void fill_kernel(uint32_t* p, size_t words, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    // Two bf16/fp16-ish halves of small magnitude (exponent bits kept moderate): real arithmetic, no inf/NaN.
    p[i] = (x & 0x807f807fu) | 0x3c003c00u;
  }
}

// Memory-bound proxy: every thread of the traced launch shape reads its share of `read_words`
// 16-byte words and writes its share of `write_words`.
__global__ void memory_kernel(const uint4* __restrict__ in, uint4* __restrict__ out, size_t read_words, size_t write_words) {
  const size_t threads = static_cast<size_t>(gridDim.x) * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
  const size_t block = (static_cast<size_t>(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const size_t tid = block * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (size_t i = tid; i < read_words; i += threads) {
    const uint4 v = in[i];
    acc.x ^= v.x;
    acc.y += v.y;
    acc.z ^= v.z;
    acc.w += v.w;
  }
  for (size_t i = tid; i < write_words; i += threads) out[i] = acc;
}

// Compute proxy: `iters` dependent FMAs per thread (time-matched to a kernel whose shapes are unknown).
__global__ void compute_kernel(float* out, int iters) {
  float a = 1.0f + threadIdx.x * 1e-7f, b = 0.999f;
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, b, 1e-6f);
    b = fmaf(b, a, -1e-6f);
  }
  if (a == 12345.0f) out[0] = b;
}

// The GPU between two traced kernels: one warp waits `ns` on the global timer (the rest idle).
__global__ void wait_kernel(uint64_t ns) {
  uint64_t t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

__global__ void tiny_kernel(float* out) {
  if (threadIdx.x == 0 && out[0] == 12345.0f) out[1] = 1.0f;
}

cudaDataType_t cuda_type(const std::string& d, bool& ok) {
  ok = true;
  if (d == "bf16") return CUDA_R_16BF;
  if (d == "fp16") return CUDA_R_16F;
  if (d == "fp32") return CUDA_R_32F;
  if (d == "fp64") return CUDA_R_64F;
  ok = false;
  return CUDA_R_32F;
}

size_t type_size(const std::string& d) { return d == "fp64" ? 8 : d == "fp32" ? 4 : 2; }

struct Matmul {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::vector<void*> pa;  // cuBLASLt's A (our B): several copies when it is a weight (rotated per call)
  std::size_t next_a = 0;
  void* pb = nullptr;
  void* pc = nullptr;
  cudaDataType_t scale_type = CUDA_R_32F;
  double alpha = 1, beta = 0;
  float alpha_f = 1, beta_f = 0;
};

// What a replayed kernel needs: the shared handles of the device.
struct Ctx {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  void* scratch = nullptr;
  size_t l2_bytes = 0;
  cudnn::Session* cudnn = nullptr;  // opened at the first convolution
  cudnn::SdpaCache* sdpa = nullptr;  // attention plans per shape
};

// The most workspace a convolution's algorithm may ask for (PyTorch allows what is free; the
// heuristic's first choices for inference shapes need far less).
constexpr size_t kConvWorkspace = size_t{4} << 30;

// One unique kernel re-created: its buffers, cuBLASLt descriptors and launch shape.
class Unit {
 public:
  explicit Unit(const Ctx& c) : c_(c) {}
  Unit(const Unit&) = delete;
  Unit& operator=(const Unit&) = delete;
  ~Unit() { release(); }

  // Builds the kernel; "" or why it cannot be replayed.
  std::string build(const Item& item) {
    release();
    item_ = item;
    iters_ = 1000;
    words_read_ = words_write_ = 0;
    std::string why;
    const Item& it = item_;
    if (it.tier == "gemm") {
      return add_matmul(it.m, it.n, it.k, it.batch, it.trans_a, it.trans_b, it.lda, it.ldb, it.ldc, it.stride_a, it.stride_b, it.stride_c,
                        it.dtype, it.accumulate, it.weight_b);
    }
    if (it.tier == "conv") return build_conv(it);
    if (it.tier == "batchnorm") return build_batchnorm(it);
    if (it.tier == "attention") return build_attention(it);
    if (it.tier == "copy") {
      const size_t n = std::max<uint64_t>(it.bytes, 1);
      if ((mem_out_ = alloc(n, why)) == nullptr) return why;
      if (it.copy_kind == "HtoD" || it.copy_kind == "DtoH") {
        if (cudaMallocHost(&host_, n) != cudaSuccess) {
          cudaGetLastError();
          host_ = nullptr;
          return "cannot allocate pinned host memory";
        }
      } else if (it.copy_kind == "DtoD") {
        if ((mem_in_ = alloc(n, why)) == nullptr) return why;
      } else if (it.copy_kind != "set") {
        return "copy kind " + it.copy_kind + " is not replayed (HtoD, DtoH, DtoD, set are)";
      }
      return "";
    }
    if (it.tier == "other" || it.tier == "proxy_memory") {
      words_read_ = std::max<size_t>(1, (it.bytes_read + 15) / 16);
      words_write_ = (it.bytes_written + 15) / 16;
      if (it.tier == "proxy_memory") {
        words_read_ = std::max<size_t>(256, static_cast<size_t>(it.target_ns * 2.0e3 / 16));  // ~2 TB/s first guess
        words_write_ = 0;
      }
      // Room for the time-matching rescale of proxies.
      const size_t room = it.tier == "proxy_memory" ? 8 : 1;
      if ((mem_in_ = alloc(words_read_ * 16 * room, why)) == nullptr) return why;
      if ((mem_out_ = alloc(std::max<size_t>(words_write_, 1) * 16 * room, why)) == nullptr) return why;
      for (int d = 0; d < 3; ++d) {
        grid_[d] = std::max(1, it.grid[d]);
        block_[d] = std::max(1, it.block[d]);
      }
      if (block_[0] * block_[1] * block_[2] > 1024) return "block of more than 1024 threads";
      return "";
    }
    if (it.tier == "proxy_compute") {
      for (int d = 0; d < 3; ++d) {
        grid_[d] = std::max(1, it.grid[d]);
        block_[d] = std::max(1, it.block[d]);
      }
      if (block_[0] * block_[1] * block_[2] > 1024) return "block of more than 1024 threads";
      iters_ = 1000;
      return "";
    }
    if (it.tier == "wait") return "";
    if (it.tier == "warmup") {
      return add_matmul(8192, 8192, 8192, 1, false, true, 8192, 8192, 8192, 0, 0, 0, "bf16", false);
    }
    return "tier " + it.tier + " is not replayed";
  }

  // Time-matched proxies: scales the work to the traced time (`time_ms(n)`: ms per call of n calls).
  template <class TimeCalls>
  void match_time(TimeCalls time_ms) {
    if (item_.tier != "proxy_compute" && item_.tier != "proxy_memory") return;
    for (int round = 0; round < 3; ++round) {
      const double t = time_ms(20) * 1e6;  // ns
      if (t <= 0) break;
      const double f = item_.target_ns / t;
      if (std::fabs(f - 1) < 0.03) break;
      if (item_.tier == "proxy_compute") {
        iters_ = std::max(1, static_cast<int>(iters_ * f));
      } else {
        words_read_ = std::max<size_t>(1, static_cast<size_t>(static_cast<double>(words_read_) * f));
        words_write_ = std::min(words_read_, words_write_);
      }
    }
  }

  void call() {
    const Item& it = item_;
    cudaStream_t st = c_.stream;
    if (it.tier == "gemm" || it.tier == "warmup") {
      run_matmul(mm_[0]);
    } else if (it.tier == "conv") {
      void* w = conv_weights_[next_copy_++ % conv_weights_.size()];
      conv_.run(conv_buf_[0], w, conv_buf_[2], conv_buf_[3]);  // checked once in build_conv
    } else if (it.tier == "batchnorm") {
      const BnSet& b = bn_sets_[next_copy_++ % bn_sets_.size()];
      bn_.run(b.x, b.y, b.params, bn_param_stride_);  // checked once in build_batchnorm
    } else if (it.tier == "attention" && sdpa_) {
      sdpa_->run(sdpa_packs_[next_copy_++ % sdpa_packs_.size()]);  // checked once in build_attention
    } else if (it.tier == "attention") {
      run_matmul(mm_[0]);
      memory_kernel<<<launch_[0], launch_[1], 0, st>>>(static_cast<const uint4*>(mem_in_), static_cast<uint4*>(mem_out_), words_read_,
                                                        words_write_);
      run_matmul(mm_[1]);
    } else if (it.tier == "copy") {
      const size_t n = std::max<uint64_t>(it.bytes, 1);
      if (it.copy_kind == "HtoD") cudaMemcpyAsync(mem_out_, host_, n, cudaMemcpyHostToDevice, st);
      else if (it.copy_kind == "DtoH") cudaMemcpyAsync(host_, mem_out_, n, cudaMemcpyDeviceToHost, st);
      else if (it.copy_kind == "DtoD") cudaMemcpyAsync(mem_out_, mem_in_, n, cudaMemcpyDeviceToDevice, st);
      else cudaMemsetAsync(mem_out_, 0, n, st);
    } else if (it.tier == "other" || it.tier == "proxy_memory") {
      memory_kernel<<<dim3(grid_[0], grid_[1], grid_[2]), dim3(block_[0], block_[1], block_[2]), 0, st>>>(
          static_cast<const uint4*>(mem_in_), static_cast<uint4*>(mem_out_), words_read_, words_write_);
    } else if (it.tier == "proxy_compute") {
      compute_kernel<<<dim3(grid_[0], grid_[1], grid_[2]), dim3(block_[0], block_[1], block_[2]), 0, st>>>(static_cast<float*>(c_.scratch),
                                                                                                          iters_);
    } else if (it.tier == "wait") {
      wait_kernel<<<1, 32, 0, st>>>(static_cast<uint64_t>(std::max(0.0, it.target_ns)));
    }
  }

  // Why this unit stands in for its item ("": it runs as itself).
  const std::string& fallback() const { return fallback_; }
  // The engine config of an attention unit cuDNN's SDPA runs ("" otherwise).
  std::string sdpa_engine() const { return sdpa_ ? sdpa_->engine : ""; }
  void set_fallback(const std::string& why) { fallback_ = why; }

  void release() {
    for (cudnn::BackendDesc p : sdpa_packs_) sdpa_->drop(p);
    sdpa_packs_.clear();
    sdpa_.reset();
    conv_.release();
    conv_weights_.clear();
    bn_.release();
    bn_sets_.clear();
    next_copy_ = 0;
    fallback_.clear();
    for (Matmul& m : mm_) {
      if (m.desc != nullptr) cublasLtMatmulDescDestroy(m.desc);
      for (auto l : {m.a, m.b, m.c}) {
        if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
      }
    }
    mm_.clear();
    for (void* p : buffers_) cudaFree(p);
    buffers_.clear();
    if (host_ != nullptr) cudaFreeHost(host_);
    host_ = nullptr;
    mem_in_ = mem_out_ = nullptr;
    cudaGetLastError();
  }

 private:
  // Attention through cuDNN's fused SDPA (cudnn_sdpa.hpp: the plan per shape from the device's
  // cache), run once here outside any graph capture; Q, K, V and O rotated over sets that make twice
  // the L2 cache, one set per call (each layer attends over its own activations). Without cuDNN's
  // backend API, or a graph or shape it refuses: the unfused replay, and fallback() says why.
  std::string build_attention(const Item& it) {
    std::string why = it.no_sdpa ? "the CUDA graph could not capture cuDNN's SDPA" : cudnn::sdpa_refused(it);
    if (why.empty()) why = c_.cudnn->open(c_.stream);
    if (why.empty()) sdpa_ = c_.sdpa->get(*c_.cudnn, it, kConvWorkspace, why);
    if (sdpa_) {
      const cudnn::Sdpa& p = *sdpa_;
      const size_t set_bytes = 2 * p.q_bytes + 2 * p.kv_bytes;
      const size_t sets = std::clamp<size_t>((2 * c_.l2_bytes + set_bytes - 1) / std::max<size_t>(set_bytes, 1), 1, 64);
      cudnn::SdpaBuffers b;
      if ((b.workspace = alloc(p.workspace_bytes, why)) == nullptr) return why;  // out of memory: the row is skipped, as a GEMM's
      for (size_t i = 0; i < sets; ++i) {
        if ((b.q = alloc(p.q_bytes, why)) == nullptr || (b.k = alloc(p.kv_bytes, why)) == nullptr || (b.v = alloc(p.kv_bytes, why)) == nullptr ||
            (b.o = alloc(p.o_bytes, why)) == nullptr) {
          return why;
        }
        cudnn::BackendDesc pack = nullptr;
        if (!(why = sdpa_->pack(b, pack)).empty()) break;
        sdpa_packs_.push_back(pack);
      }
      if (why.empty()) why = sdpa_->run(sdpa_packs_[0]);
      if (why.empty()) return "";
      release();  // the unfused replay below allocates its own
      item_ = it;
    }
    const std::string w = build_unfused(it);
    fallback_ = cudnn::unfused_line(why);
    return w;
  }

  // S = Q K^T (batch x heads, Sq x Skv x D), a pass over S (softmax's traffic), O = P V.
  std::string build_unfused(const Item& it) {
    std::string why;
    const int64_t bh = it.batch * it.heads_q;
    if (bh <= 0 || it.seq_q <= 0 || it.seq_kv <= 0 || it.head_dim <= 0) return "empty attention shape";
    const int64_t kv = it.causal ? std::max<int64_t>(1, (it.seq_kv + 1) / 2) : it.seq_kv;  // causal: half the keys on average
    if (auto w = add_matmul(it.seq_q, kv, it.head_dim, bh, false, true, it.head_dim, it.head_dim, kv, it.seq_q * it.head_dim,
                            kv * it.head_dim, it.seq_q * kv, it.dtype, false);
        !w.empty()) {
      return w;
    }
    words_read_ = words_write_ = static_cast<size_t>(bh * it.seq_q * kv) * type_size(it.dtype) / 16;
    if ((mem_in_ = alloc(words_read_ * 16, why)) == nullptr || (mem_out_ = alloc(words_write_ * 16, why)) == nullptr) return why;
    if (auto w = add_matmul(it.seq_q, it.head_dim, kv, bh, false, false, kv, it.head_dim, it.head_dim, it.seq_q * kv,
                            kv * it.head_dim, it.seq_q * it.head_dim, it.dtype, false);
        !w.empty()) {
      return w;
    }
    launch_[0] = static_cast<int>(std::min<int64_t>(bh * it.seq_q, 65535));
    launch_[1] = 128;
    return "";
  }

  // A cuDNN forward convolution of the traced shapes, run once here (outside any graph capture:
  // cuDNN loads its kernels at the first call). Without cuDNN, or a shape it refuses, the
  // memory-bound kernel of the op's bytes stands in, as before the conv tier, and fallback() says why.
  std::string build_conv(const Item& it) {
    std::string why = c_.cudnn->open(c_.stream);
    if (why.empty()) why = conv_.plan(*c_.cudnn, it, kConvWorkspace);
    if (why.empty()) {
      const size_t sizes[4] = {conv_.input_bytes, conv_.weight_bytes, conv_.output_bytes, conv_.workspace_bytes};
      for (int i = 0; i < 4; ++i) {
        if ((conv_buf_[i] = alloc(sizes[i], why)) == nullptr) return why;  // out of memory: the row is skipped, as a GEMM's
      }
      // The weight as a layer's own, read from memory on each call: copies that make twice the L2
      // cache, one per call in turn (as GEMM weights; one copy would stay in L2 between calls).
      conv_weights_.assign(1, conv_buf_[1]);
      const size_t wb = std::max<size_t>(conv_.weight_bytes, 1);
      const size_t copies = std::clamp<size_t>((2 * c_.l2_bytes + wb - 1) / wb, 1, 64);
      for (size_t i = 1; i < copies; ++i) {
        void* more = alloc(wb, why);
        if (more == nullptr) return why;
        conv_weights_.push_back(more);
      }
      why = conv_.run(conv_buf_[0], conv_buf_[1], conv_buf_[2], conv_buf_[3]);
      if (why.empty()) return "";
    }
    return stand_in_for(it, why);
  }

  // cuDNN's inference batch normalization of the traced x, run once here as a convolution is. Its
  // x, y and parameters rotated over sets that make twice the L2 cache, one set per call (each layer
  // normalizes its own activations with its own parameters; one set would stay in L2 between calls).
  // Without cuDNN, or a shape it refuses, the memory-bound kernel of the op's bytes stands in.
  std::string build_batchnorm(const Item& it) {
    std::string why = c_.cudnn->open(c_.stream);
    if (why.empty()) why = bn_.plan(*c_.cudnn, it);
    if (why.empty()) {
      bn_param_stride_ = (bn_.param_bytes + 255) / 256 * 256;
      const size_t set_bytes = 2 * bn_.data_bytes + 4 * bn_param_stride_;
      const size_t sets = std::clamp<size_t>((2 * c_.l2_bytes + set_bytes - 1) / std::max<size_t>(set_bytes, 1), 1, 64);
      for (size_t i = 0; i < sets; ++i) {
        BnSet b;
        if ((b.x = alloc(bn_.data_bytes, why)) == nullptr || (b.y = alloc(bn_.data_bytes, why)) == nullptr ||
            (b.params = alloc(4 * bn_param_stride_, why)) == nullptr) {
          return why;  // out of memory: the row is skipped, as a GEMM's
        }
        bn_sets_.push_back(b);
      }
      why = bn_.run(bn_sets_[0].x, bn_sets_[0].y, bn_sets_[0].params, bn_param_stride_);
      if (why.empty()) return "";
    }
    return stand_in_for(it, why);
  }

  // A cuDNN tier's row that cuDNN did not run: the `other` tier's memory-bound kernel of its bytes,
  // and fallback() says why (one line, the row's progress line).
  std::string stand_in_for(const Item& it, const std::string& why) {
    Item other = it;
    other.tier = "other";
    const std::string w = build(other);
    fallback_ = cudnn::detail::stand_in(it.tier, "not run through cuDNN", why);
    return w;
  }

  void* alloc(size_t bytes, std::string& why) {
    void* p = nullptr;
    bytes = std::max<size_t>(bytes, 16);
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      why = e == cudaErrorMemoryAllocation ? "out of GPU memory for " + std::to_string(bytes >> 20) + " MiB"
                                           : std::string("cudaMalloc: ") + cudaGetErrorString(e);
      return nullptr;
    }
    buffers_.push_back(p);
    fill_kernel<<<1024, 256, 0, c_.stream>>>(static_cast<uint32_t*>(p), bytes / 4, static_cast<uint32_t>(buffers_.size()) * 7919u);
    return p;
  }

  // C[M,N] = A[M,K] B[K,N] (row-major, PyTorch's view) as cuBLASLt's column-major C^T = B^T A^T.
  std::string add_matmul(int64_t m, int64_t n, int64_t k, int64_t batch, bool ta, bool tb, int64_t lda, int64_t ldb, int64_t ldc,
                         int64_t sa, int64_t sb, int64_t sc, const std::string& dtype, bool accumulate, bool weight_b = false) {
    bool type_ok = false;
    const cudaDataType_t t = cuda_type(dtype, type_ok);
    if (!type_ok) return "dtype " + dtype + " is not replayed (bf16, fp16, fp32, fp64 are)";
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return "empty GEMM";
    lda = std::max(lda, ta ? m : k);
    ldb = std::max(ldb, tb ? k : n);
    ldc = std::max(ldc, n);
    const size_t es = type_size(dtype);
    std::string why;
    const int64_t a_elems = batch > 1 ? std::max(sa, (ta ? k : m) * lda) * batch : (ta ? k : m) * lda;
    const int64_t b_elems = batch > 1 ? std::max(sb, (tb ? n : k) * ldb) * batch : (tb ? n : k) * ldb;
    const int64_t c_elems = batch > 1 ? std::max(sc, m * ldc) * batch : m * ldc;
    void* pa = alloc(static_cast<size_t>(a_elems) * es, why);
    if (pa == nullptr) return why;
    void* pb = alloc(static_cast<size_t>(b_elems) * es, why);
    if (pb == nullptr) return why;
    void* pc = alloc(static_cast<size_t>(c_elems) * es, why);
    if (pc == nullptr) return why;
    Matmul mm;
    mm.pa.push_back(pb);  // cuBLASLt's A is our B^T
    // A weight: as many copies as make twice the L2 cache, one per call in turn — a model's
    // layers each read their own weights from memory, where one copy would stay in L2.
    const size_t b_bytes = static_cast<size_t>(b_elems) * es;
    const size_t copies = weight_b && b_bytes > 0 ? std::clamp<size_t>((2 * c_.l2_bytes + b_bytes - 1) / b_bytes, 1, 64) : 1;
    for (size_t i = 1; i < copies; ++i) {
      void* more = alloc(b_bytes, why);
      if (more == nullptr) return why;
      mm.pa.push_back(more);
    }
    mm.pb = pa;
    mm.pc = pc;
    const bool f64 = dtype == "fp64";
    const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    mm.scale_type = f64 ? CUDA_R_64F : CUDA_R_32F;
    mm.beta = accumulate ? 1 : 0;
    mm.beta_f = static_cast<float>(mm.beta);
    if (cublasLtMatmulDescCreate(&mm.desc, compute, mm.scale_type) != CUBLAS_STATUS_SUCCESS) return "cublasLtMatmulDescCreate failed";
    const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N;  // B row-major [K,N] is column-major N x K
    const cublasOperation_t op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(mm.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a);
    cublasLtMatmulDescSetAttribute(mm.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b);
    // Column-major layouts: A' = (tb ? K x N : N x K) ld ldb; B' = (ta ? M x K : K x M) ld lda; C' = N x M ld ldc.
    auto layout = [&](cublasLtMatrixLayout_t& l, uint64_t rows, uint64_t cols, int64_t ld, int64_t stride) {
      cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld);
      if (batch > 1) {
        const int32_t bc = static_cast<int32_t>(batch);
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc);
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
      }
    };
    layout(mm.a, static_cast<uint64_t>(tb ? k : n), static_cast<uint64_t>(tb ? n : k), ldb, sb > 0 ? sb : k * n);
    layout(mm.b, static_cast<uint64_t>(ta ? m : k), static_cast<uint64_t>(ta ? k : m), lda, sa > 0 ? sa : m * k);
    layout(mm.c, static_cast<uint64_t>(n), static_cast<uint64_t>(m), ldc, sc > 0 ? sc : m * n);
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulPreferenceCreate(&pref);
    size_t ws = c_.workspace_bytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(c_.lt, mm.desc, mm.a, mm.b, mm.c, mm.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    mm_.push_back(mm);  // destroyed by release() whatever happens next
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) return "cuBLASLt has no algorithm for this GEMM (status " + std::to_string(static_cast<int>(st)) + ")";
    mm_.back().algo = result.algo;
    return "";
  }

  void run_matmul(Matmul& m) {
    const void* alpha = m.scale_type == CUDA_R_64F ? static_cast<const void*>(&m.alpha) : static_cast<const void*>(&m.alpha_f);
    const void* beta = m.scale_type == CUDA_R_64F ? static_cast<const void*>(&m.beta) : static_cast<const void*>(&m.beta_f);
    void* a = m.pa[m.next_a++ % m.pa.size()];
    cublasLtMatmul(c_.lt, m.desc, alpha, a, m.a, m.pb, m.b, beta, m.pc, m.c, m.pc, m.c, &m.algo, c_.workspace, c_.workspace_bytes,
                   c_.stream);
  }

  const Ctx& c_;
  Item item_;
  std::vector<Matmul> mm_;
  cudnn::Conv conv_;
  void* conv_buf_[4] = {nullptr, nullptr, nullptr, nullptr};  // input, weight, output, workspace
  std::vector<void*> conv_weights_;  // the weight and its copies, one per call in turn
  struct BnSet {
    void* x = nullptr;
    void* y = nullptr;
    void* params = nullptr;  // scale, bias, mean, variance, bn_param_stride_ bytes apart
  };
  cudnn::BatchNorm bn_;
  std::vector<BnSet> bn_sets_;  // one per call in turn
  size_t bn_param_stride_ = 0;
  std::shared_ptr<cudnn::Sdpa> sdpa_;          // the attention's plan (the device's cache holds it too)
  std::vector<cudnn::BackendDesc> sdpa_packs_;  // one variant pack per Q/K/V/O set, in turn
  size_t next_copy_ = 0;  // the conv weight's / batch-norm set's / attention set's copy the next call uses
  std::string fallback_;
  std::vector<void*> buffers_;
  void* host_ = nullptr;
  void* mem_in_ = nullptr;
  void* mem_out_ = nullptr;
  size_t words_read_ = 0, words_write_ = 0;
  int grid_[3] = {1, 1, 1}, block_[3] = {128, 1, 1}, launch_[2] = {1, 128};
  int iters_ = 1000;
};

class CudaDevice final : public Device {
 public:
  ~CudaDevice() override {
    release();
    if (c_.lt != nullptr) cublasLtDestroy(c_.lt);
    for (auto& e : events_) cudaEventDestroy(e);
    if (c_.stream != nullptr) cudaStreamDestroy(c_.stream);
    if (c_.workspace != nullptr) cudaFree(c_.workspace);
    if (c_.scratch != nullptr) cudaFree(c_.scratch);
  }

  bool init(std::string& error) {
    cudaDeviceProp p{};
    if (!ok(cudaGetDeviceProperties(&p, 0), error, "cudaGetDeviceProperties")) return false;
    name_ = p.name;
    uuid_ = gpu_uuid_text(reinterpret_cast<const uint8_t*>(p.uuid.bytes));
    c_.l2_bytes = static_cast<size_t>(p.l2CacheSize);
    if (!ok(cudaSetDevice(0), error, "cudaSetDevice")) return false;
    if (!ok(cudaStreamCreateWithFlags(&c_.stream, cudaStreamNonBlocking), error, "cudaStreamCreate")) return false;
    events_.resize(80);  // trial edges 0..61, time_calls 62-63, launch pacing 64..79 (trials.hpp)
    for (auto& e : events_) {
      if (!ok(cudaEventCreate(&e), error, "cudaEventCreate")) return false;
    }
    if (cublasLtCreate(&c_.lt) != CUBLAS_STATUS_SUCCESS) {
      error = "cublasLtCreate failed";
      return false;
    }
    c_.cudnn = &cudnn_;
    c_.sdpa = &sdpa_cache_;
    c_.workspace_bytes = 32u << 20;
    if (!ok(cudaMalloc(&c_.workspace, c_.workspace_bytes), error, "cudaMalloc(workspace)")) return false;
    if (!ok(cudaMalloc(&c_.scratch, 4096), error, "cudaMalloc")) return false;
    return true;
  }

  std::string name() const override { return name_; }
  std::string uuid() const override { return uuid_; }
  int reps() const override { return reps_; }
  std::string fallback() const override { return units_.empty() ? "" : units_.back()->fallback(); }
  std::string sdpa_engine() const override { return units_.empty() ? "" : units_.back()->sdpa_engine(); }
  std::string cudnn_version() const override { return cudnn_.version(); }
  std::string error() const override {
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? "" : cudaGetErrorString(e);
  }

  std::string prepare(const Item& item, int reps) override {
    const std::string why = prepare_once(item, reps);
    // A convolution or batch norm cuDNN ran but a CUDA graph could not hold: its memory-bound stand-in,
    // said so; an attention cuDNN's SDPA ran: its unfused replay.
    const bool attention = item.tier == "attention" && !item.no_sdpa;
    const bool cudnn_tier = item.tier == "conv" || item.tier == "batchnorm" || attention;
    if (!cudnn_tier || (why.rfind("graph capture", 0) != 0 && why.rfind("graph instantiation", 0) != 0)) return why;
    Item other = item;
    other.tier = attention ? "attention" : "other";
    other.no_sdpa = attention;
    const std::string again = prepare_once(other, reps);
    if (again.empty()) {
      units_.back()->set_fallback(attention ? cudnn::unfused_line("not captured in a CUDA graph: " + why)
                                            : cudnn::detail::stand_in(item.tier, "not captured in a CUDA graph", why));
    }
    return again;
  }

  std::string prepare_once(const Item& item, int reps) {
    release();
    units_.push_back(std::make_unique<Unit>(c_));
    Unit& u = *units_.back();
    std::string why = u.build(item);
    if (!why.empty()) {
      release();
      return why;
    }
    // Warm-up calls (cuBLASLt's first call, caches), then a graph of reps calls.
    for (int i = 0; i < 3; ++i) u.call();
    if (cudaStreamSynchronize(c_.stream) != cudaSuccess) return "the replayed kernel failed: " + error();
    u.match_time([&](int n) { return time_calls(u, n); });
    if (reps <= 0) {
      const double per_call_ms = std::max(time_calls(u, 20), 1e-4);
      reps = static_cast<int>(std::clamp(2.0 / per_call_ms, 1.0, 20000.0));
    }
    reps_ = reps;
    return capture([&] {
      for (int i = 0; i < reps_; ++i) u.call();
    });
  }

  std::string prepare_units(const std::vector<Item>& items, std::vector<std::string>& why) override {
    release();
    why.assign(items.size(), "");
    for (std::size_t i = 0; i < items.size(); ++i) {
      units_.push_back(std::make_unique<Unit>(c_));
      Unit& u = *units_.back();
      why[i] = u.build(items[i]);
      if (why[i].empty()) {
        u.call();
        if (cudaStreamSynchronize(c_.stream) != cudaSuccess) why[i] = "the replayed kernel failed: " + error();
      }
      if (!why[i].empty()) {  // a wait of its traced time stands in
        Item w;
        w.tier = "wait";
        w.target_ns = items[i].target_ns;
        u.build(w);
        continue;
      }
      u.match_time([&](int n) { return time_calls(u, n); });
    }
    if (cudaStreamSynchronize(c_.stream) != cudaSuccess) return "building the sequence's kernels failed: " + error();
    return "";
  }

  void call_unit(int u) override { units_[static_cast<std::size_t>(u)]->call(); }

  void launch(int graphs) override {
    for (int i = 0; i < graphs; ++i) cudaGraphLaunch(exec_, c_.stream);
  }
  void mark(int slot) override { cudaEventRecord(events_[static_cast<size_t>(slot)], c_.stream); }
  void synchronize() override { cudaStreamSynchronize(c_.stream); }
  bool reached(int slot) override { return cudaEventQuery(events_[static_cast<size_t>(slot)]) != cudaErrorNotReady; }
  double elapsed_ms(int from, int to) override {
    float ms = 0;
    cudaEventElapsedTime(&ms, events_[static_cast<size_t>(from)], events_[static_cast<size_t>(to)]);
    return ms;
  }

  void gap_pattern(double seconds, double gap_us) override {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      tiny_kernel<<<1, 32, 0, c_.stream>>>(static_cast<float*>(c_.scratch));
      cudaStreamSynchronize(c_.stream);
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(gap_us);
      if (gap_us >= 200) std::this_thread::sleep_until(until);
      while (std::chrono::steady_clock::now() < until) {  // short gaps: a sleep would overshoot them
      }
    }
  }

  void release() override {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
    units_.clear();
    cudaGetLastError();
  }

 private:
  static bool ok(cudaError_t e, std::string& error, const char* what) {
    if (e == cudaSuccess) return true;
    error = std::string(what) + ": " + cudaGetErrorString(e);
    return false;
  }

  template <class Body>
  std::string capture(Body body) {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
    cudaGraph_t g = nullptr;
    if (cudaStreamBeginCapture(c_.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return "graph capture failed: " + error();
    body();
    if (cudaStreamEndCapture(c_.stream, &g) != cudaSuccess) return "graph capture failed: " + error();
    if (cudaGraphInstantiate(&exec_, g, 0) != cudaSuccess) {
      cudaGraphDestroy(g);
      exec_ = nullptr;
      return "graph instantiation failed: " + error();
    }
    cudaGraphDestroy(g);
    cudaGraphLaunch(exec_, c_.stream);
    if (cudaStreamSynchronize(c_.stream) != cudaSuccess) return "the replayed graph failed: " + error();
    return "";
  }

  double time_calls(Unit& u, int n) {  // ms per call
    cudaEventRecord(events_[62], c_.stream);
    for (int i = 0; i < n; ++i) u.call();
    cudaEventRecord(events_[63], c_.stream);
    cudaEventSynchronize(events_[63]);
    float ms = 0;
    cudaEventElapsedTime(&ms, events_[62], events_[63]);
    return ms / n;
  }

  std::string name_, uuid_;
  cudnn::Session cudnn_;  // before units_: their descriptors are destroyed first
  cudnn::SdpaCache sdpa_cache_;  // after cudnn_, before units_: plans go after the units, before the handle
  Ctx c_;
  std::vector<cudaEvent_t> events_;
  std::vector<std::unique_ptr<Unit>> units_;
  int reps_ = 1;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> Device::open(std::string& error) {
  auto d = std::make_unique<CudaDevice>();
  if (!d->init(error)) return nullptr;
  return d;
}

}  // namespace jouleprof::replay
