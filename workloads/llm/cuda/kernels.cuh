// CUDA kernels of the Llama engine. T is __nv_bfloat16 or __half; accumulation is float.
// Layouts (row-major): weights [out][in] as in Hugging Face checkpoints; activations [token][dim];
// KV cache [batch][kv_head][position][head_dim] per layer; the residual stream in float32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>

#include <cstdint>

#include "../host/rng.hpp"
#include "../host/sampling.hpp"

namespace jouleprof::llm::kern {

template <typename T>
struct Num;
template <>
struct Num<__nv_bfloat16> {
  static __device__ __forceinline__ float2 f2(uint32_t v) {
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xFFFF0000u));
  }
  static __device__ __forceinline__ __nv_bfloat16 from(float f) { return __float2bfloat16(f); }
  static __device__ __forceinline__ float to(__nv_bfloat16 x) { return __bfloat162float(x); }
};
template <>
struct Num<__half> {
  static __device__ __forceinline__ float2 f2(uint32_t v) {
    __half2 h;
    memcpy(&h, &v, 4);
    return __half22float2(h);
  }
  static __device__ __forceinline__ __half from(float f) { return __float2half_rn(f); }
  static __device__ __forceinline__ float to(__half x) { return __half2float(x); }
};

template <typename T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const float2 a = Num<T>::f2(v.x), b = Num<T>::f2(v.y), c = Num<T>::f2(v.z), d = Num<T>::f2(v.w);
  f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y; f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  T x[2] = {Num<T>::from(a), Num<T>::from(b)};
  uint32_t r;
  memcpy(&r, x, 4);
  return r;
}

// Weights are read once per step: skip L1, ask L2 to fetch 256-byte sectors.
__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
// Programmatic dependent launch (no-ops when the launch did not ask for it, and before sm_90,
// which has no such launches).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Diagnostic timeline (`jouleprof-llm speed --timeline`): block b's thread 0 writes the global
// nanosecond timer at its start (k = 0), when its inputs are ready (1), at its end (2), and at
// up to kStampMarks points of the kernel's own (3, 4, ...).
constexpr int kStampMarks = 2;
constexpr int kStampsPerBlock = 3 + kStampMarks;
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void stamp(unsigned long long* stamps, int k) {
  if (stamps && threadIdx.x == 0) {
    const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    stamps[kStampsPerBlock * b + k] = globaltimer_ns();
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}
__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }

// Greedy sampling key: larger logit wins, then the smaller index (as argmax's first occurrence).
__device__ __forceinline__ unsigned long long argmax_key(float v, int idx) {
  uint32_t u = __float_as_uint(v);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(u) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(idx));
}
__device__ __forceinline__ int key_index(unsigned long long k) {
  return static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(k & 0xFFFFFFFFull));
}

// ---------------------------------------------------------------------------------------------
// Random initialisation (the same values as rng.hpp gives the CPU reference).
template <typename T>
__global__ void fill_random_kernel(T* dst, int64_t n, uint64_t seed, uint32_t tensor, float std_dev) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = Num<T>::from(random_weight(seed, tensor, static_cast<uint64_t>(i), false, std_dev));
  }
}
__global__ void fill_norm_kernel(float* dst, int n, uint64_t seed, uint32_t tensor) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    dst[i] = random_weight(seed, tensor, static_cast<uint64_t>(i), true, 0.0f);
  }
}

// ---------------------------------------------------------------------------------------------
// Fused decode GEMV: y[b][r] = sum_k W[r][k] * x[b][k] for NB (padded) batch rows.
// The input is staged in shared memory as T: either x itself, or RMSNorm(resid) * norm_w computed
// per block (fusing the norm into the matrix product). Each warp computes two rows at a time
// (rows 2u and 2u+1, or u and u+pair_offset for SwiGLU) with 16-byte streaming loads.
enum GemvMode : int { gemv_store = 0, gemv_add = 1, gemv_swiglu = 2, gemv_logits = 3 };

struct GemvParams {
  const void* w;
  int units;  ///< row pairs
  int k;
  int b;      ///< real batch rows (<= NB)
  int mode;
  int pair_offset;
  // input: T rows, or float residual rows + norm weights
  const void* x;
  int ldx;
  const float* resid_in;
  int ld_resid_in;
  const float* norm_w;
  float eps;
  // outputs
  void* y;        ///< T (store, swiglu) or float (logits)
  int ldy;
  float* resid;   ///< add
  int ld_resid;
  unsigned long long* argmax;  ///< logits: per batch row
  int prefetch_elems;
  unsigned long long* stamps;  ///< diagnostic timeline: per block start, inputs ready, end (null: off)
};

// RMSNorm weights of this thread's elements (k = 4 * threadIdx.x + 4 * THREADS * j), loaded into
// registers before the kernel waits for its predecessor: they are constants, and the norm that
// follows the wait then costs one memory round trip (the residual) instead of two. Rows longer
// than 4096 read the rest in stage_gemv_input.
template <int THREADS>
struct NormWeights {
  static constexpr int kVec = (4096 / 4 + THREADS - 1) / THREADS;
  float4 g[kVec];
};
template <bool NORM, int THREADS>
__device__ __forceinline__ NormWeights<THREADS> load_norm_weights(const GemvParams& p) {
  if constexpr (!NORM) {
    (void)p;
    return NormWeights<THREADS>{};  // not read without a norm
  } else {
    NormWeights<THREADS> nw;
#pragma unroll
    for (int j = 0; j < NormWeights<THREADS>::kVec; ++j) {
      const int k = threadIdx.x * 4 + j * THREADS * 4;
      if (k < p.k) nw.g[j] = *reinterpret_cast<const float4*>(p.norm_w + k);
    }
    return nw;
  }
}

// The GEMV's input rows in shared memory as T: x itself, or RMSNorm(resid) * norm_w (the norm
// fused into the product). Called by all THREADS threads of the block after the inputs are ready.
template <typename T, int NB, bool NORM, int THREADS>
__device__ __forceinline__ void stage_gemv_input(const GemvParams& p, T* xs, const NormWeights<THREADS>& nw) {
  constexpr int WARPS = THREADS / 32;
  __shared__ float red[NB][WARPS];
  __shared__ float rstd[NB];
  const int K = p.k;
  if constexpr (NORM) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float ss[NB];
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      ss[b] = 0.f;
      if (b < p.b) {
        const float* xr = p.resid_in + static_cast<int64_t>(b) * p.ld_resid_in;
        for (int k = threadIdx.x * 4; k < K; k += THREADS * 4) {
          const float4 v = *reinterpret_cast<const float4*>(xr + k);
          ss[b] += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        }
      }
      ss[b] = warp_sum(ss[b]);
      if (lane == 0) red[b][warp] = ss[b];
    }
    __syncthreads();
    if (threadIdx.x < NB) {
      float s = 0.f;
      for (int w = 0; w < WARPS; ++w) s += red[threadIdx.x][w];
      rstd[threadIdx.x] = rsqrtf(s / K + p.eps);
    }
    __syncthreads();
    // x * rstd * g for this thread's elements: those whose weights are in registers, then any
    // past 4096.
    auto put = [&](int b, int k, const float4& g) {
      uint2 o = make_uint2(0u, 0u);
      if (b < p.b) {
        const float4 v = *reinterpret_cast<const float4*>(p.resid_in + static_cast<int64_t>(b) * p.ld_resid_in + k);
        const float r = rstd[b];
        o.x = pack2<T>(v.x * r * g.x, v.y * r * g.y);
        o.y = pack2<T>(v.z * r * g.z, v.w * r * g.w);
      }
      *reinterpret_cast<uint2*>(xs + static_cast<int64_t>(b) * K + k) = o;
    };
    constexpr int V = NormWeights<THREADS>::kVec;
#pragma unroll
    for (int b = 0; b < NB; ++b) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int k = threadIdx.x * 4 + j * THREADS * 4;
        if (k < K) put(b, k, nw.g[j]);
      }
      for (int k = threadIdx.x * 4 + V * THREADS * 4; k < K; k += THREADS * 4) {
        put(b, k, *reinterpret_cast<const float4*>(p.norm_w + k));
      }
    }
  } else {
    const T* x = static_cast<const T*>(p.x);
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      for (int k = threadIdx.x * 8; k < K; k += THREADS * 8) {
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (b < p.b) v = *reinterpret_cast<const uint4*>(x + static_cast<int64_t>(b) * p.ldx + k);
        *reinterpret_cast<uint4*>(xs + static_cast<int64_t>(b) * K + k) = v;
      }
    }
  }
}

constexpr int kGemvThreads = 512;
// U: 16-byte loads in flight per lane and row (fewer for larger batches, whose accumulators need
// the registers). U = 4 at small batch fits two blocks per SM (64 registers); U = 8 keeps twice
// the loads in flight per warp with one block per SM.
template <int NB, int U>
constexpr int gemv_min_blocks() { return NB <= 2 && U <= 4 ? 2 : 1; }

// The GEMV of one block out of nblk; `wait` returns when the inputs are ready (the previous
// kernel's completion).
template <typename T, int NB, bool NORM, int U, typename Wait>
__device__ __forceinline__ void gemv_body(const GemvParams& p, int bid, int nblk, Wait&& wait) {
  constexpr int kGemvUnroll = U;
  // One alignment for every declaration of smem_raw (the module keeps one; nvcc warns when they
  // differ): 128 bytes, what the dataflow kernel's bulk copies declare.
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* xs = reinterpret_cast<T*>(smem_raw);
  __shared__ unsigned long long best_s[NB][kGemvThreads / 32];
  constexpr int WARPS = kGemvThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, K = p.k;
  const T* W = static_cast<const T*>(p.w);
  const int first = warp * nblk + bid;
  const int stride = nblk * WARPS;
  auto row_of = [&](int u, int r) { return p.mode == gemv_swiglu ? u + r * p.pair_offset : 2 * u + r; };

  // Weights do not depend on the previous kernel: start fetching them before waiting for it —
  // the first chunk of the warp's first row pair straight into the registers the loop below
  // consumes first, the rest of that pair (up to prefetch_elems) into L2.
  uint4 wa[kGemvUnroll], wb[kGemvUnroll];
  bool preloaded = false;
  if (first < p.units) {
    const T* w0 = W + static_cast<int64_t>(row_of(first, 0)) * K;
    const T* w1 = W + static_cast<int64_t>(row_of(first, 1)) * K;
#pragma unroll
    for (int j = 0; j < kGemvUnroll; ++j) {
      const int k = lane * 8 + j * 256;
      if (k < K) {
        wa[j] = ld_stream(w0 + k);
        wb[j] = ld_stream(w1 + k);
      }
    }
    preloaded = true;
    const int lim = min(K, p.prefetch_elems) * static_cast<int>(sizeof(T));
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const char* base = reinterpret_cast<const char*>(r == 0 ? w0 : w1);
      for (int off = 256 * kGemvUnroll * static_cast<int>(sizeof(T)) + lane * 128; off < lim; off += 32 * 128) {
        prefetch_l2(base + off);
      }
    }
  }
  const NormWeights<kGemvThreads> normw = load_norm_weights<NORM, kGemvThreads>(p);
  wait();
  stage_gemv_input<T, NB, NORM, kGemvThreads>(p, xs, normw);
  __syncthreads();

  unsigned long long best[NB];
#pragma unroll
  for (int b = 0; b < NB; ++b) best[b] = 0ull;

  for (int u = first; u < p.units; u += stride) {
    const int r0 = row_of(u, 0), r1 = row_of(u, 1);
    const T* w0 = W + static_cast<int64_t>(r0) * K;
    const T* w1 = W + static_cast<int64_t>(r1) * K;
    float acc0[NB], acc1[NB];
#pragma unroll
    for (int b = 0; b < NB; ++b) acc0[b] = acc1[b] = 0.f;
    for (int k0 = lane * 8; k0 < K; k0 += 256 * kGemvUnroll) {
      if (!preloaded) {
#pragma unroll
        for (int j = 0; j < kGemvUnroll; ++j) {
          const int k = k0 + j * 256;
          if (k < K) {
            wa[j] = ld_stream(w0 + k);
            wb[j] = ld_stream(w1 + k);
          }
        }
      }
      preloaded = false;
#pragma unroll
      for (int j = 0; j < kGemvUnroll; ++j) {
        const int k = k0 + j * 256;
        if (k < K) {
          float fa[8], fb[8];
          unpack8<T>(wa[j], fa);
          unpack8<T>(wb[j], fb);
#pragma unroll
          for (int b = 0; b < NB; ++b) {
            float fx[8];
            unpack8<T>(*reinterpret_cast<const uint4*>(xs + static_cast<int64_t>(b) * K + k), fx);
#pragma unroll
            for (int i = 0; i < 8; ++i) {
              acc0[b] = fmaf(fa[i], fx[i], acc0[b]);
              acc1[b] = fmaf(fb[i], fx[i], acc1[b]);
            }
          }
        }
      }
    }
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      acc0[b] = warp_sum(acc0[b]);
      acc1[b] = warp_sum(acc1[b]);
    }
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      if (lane == b && b < p.b) {
        switch (p.mode) {
          case gemv_store:
            *reinterpret_cast<uint32_t*>(static_cast<T*>(p.y) + static_cast<int64_t>(b) * p.ldy + r0) =
                pack2<T>(acc0[b], acc1[b]);
            break;
          case gemv_add: {
            float2* d = reinterpret_cast<float2*>(p.resid + static_cast<int64_t>(b) * p.ld_resid + r0);
            float2 v = *d;
            v.x += acc0[b];
            v.y += acc1[b];
            *d = v;
            break;
          }
          case gemv_swiglu:
            static_cast<T*>(p.y)[static_cast<int64_t>(b) * p.ldy + u] = Num<T>::from(silu(acc0[b]) * acc1[b]);
            break;
          default: {
            *reinterpret_cast<float2*>(static_cast<float*>(p.y) + static_cast<int64_t>(b) * p.ldy + r0) =
                make_float2(acc0[b], acc1[b]);
            const unsigned long long k0v = argmax_key(acc0[b], r0), k1v = argmax_key(acc1[b], r1);
            best[b] = max(best[b], max(k0v, k1v));
          }
        }
      }
    }
  }
  if (p.mode == gemv_logits) {
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      // lane b holds the warp's best for row b
      const unsigned long long v = __shfl_sync(0xFFFFFFFFu, best[b], b);
      if (lane == 0) best_s[b][warp] = v;
    }
    __syncthreads();
    if (threadIdx.x < NB && static_cast<int>(threadIdx.x) < p.b) {
      unsigned long long m = 0ull;
      for (int w = 0; w < WARPS; ++w) m = max(m, best_s[threadIdx.x][w]);
      atomicMax(p.argmax + threadIdx.x, m);
    }
  }
}

template <typename T, int NB, bool NORM, int U>
__global__ void __launch_bounds__(kGemvThreads, gemv_min_blocks<NB, U>()) gemv_kernel(const GemvParams p) {
  pdl_trigger();
  stamp(p.stamps, 0);
  auto wait = [&] {
    pdl_wait();
    stamp(p.stamps, 1);
  };
  gemv_body<T, NB, NORM, U, decltype(wait)&>(p, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), wait);
  if (p.stamps) __syncthreads();
  stamp(p.stamps, 2);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
}

// ---------------------------------------------------------------------------------------------
// Asynchronous 16-byte copies into shared memory for the per-warp weight rings of qkv_attn_kernel:
// each lane copies the chunks it will itself multiply, one commit group per piece, so no barrier
// is needed between lanes or warps. (A GEMV built this way for every matrix, and one fed by
// Hopper's bulk copies, were slower than gemv_kernel: a ring's fill and drain per row pair cost
// more than the register loads they replace.)
constexpr int kQaPieceMax = 2048;    // elements per piece: 8 16-byte chunks per lane
__device__ __forceinline__ void cp_async16_stream(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most n of this thread's commit groups are pending (n is an immediate in PTX).
__device__ __forceinline__ void cp_async_wait_pending(int n) {
  switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
  }
}

// ---------------------------------------------------------------------------------------------
// Decode attention for one new token per sequence: RoPE of q and of the new k, the new k/v
// written to the cache, then softmax(q K^T / sqrt(d)) V over positions 0..pos, split over blocks
// (flash-decoding) with the last block of each (sequence, kv head) combining the partial results.
struct AttnParams {
  const void* qkv;   ///< raw projections [B][qkv_ld]
  int qkv_ld;
  void* kcache;      ///< this layer's cache [B][KV][max_ctx][hd]
  void* vcache;
  int max_ctx;
  const int* pos;
  const float* inv_freq;
  float scale_log2;  ///< log2(e) / sqrt(hd)
  int heads, kv_heads;
  int splits, chunk;
  float* part_acc;   ///< [B][H][splits][hd]
  float* part_ml;    ///< [B][H][splits][2]
  unsigned* counters;  ///< [B][KV], zero between launches
  int early_kv;        ///< read pos and start the first K/V tile before waiting (only where
                       ///< everything but this step's projections is complete: inside a graph)
  void* out;         ///< [B][out_ld]
  int out_ld;
  unsigned long long* stamps;  ///< diagnostic timeline, as in GemvParams
};

constexpr int kAttnThreads = 128;
constexpr int kAttnTile = 64;  // positions per shared-memory tile; splits are multiples of it
constexpr int kMaxGroup = 8;

// The split-attention combine of the separate attention kernel (attn_combine) and the dataflow
// ring attention (flow_ring_output; the cluster kernel keeps its own loop, see cluster_kernel.cuh):
// split s's partials are its running maximum m_of(s) (log2 scale), its sum
// of weights l_of(s) and its weighted value sum acc_of(s); the result is their softmax-weighted
// mean. Splits that saw no position (m = -inf) are skipped.
template <typename M, typename L, typename A>
__device__ __forceinline__ float combine_splits(int splits, M&& m_of, L&& l_of, A&& acc_of) {
  float mx = -INFINITY;
  for (int s = 0; s < splits; ++s) mx = fmaxf(mx, m_of(s));
  float num = 0.f, den = 0.f;
  for (int s = 0; s < splits; ++s) {
    const float m = m_of(s);
    if (m == -INFINITY) continue;
    const float w = exp2f(m - mx);
    num += w * acc_of(s);
    den += w * l_of(s);
  }
  return num / den;
}

// One warp's online-softmax step over one head's n scores (log2 scale), in place into weights:
// the running maximum *m and sum *l advance, *corr is the factor that rescales the weighted sums
// so far; lane 0 writes them. The dataflow ring attention's. (The separate attention kernel keeps
// its own form, a whole 64-position tile in registers read once; the cluster kernel its own loops,
// see cluster_kernel.cuh.)
__device__ __forceinline__ void warp_softmax_step(float* s, int n, float* m, float* l, float* corr) {
  const int lane = threadIdx.x & 31;
  float mx = -INFINITY;
  for (int j = lane; j < n; j += 32) mx = fmaxf(mx, s[j]);
  mx = warp_max(mx);
  const float m_old = *m, m_new = fmaxf(m_old, mx);
  float sum = 0.f;
  for (int j = lane; j < n; j += 32) {
    const float e = exp2f(s[j] - m_new);
    s[j] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  if (lane == 0) {
    const float c = exp2f(m_old - m_new);
    *corr = c;
    *l = *l * c + sum;
    *m = m_new;
  }
}

// The last split of a KV head to finish (its partials' counter said so, after a fence): every
// split's softmax partials of the head's query heads combined into the output, by `nthreads`
// threads; the counter is zeroed for the next launch.
template <typename T, int HD>
__device__ __forceinline__ void attn_combine(const AttnParams& p, int splits, int kvh, int b, int tid, int nthreads) {
  const int g = p.heads / p.kv_heads;
  T* out = static_cast<T*>(p.out) + static_cast<int64_t>(b) * p.out_ld;
  for (int idx = tid; idx < g * HD; idx += nthreads) {
    const int h = idx / HD, dd = idx % HD;
    const int64_t row0 = (static_cast<int64_t>(b) * p.heads + kvh * g + h) * splits;
    const float v = combine_splits(
        splits, [&](int s) { return __ldcg(p.part_ml + (row0 + s) * 2); },
        [&](int s) { return __ldcg(p.part_ml + (row0 + s) * 2 + 1); },
        [&](int s) { return __ldcg(p.part_acc + (row0 + s) * HD + dd); });
    out[(kvh * g + h) * HD + dd] = Num<T>::from(v);
  }
  if (tid == 0) p.counters[b * p.kv_heads + kvh] = 0u;
}

// Each block: one sequence, one KV head (all its query heads), one split of the positions. A tile
// of K and V rows is copied into shared memory at once (cp.async, one memory round trip), then
// scores, online softmax and the V sum run from shared memory.
// One (split, kv head, sequence) item by the block's first kAttnThreads threads; `sync` is their
// barrier (__syncthreads, or a named barrier inside the persistent decode kernel), `wait` returns
// when the projections are ready.
template <typename T, int HD, typename Sync, typename Wait>
__device__ __forceinline__ void attn_body(const AttnParams& p, int split, int kvh, int b, Sync&& sync, Wait&& wait) {
  constexpr int TILE = kAttnTile;
  constexpr int KP = HD + 8;             // padded K rows: conflict-free 16-byte reads down a column
  constexpr int TG = kAttnThreads / HD;  // thread groups over positions in the V pass
  constexpr int HALF = HD / 2;
  __shared__ __align__(16) T ks[TILE * KP];
  __shared__ __align__(16) T vs[TILE * HD];
  __shared__ float qs[kMaxGroup][HD];
  __shared__ float sc[kMaxGroup][TILE];
  __shared__ float m_s[kMaxGroup], l_s[kMaxGroup], corr_s[kMaxGroup];
  __shared__ float red[TG > 1 ? kMaxGroup : 1][TG > 1 ? kAttnThreads : 1];
  __shared__ bool last_s;
  const int g = p.heads / p.kv_heads, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (!p.early_kv) wait();
  const int pos = p.pos[b];
  const int ctx = pos + 1;
  const int start = split * p.chunk, end = min(start + p.chunk, ctx);
  const T* qkv = static_cast<const T*>(p.qkv) + static_cast<int64_t>(b) * p.qkv_ld;
  const int64_t cache_base = (static_cast<int64_t>(b) * p.kv_heads + kvh) * p.max_ctx * HD;
  T* kc = static_cast<T*>(p.kcache) + cache_base;
  T* vc = static_cast<T*>(p.vcache) + cache_base;
  // Copies the cached K/V rows of one tile (all but the new position) into shared memory.
  auto issue_tile = [&](int t0) {
    const int nt = min(TILE, end - t0);
    for (int i = tid; i < nt * (HD / 8); i += kAttnThreads) {
      const int r = i / (HD / 8), c = (i % (HD / 8)) * 8;
      const int t = t0 + r;
      if (t != pos) {
        cp_async16(ks + r * KP + c, kc + static_cast<int64_t>(t) * HD + c);
        cp_async16(vs + r * HD + c, vc + static_cast<int64_t>(t) * HD + c);
      }
    }
  };
  // The cache rows before pos were written by earlier steps: their first tile is on its way
  // while this step's projections finish.
  if (p.early_kv) {
    if (start < end) issue_tile(start);
    wait();
  }
  for (int idx = tid; idx < g * HALF; idx += kAttnThreads) {
    const int h = idx / HALF, i = idx % HALF;
    const T* q = qkv + (kvh * g + h) * HD;
    float s, c;
    sincosf(static_cast<float>(pos) * p.inv_freq[i], &s, &c);
    const float x1 = Num<T>::to(q[i]), x2 = Num<T>::to(q[i + HALF]);
    qs[h][i] = (x1 * c - x2 * s) * p.scale_log2;
    qs[h][i + HALF] = (x2 * c + x1 * s) * p.scale_log2;
  }
  // The new token's key (roped) and value: into the cache, and kept for this block's last tile.
  T knew_lo = Num<T>::from(0.f), knew_hi = knew_lo, vnew = knew_lo;
  const bool owns_new = start <= pos && pos < end;
  if (owns_new) {
    const T* kn = qkv + p.heads * HD + kvh * HD;
    const T* vn = qkv + (p.heads + p.kv_heads) * HD + kvh * HD;
    if (tid < HALF) {
      float s, c;
      sincosf(static_cast<float>(pos) * p.inv_freq[tid], &s, &c);
      const float x1 = Num<T>::to(kn[tid]), x2 = Num<T>::to(kn[tid + HALF]);
      knew_lo = Num<T>::from(x1 * c - x2 * s);
      knew_hi = Num<T>::from(x2 * c + x1 * s);
      kc[static_cast<int64_t>(pos) * HD + tid] = knew_lo;
      kc[static_cast<int64_t>(pos) * HD + tid + HALF] = knew_hi;
    }
    if (tid < HD) {
      vnew = vn[tid];
      vc[static_cast<int64_t>(pos) * HD + tid] = vnew;
    }
  }
  if (tid < kMaxGroup) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.f;
  }
  sync();

  const int d = tid % HD, tg = tid / HD;
  float acc[kMaxGroup];
#pragma unroll
  for (int h = 0; h < kMaxGroup; ++h) acc[h] = 0.f;

  for (int t0 = start; t0 < end; t0 += TILE) {
    const int nt = min(TILE, end - t0);
    if (!(p.early_kv && t0 == start)) issue_tile(t0);
    if (owns_new && pos < t0 + TILE && pos >= t0) {
      const int r = pos - t0;
      if (tid < HALF) {
        ks[r * KP + tid] = knew_lo;
        ks[r * KP + tid + HALF] = knew_hi;
      }
      if (tid < HD) vs[r * HD + tid] = vnew;
    }
    cp_async_wait_all();
    sync();
    // Scores: thread (position r, half hp) for heads hp, hp + 2, ...
    {
      const int r = tid % TILE, hp = tid / TILE;
      float s[kMaxGroup / 2];
#pragma unroll
      for (int j = 0; j < kMaxGroup / 2; ++j) s[j] = 0.f;
      if (r < nt) {
#pragma unroll
        for (int c = 0; c < HD; c += 8) {
          float kf[8];
          unpack8<T>(*reinterpret_cast<const uint4*>(ks + r * KP + c), kf);
#pragma unroll
          for (int j = 0; j < kMaxGroup / 2; ++j) {
            const int h = hp + 2 * j;
            if (h < g) {
#pragma unroll
              for (int e = 0; e < 8; ++e) s[j] = fmaf(kf[e], qs[h][c + e], s[j]);
            }
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kMaxGroup / 2; ++j) {
        const int h = hp + 2 * j;
        if (h < g) sc[h][r] = r < nt ? s[j] : -INFINITY;
      }
    }
    sync();
    for (int h = warp; h < g; h += kAttnThreads / 32) {
      float v[TILE / 32];
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < TILE / 32; ++j) {
        v[j] = sc[h][lane + 32 * j];
        mx = fmaxf(mx, v[j]);
      }
      mx = warp_max(mx);
      const float m_old = m_s[h];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < TILE / 32; ++j) {
        const float e = exp2f(v[j] - m_new);
        sc[h][lane + 32 * j] = e;
        sum += e;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float corr = exp2f(m_old - m_new);
        corr_s[h] = corr;
        l_s[h] = l_s[h] * corr + sum;
        m_s[h] = m_new;
      }
    }
    sync();
#pragma unroll
    for (int h = 0; h < kMaxGroup; ++h) {
      if (h < g) acc[h] *= corr_s[h];
    }
#pragma unroll 8
    for (int j = tg; j < nt; j += TG) {
      const float v = Num<T>::to(vs[j * HD + d]);
#pragma unroll
      for (int h = 0; h < kMaxGroup; ++h) {
        if (h < g) acc[h] = fmaf(sc[h][j], v, acc[h]);
      }
    }
    sync();
  }
  if constexpr (TG > 1) {
#pragma unroll
    for (int h = 0; h < kMaxGroup; ++h) {
      if (h < g) red[h][tid] = acc[h];
    }
    sync();
    if (tg == 0) {
#pragma unroll
      for (int h = 0; h < kMaxGroup; ++h) {
        if (h < g) {
          float s = 0.f;
          for (int j = 0; j < TG; ++j) s += red[h][j * HD + d];
          acc[h] = s;
        }
      }
    }
  }
  T* out = static_cast<T*>(p.out) + static_cast<int64_t>(b) * p.out_ld;
  if (p.splits == 1) {
    if (tg == 0) {
#pragma unroll
      for (int h = 0; h < kMaxGroup; ++h) {
        if (h < g) out[(kvh * g + h) * HD + d] = Num<T>::from(acc[h] / l_s[h]);
      }
    }
    return;
  }
  if (tg == 0) {
#pragma unroll
    for (int h = 0; h < kMaxGroup; ++h) {
      if (h < g) {
        const int64_t row = (static_cast<int64_t>(b) * p.heads + kvh * g + h) * p.splits + split;
        p.part_acc[row * HD + d] = acc[h];
        if (d == 0) {
          p.part_ml[row * 2] = m_s[h];
          p.part_ml[row * 2 + 1] = l_s[h];
        }
      }
    }
  }
  __threadfence();
  sync();
  if (tid == 0) {
    const unsigned prev = atomicAdd(p.counters + b * p.kv_heads + kvh, 1u);
    last_s = (prev == static_cast<unsigned>(p.splits - 1));
  }
  sync();
  if (!last_s) return;
  __threadfence();
  attn_combine<T, HD>(p, p.splits, kvh, b, tid, kAttnThreads);
}

template <typename T, int HD>
__global__ void __launch_bounds__(kAttnThreads) attn_decode_kernel(const AttnParams p) {
  pdl_trigger();
  stamp(p.stamps, 0);
  attn_body<T, HD>(p, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z),
                   [] { __syncthreads(); }, [&] {
                     pdl_wait();
                     stamp(p.stamps, 1);
                   });
  if (p.stamps) __syncthreads();
  stamp(p.stamps, 2);
}

// ---------------------------------------------------------------------------------------------
// Token bookkeeping after sampling: the chosen token goes to the history, its embedding becomes
// the next step's residual input, the position advances. commit=0 only gathers the embedding
// (used when the step is replayed in isolation).
struct AdvanceParams {
  unsigned long long* argmax;
  int* hist;
  int hist_ld;
  int* step;
  int* pos;
  const void* embed;
  float* resid;
  int hidden;
  int commit;
  int inc;
};

template <typename T>
__device__ __forceinline__ void advance_body(const AdvanceParams& p, int b) {
  const int tok = key_index(p.argmax[b]);
  const T* e = static_cast<const T*>(p.embed) + static_cast<int64_t>(tok) * p.hidden;
  for (int k = threadIdx.x; k < p.hidden; k += blockDim.x) p.resid[static_cast<int64_t>(b) * p.hidden + k] = Num<T>::to(e[k]);
  __syncthreads();
  if (p.commit && threadIdx.x == 0) {
    if (p.step[b] < p.hist_ld) p.hist[b * p.hist_ld + p.step[b]] = tok;
    p.step[b] += 1;
    p.pos[b] += p.inc;
    p.argmax[b] = 0ull;
  }
}

template <typename T>
__global__ void advance_kernel(const AdvanceParams p) {
  pdl_trigger();
  pdl_wait();
  advance_body<T>(p, static_cast<int>(blockIdx.x));
}

// Back to the state after prefill: first generated token, positions = prompt lengths.
template <typename T>
__global__ void rewind_kernel(const int* prompt_len, const int* hist, int hist_ld, int* step, int* pos,
                              unsigned long long* argmax, const void* embed, float* resid, int hidden) {
  const int b = blockIdx.x;
  const int tok = hist[b * hist_ld];
  const T* e = static_cast<const T*>(embed) + static_cast<int64_t>(tok) * hidden;
  for (int k = threadIdx.x; k < hidden; k += blockDim.x) resid[static_cast<int64_t>(b) * hidden + k] = Num<T>::to(e[k]);
  if (threadIdx.x == 0) {
    step[b] = 1;
    pos[b] = prompt_len[b];
    argmax[b] = 0ull;
  }
}

// ---------------------------------------------------------------------------------------------
// Prefill / cuBLAS-path kernels.
template <typename T>
__global__ void embed_kernel(const int* tokens, const void* embed, float* resid, int hidden) {
  const int i = blockIdx.x;
  const T* e = static_cast<const T*>(embed) + static_cast<int64_t>(tokens[i]) * hidden;
  for (int k = threadIdx.x; k < hidden; k += blockDim.x) resid[static_cast<int64_t>(i) * hidden + k] = Num<T>::to(e[k]);
}

// out[i] = RMSNorm(in[rows ? rows[i] : i]) * w, rounded to T.
template <typename T>
__global__ void rmsnorm_kernel(const float* in, int ld_in, const int* rows, const float* w, float eps, T* out,
                               int ld_out, int n) {
  __shared__ float red[32];
  __shared__ float rstd;
  pdl_trigger();
  pdl_wait();
  const int i = blockIdx.x;
  const float* x = in + static_cast<int64_t>(rows ? rows[i] : i) * ld_in;
  float ss = 0.f;
  for (int k = threadIdx.x; k < n; k += blockDim.x) ss += x[k] * x[k];
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int j = 0; j < static_cast<int>(blockDim.x / 32); ++j) s += red[j];
    rstd = rsqrtf(s / n + eps);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < n; k += blockDim.x) out[static_cast<int64_t>(i) * ld_out + k] = Num<T>::from(x[k] * rstd * w[k]);
}

// Prefill: RoPE on q (in place) and k, k and v into the cache, for each token of the chunk.
template <typename T>
__global__ void rope_store_kernel(T* qkv, int qkv_ld, const int* tok_seq, const int* tok_pos, T* kcache, T* vcache,
                                  int max_ctx, const float* inv_freq, int heads, int kv_heads, int hd) {
  const int i = blockIdx.x;
  const int b = tok_seq[i], pos = tok_pos[i], half = hd / 2;
  T* row = qkv + static_cast<int64_t>(i) * qkv_ld;
  for (int idx = threadIdx.x; idx < (heads + kv_heads) * half; idx += blockDim.x) {
    const int h = idx / half, j = idx % half;
    T* v = row + h * hd;
    float s, c;
    sincosf(static_cast<float>(pos) * inv_freq[j], &s, &c);
    const float x1 = Num<T>::to(v[j]), x2 = Num<T>::to(v[j + half]);
    const T y1 = Num<T>::from(x1 * c - x2 * s), y2 = Num<T>::from(x2 * c + x1 * s);
    if (h < heads) {
      v[j] = y1;
      v[j + half] = y2;
    } else {
      T* k = kcache + ((static_cast<int64_t>(b) * kv_heads + (h - heads)) * max_ctx + pos) * hd;
      k[j] = y1;
      k[j + half] = y2;
    }
  }
  for (int idx = threadIdx.x; idx < kv_heads * hd; idx += blockDim.x) {
    const int h = idx / hd, j = idx % hd;
    vcache[((static_cast<int64_t>(b) * kv_heads + h) * max_ctx + pos) * hd + j] = row[(heads + kv_heads) * hd + idx];
  }
}

// Pointer arrays for the batched attention GEMMs of one prefill sub-chunk: entry i = s * heads + h.
struct AttnPtrs {
  const void** qk_a;
  const void** qk_b;
  void** qk_c;
  const void** pv_a;
  const void** pv_b;
  void** pv_c;
};
template <typename T>
__global__ void build_ptrs_kernel(AttnPtrs a, const int* seq_of, int nseq, int heads, int kv_heads, int hd,
                                  const T* kcache, const T* vcache, int max_ctx, const T* qkv, int qkv_ld,
                                  int rows_per_seq, int qoff, float* s_buf, T* p_buf, int64_t s_stride, T* attn_out,
                                  int out_ld) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nseq * heads) return;
  const int s = i / heads, h = i % heads, g = heads / kv_heads;
  const int b = seq_of[s];
  const int64_t cache = (static_cast<int64_t>(b) * kv_heads + h / g) * max_ctx * hd;
  const int64_t qrow = static_cast<int64_t>(s) * rows_per_seq + qoff;
  a.qk_a[i] = kcache + cache;
  a.qk_b[i] = qkv + qrow * qkv_ld + h * hd;
  a.qk_c[i] = s_buf + i * s_stride;
  a.pv_a[i] = vcache + cache;
  a.pv_b[i] = p_buf + i * s_stride;
  a.pv_c[i] = attn_out + qrow * out_ld + h * hd;
}

// Causal softmax of the score rows of one sub-chunk: row r of matrix i is query position
// first_pos + r, which sees keys 0..first_pos + r. Writes probabilities as T (0 where masked).
template <typename T>
__global__ void softmax_causal_kernel(const float* s, T* pm, int rows, int kv_len, int first_pos, float scale_log2,
                                      int nmat) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= rows * nmat) return;
  const int r = warp % rows;
  const float* x = s + static_cast<int64_t>(warp) * kv_len;
  T* y = pm + static_cast<int64_t>(warp) * kv_len;
  const int valid = min(kv_len, first_pos + r + 1);
  float mx = -INFINITY;
  for (int t = lane; t < valid; t += 32) mx = fmaxf(mx, x[t] * scale_log2);
  mx = warp_max(mx);
  float sum = 0.f;
  for (int t = lane; t < valid; t += 32) sum += exp2f(x[t] * scale_log2 - mx);
  sum = warp_sum(sum);
  const float inv = 1.f / sum;
  for (int t = lane; t < kv_len; t += 32) y[t] = Num<T>::from(t < valid ? exp2f(x[t] * scale_log2 - mx) * inv : 0.f);
}

template <typename T>
__global__ void swiglu_kernel(const T* gu, T* act, int inter, int64_t n) {
  pdl_trigger();
  pdl_wait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / inter, j = i % inter;
    const float g = Num<T>::to(gu[t * 2 * inter + j]), u = Num<T>::to(gu[t * 2 * inter + inter + j]);
    act[i] = Num<T>::from(silu(g) * u);
  }
}

// Greedy pick over float logits rows; row i goes to batch row out_idx[i] (identity when null),
// and the logits are copied to logits_out[out_idx[i]] when given.
__global__ void argmax_kernel(const float* logits, int vocab, const int* out_idx, unsigned long long* argmax,
                              float* logits_out) {
  __shared__ unsigned long long red[32];
  pdl_trigger();
  pdl_wait();
  const int i = blockIdx.x;
  const int b = out_idx ? out_idx[i] : i;
  const float* x = logits + static_cast<int64_t>(i) * vocab;
  unsigned long long best = 0ull;
  for (int t = threadIdx.x; t < vocab; t += blockDim.x) {
    best = max(best, argmax_key(x[t], t));
    if (logits_out && logits_out != logits) logits_out[static_cast<int64_t>(b) * vocab + t] = x[t];
  }
  for (int o = 16; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(0xFFFFFFFFu, best, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int j = 0; j < static_cast<int>(blockDim.x / 32); ++j) best = max(best, red[j]);
    argmax[b] = best;
  }
}

// Top-k sampling (host twin: top_k_draw in sampling.hpp), in two stages. (1) Each row is cut into
// shards, one block each: the shard's logits go to shared memory as order-preserving 32-bit keys,
// a radix select (4 passes of 8 bits) finds the shard's k-th largest key, and the shard's top k
// (ties at the threshold: the smaller ids) go to a candidate list. The row's top k lie in the
// union of the shards' lists: a logit beaten by fewer than k in its row is beaten by fewer than k
// in its shard. (2) One block per row selects the top k of the candidates the same way, ranks
// them (larger logit first, then the smaller id) and draws one token from their softmax at the
// given temperature with sample_uniform(seed, row, step). The pick is written as an argmax key,
// so the token bookkeeping is greedy decoding's.
struct SampleParams {
  const float* logits;  ///< [rows][vocab]
  int vocab, k;
  float inv_temperature;
  uint64_t seed;
  const int* step;      ///< draw index per row: tokens generated so far
  unsigned long long* argmax;
  int shards, shard_len;
  uint32_t* cand_key;   ///< [rows][shards][k]
  int* cand_idx;        ///< [rows][shards][k]
  int* cand_n;          ///< [rows][shards]
};

constexpr int kShardThreads = 256;
constexpr int kMaxShardLen = 8192;     // keys of one shard in shared memory (32 KiB)
constexpr int kMaxCandidates = 8192;   // shards * k, in the picking block's shared memory
constexpr int kPickThreads = 1024;
constexpr int kPickSelected = 1024;    // candidates at or above the row's threshold (k plus ties)

__device__ __forceinline__ uint32_t order_key(float v) {
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float key_value(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k);
}

// The k-th largest of keys[0, n) (shared memory; 1 <= k <= n) and how many keys equal to it
// belong to the top k. Called by every thread of the block.
__device__ void radix_select(const uint32_t* keys, int n, int k, unsigned* hist, uint32_t* s_prefix, int* s_need,
                             uint32_t& threshold, int& need) {
  uint32_t prefix = 0, mask = 0;
  need = k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const uint32_t key = keys[i];
      if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // The digit holding the need-th largest key: lane l owns bins 255-8l down to 248-8l; a scan
      // over the lanes gives each the count of keys in higher bins (a serial walk over 256 bins
      // cost ~4 us per pass on an H100).
      const int l = threadIdx.x;
      int c[8], tot = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) tot += c[j] = static_cast<int>(hist[255 - 8 * l - j]);
      int incl = tot;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xFFFFFFFFu, incl, o);
        if (l >= o) incl += y;
      }
      int run = incl - tot;
      if (run < need && need <= incl) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (run + c[j] >= need) {
            *s_prefix = prefix | (static_cast<uint32_t>(255 - 8 * l - j) << shift);
            *s_need = need - run;
            break;
          }
          run += c[j];
        }
      }
    }
    __syncthreads();
    prefix = *s_prefix;
    need = *s_need;
    mask |= 255u << shift;
    __syncthreads();  // before the next pass rewrites hist and the shared results
  }
  threshold = prefix;
}

__global__ void __launch_bounds__(kShardThreads) topk_shard_kernel(const SampleParams p) {
  __shared__ uint32_t keys[kMaxShardLen];
  __shared__ unsigned hist[256];
  __shared__ uint32_t s_prefix;
  __shared__ int s_need, s_above, warp_ties[kShardThreads / 32];
  pdl_trigger();
  pdl_wait();
  const int sh = blockIdx.x, b = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int lo = sh * p.shard_len, n = max(0, min(p.shard_len, p.vocab - lo));
  const float* x = p.logits + static_cast<int64_t>(b) * p.vocab + lo;
  for (int i = tid; i < n; i += kShardThreads) keys[i] = order_key(x[i]);
  if (tid == 0) s_above = 0;
  __syncthreads();
  const int k = min(p.k, n);
  const int64_t slot = static_cast<int64_t>(b) * p.shards + sh;
  if (tid == 0) p.cand_n[slot] = k;
  if (k == 0) return;
  uint32_t* ok = p.cand_key + slot * p.k;
  int* oi = p.cand_idx + slot * p.k;
  uint32_t thr;
  int need;
  radix_select(keys, n, k, hist, &s_prefix, &s_need, thr, need);
  for (int i = tid; i < n; i += kShardThreads) {  // the k - need keys above the threshold, any order
    if (keys[i] > thr) {
      const int at = atomicAdd(&s_above, 1);
      ok[at] = keys[i];
      oi[at] = lo + i;
    }
  }
  // Ties at the threshold: the `need` smallest ids. Each thread owns a contiguous segment; a
  // block-wide exclusive scan of the per-segment tie counts gives each its first position.
  const int seg = (n + kShardThreads - 1) / kShardThreads, a = tid * seg, e = min(n, a + seg);
  int ties = 0;
  for (int i = a; i < e; ++i) ties += keys[i] == thr;
  int incl = ties;
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xFFFFFFFFu, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) warp_ties[warp] = incl;
  __syncthreads();
  int before = incl - ties;
  for (int w = 0; w < warp; ++w) before += warp_ties[w];
  const int g = k - need;
  for (int i = a; i < e && before < need; ++i) {
    if (keys[i] == thr) {
      ok[g + before] = thr;
      oi[g + before] = lo + i;
      ++before;
    }
  }
}

__global__ void __launch_bounds__(kPickThreads) topk_pick_kernel(const SampleParams p) {
  extern __shared__ uint32_t cand[];  // keys [shards * k], then ids [shards * k]
  __shared__ unsigned hist[256];
  __shared__ uint32_t s_prefix;
  __shared__ int s_need, s_n;
  __shared__ uint32_t sel_key[kPickSelected];
  __shared__ int sel_idx[kPickSelected];
  __shared__ float top_v[kMaxTopK];
  __shared__ int top_i[kMaxTopK];
  pdl_trigger();
  pdl_wait();
  const int b = blockIdx.x, tid = threadIdx.x;
  const int cap = p.shards * p.k;
  uint32_t* keys = cand;
  int* idx = reinterpret_cast<int*>(cand + cap);
  for (int i = tid; i < cap; i += kPickThreads) {  // unused slots: key 0, below every logit
    const bool used = i % p.k < p.cand_n[static_cast<int64_t>(b) * p.shards + i / p.k];
    keys[i] = used ? p.cand_key[static_cast<int64_t>(b) * cap + i] : 0u;
    idx[i] = used ? p.cand_idx[static_cast<int64_t>(b) * cap + i] : -1;
  }
  if (tid == 0) s_n = 0;
  __syncthreads();
  const int k = min(p.k, p.vocab);
  uint32_t thr;
  int need;
  radix_select(keys, cap, k, hist, &s_prefix, &s_need, thr, need);
  for (int i = tid; i < cap; i += kPickThreads) {
    if (idx[i] >= 0 && keys[i] >= thr) {
      const int at = atomicAdd(&s_n, 1);
      if (at < kPickSelected) {
        sel_key[at] = keys[i];
        sel_idx[at] = idx[i];
      }
    }
  }
  __syncthreads();
  const int n = min(s_n, kPickSelected);
  for (int i = tid; i < n; i += kPickThreads) {
    int rank = 0;
    for (int j = 0; j < n; ++j) {
      rank += sel_key[j] > sel_key[i] || (sel_key[j] == sel_key[i] && sel_idx[j] < sel_idx[i]);
    }
    if (rank < k) {
      top_v[rank] = key_value(sel_key[i]);
      top_i[rank] = sel_idx[i];
    }
  }
  __syncthreads();
  if (tid == 0) {
    float total = 0.f;
    for (int i = 0; i < k; ++i) total += __expf((top_v[i] - top_v[0]) * p.inv_temperature);
    const float target = sample_uniform(p.seed, b, p.step[b]) * total;
    float cum = 0.f;
    int pick = k - 1;
    for (int i = 0; i < k; ++i) {
      cum += __expf((top_v[i] - top_v[0]) * p.inv_temperature);
      if (target < cum) {
        pick = i;
        break;
      }
    }
    p.argmax[b] = argmax_key(top_v[pick], top_i[pick]);
  }
}

}  // namespace jouleprof::llm::kern
