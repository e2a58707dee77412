// CUDA kernels of the Llama engine. T is __nv_bfloat16 or __half; accumulation is float.
// Layouts (row-major): weights [out][in] as in Hugging Face checkpoints; activations [token][dim];
// KV cache [batch][kv_head][position][head_dim] per layer; the residual stream in float32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <mma.h>

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
  NormWeights<THREADS> nw;
  if constexpr (NORM) {
#pragma unroll
    for (int j = 0; j < NormWeights<THREADS>::kVec; ++j) {
      const int k = threadIdx.x * 4 + j * THREADS * 4;
      if (k < p.k) nw.g[j] = *reinterpret_cast<const float4*>(p.norm_w + k);
    }
  }
  return nw;
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
// kernel's completion, or a grid barrier inside the persistent decode kernel).
// KS > 1 splits K: the block's warps form slots of KS warps, each slot takes a row pair at a time
// and each of its warps a K/KS slice (K a multiple of 8 * KS), so a product with few row pairs
// (the 1B model's down projection: 1024) keeps loads in flight on KS times as many SMs.
template <typename T, int NB, bool NORM, int U, typename Wait, int KS = 1>
__device__ __forceinline__ void gemv_body(const GemvParams& p, int bid, int nblk, Wait&& wait) {
  constexpr int kGemvUnroll = U;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* xs = reinterpret_cast<T*>(smem_raw);
  __shared__ unsigned long long best_s[NB][kGemvThreads / 32];
  constexpr int WARPS = kGemvThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, K = p.k;
  const T* W = static_cast<const T*>(p.w);
  constexpr int SLOTS = WARPS / KS;
  const int slot = warp / KS, part = warp % KS;
  const int kb = part * (K / KS), ke = part + 1 == KS ? K : kb + K / KS;
  const int first = slot * nblk + bid;
  const int stride = nblk * SLOTS;
  // Split K: every warp runs as many iterations as the block's first slot (the most), so that
  // the slot's partial sums can meet at block barriers.
  const int iters = KS > 1 ? (p.units - bid + stride - 1) / stride : 0;
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
      const int k = kb + lane * 8 + j * 256;
      if (k < ke) {
        wa[j] = ld_stream(w0 + k);
        wb[j] = ld_stream(w1 + k);
      }
    }
    preloaded = true;
    const int lim = min(ke - kb, p.prefetch_elems) * static_cast<int>(sizeof(T));
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const char* base = reinterpret_cast<const char*>((r == 0 ? w0 : w1) + kb);
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

  for (int u = first, it = 0; KS > 1 ? it < iters : u < p.units; u += stride, ++it) {
    const bool active = KS == 1 || u < p.units;
    const int r0 = row_of(u, 0), r1 = row_of(u, 1);
    const T* w0 = W + static_cast<int64_t>(r0) * K;
    const T* w1 = W + static_cast<int64_t>(r1) * K;
    float acc0[NB], acc1[NB];
#pragma unroll
    for (int b = 0; b < NB; ++b) acc0[b] = acc1[b] = 0.f;
    for (int k0 = kb + lane * 8; active && k0 < ke; k0 += 256 * kGemvUnroll) {
      if (!preloaded) {
#pragma unroll
        for (int j = 0; j < kGemvUnroll; ++j) {
          const int k = k0 + j * 256;
          if (k < ke) {
            wa[j] = ld_stream(w0 + k);
            wb[j] = ld_stream(w1 + k);
          }
        }
      }
      preloaded = false;
#pragma unroll
      for (int j = 0; j < kGemvUnroll; ++j) {
        const int k = k0 + j * 256;
        if (k < ke) {
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
    if constexpr (KS > 1) {
      // The slot's first warp adds the other slices' sums, in slice order (deterministic).
      __shared__ float2 kpart[WARPS][NB];
      if (lane == 0) {
#pragma unroll
        for (int b = 0; b < NB; ++b) kpart[warp][b] = make_float2(acc0[b], acc1[b]);
      }
      __syncthreads();
      if (part == 0) {
#pragma unroll
        for (int q = 1; q < KS; ++q) {
#pragma unroll
          for (int b = 0; b < NB; ++b) {
            acc0[b] += kpart[warp + q][b].x;
            acc1[b] += kpart[warp + q][b].y;
          }
        }
      }
      __syncthreads();  // read before the next row pair's sums overwrite them
    }
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      if (active && part == 0 && lane == b && b < p.b) {
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

template <typename T, int NB, bool NORM, int U, int KS = 1>
__global__ void __launch_bounds__(kGemvThreads, gemv_min_blocks<NB, U>()) gemv_kernel(const GemvParams p) {
  pdl_trigger();
  stamp(p.stamps, 0);
  auto wait = [&] {
    pdl_wait();
    stamp(p.stamps, 1);
  };
  gemv_body<T, NB, NORM, U, decltype(wait)&, KS>(p, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), wait);
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
// is needed between lanes or warps. (A GEMV built this way for every matrix, `--variant ring`,
// and one fed by Hopper's bulk copies were measured slower than gemv_kernel: bench-llm.md runs 19-23.)
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
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s) M = fmaxf(M, __ldcg(p.part_ml + (row0 + s) * 2));
    float num = 0.f, den = 0.f;
    for (int s = 0; s < splits; ++s) {
      const float m = __ldcg(p.part_ml + (row0 + s) * 2);
      if (m == -INFINITY) continue;
      const float w = exp2f(m - M);
      num += w * __ldcg(p.part_acc + (row0 + s) * HD + dd);
      den += w * __ldcg(p.part_ml + (row0 + s) * 2 + 1);
    }
    out[(kvh * g + h) * HD + dd] = Num<T>::from(num / den);
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
// QKV projection and decode attention in one kernel (batch 1, `--variant fqa`, sm_90): one thread
// block cluster per KV head. The cluster's CTAs compute the q rows of the head's query group and
// its k and v rows (RMSNorm folded in; every warp streams its rows, in pieces of at most 2048
// elements, through its own ring of shared-memory stages filled by asynchronous copies; the first
// pieces and the CTA's first tile of cached K/V are requested before the wait for the previous
// kernel), send them to every CTA of the cluster (stores to distributed shared memory, then one
// cluster barrier), apply RoPE, and each CTA takes one split of the positions; each CTA sends the
// others its softmax partials for their slices of the head's outputs (again stores, then a
// barrier) and combines its slice from what it received. Every exchange is a push followed by a
// barrier: no remote loads, whose round trips would follow the barrier, and no closing barrier
// (measured against loads after the barrier: runs 40-45, docs/validation/bench-llm.md).
// Against the separate QKV and attention kernels this removes a kernel boundary, the projections'
// round trip through global memory and the global-memory combine (partials, fence, counter) —
// the serial latency that left HBM idle for ~13 us per layer (docs/validation/bench-llm.md run 22).
struct QkvAttnParams {
  GemvParams g;   ///< the QKV projection with its RMSNorm (y unused: the results stay on chip)
  AttnParams a;   ///< cache, position, rotary frequencies, output, early_kv, stamps
  int cluster;    ///< CTAs per KV head
  int piece, stages;  ///< per-warp weight ring
  int pre;            ///< ring stages requested before the wait (the rest after the RMSNorm's input is read)
};

constexpr int kQaTile = 64;      // cached positions per shared-memory tile
constexpr int kMaxCluster = 16;  // CTAs per cluster (16 needs the non-portable cluster size)

// Dynamic shared memory of qkv_attn_kernel, bytes.
__host__ __device__ constexpr size_t qkv_attn_smem(int warps, int k, int hd, int rows, int piece, int stages, int elem) {
  return static_cast<size_t>(warps) * stages * piece * elem + static_cast<size_t>(k) * elem +
         2 * static_cast<size_t>(kQaTile) * hd * elem +
         sizeof(float) * (static_cast<size_t>(rows) + kMaxGroup * kQaTile + kMaxGroup * hd + 3 * kMaxGroup + hd +
                          kMaxGroup * hd + kMaxCluster + 2 * kMaxCluster * kMaxGroup);
}

template <typename T, int HD, int THREADS>
__global__ void __launch_bounds__(THREADS, 1) qkv_attn_kernel(const QkvAttnParams P) {
  pdl_trigger();
  constexpr int WARPS = THREADS / 32;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  constexpr int HALF = HD / 2, J = kQaPieceMax / 256, TILE = kQaTile;
  const GemvParams& p = P.g;
  const AttnParams& a = P.a;
  stamp(a.stamps, 0);
  cg::cluster_group cluster = cg::this_cluster();
  // Stores to another CTA's shared memory need every CTA of the cluster started: this arrival is
  // waited on just before the first of them.
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  const int CS = P.cluster, rank = static_cast<int>(cluster.block_rank()), kvh = static_cast<int>(blockIdx.x) / CS;
  const int g = a.heads / a.kv_heads, R = (g + 2) * HD, Q = a.heads * HD, KVD = a.kv_heads * HD;
  const int K = p.k, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int r0 = rank * R / CS, nrows = (rank + 1) * R / CS - r0;
  const int S = P.stages, PK = P.piece, ppr = (K + PK - 1) / PK;
  extern __shared__ __align__(16) unsigned char qa_smem[];
  T* ring = reinterpret_cast<T*>(qa_smem) + static_cast<size_t>(warp) * S * PK;
  T* xs = reinterpret_cast<T*>(qa_smem) + static_cast<size_t>(WARPS) * S * PK;
  T* ks = xs + K;             // [TILE][HD]
  T* vs = ks + TILE * HD;     // [TILE][HD]
  float* head = reinterpret_cast<float*>(vs + TILE * HD);  // the head's R rows, sent by all CTAs
  float* sc = head + R;                 // [g][TILE] scores, then probabilities
  float* acc = sc + kMaxGroup * TILE;   // [g][HD]
  float* m_s = acc + kMaxGroup * HD;    // [g]
  float* l_s = m_s + kMaxGroup;
  float* corr_s = l_s + kMaxGroup;
  float* rope = corr_s + kMaxGroup;     // [HALF] cos, [HALF] sin
  // The partials the CTAs send for this CTA's slice of the outputs, [CS][sl], and their softmax
  // maxima and sums, [kMaxCluster][kMaxGroup] each.
  float* part = rope + HD;
  float* ml = part + kMaxGroup * HD + kMaxCluster;
  // Row i of the head's (g + 2) * HD rows -> row of W: its q heads, then its k and v rows.
  auto wrow = [&](int i) -> int64_t {
    if (i < g * HD) return static_cast<int64_t>(kvh) * g * HD + i;
    if (i < (g + 1) * HD) return Q + static_cast<int64_t>(kvh) * HD + (i - g * HD);
    return Q + KVD + static_cast<int64_t>(kvh) * HD + (i - (g + 1) * HD);
  };
  // The warp's rows of this CTA: w, w + 8, ...; piece i of them into stage i % S (one commit group).
  const int my_rows = warp < nrows ? (nrows - warp + WARPS - 1) / WARPS : 0;
  const int npieces = my_rows * ppr;
  const T* W = static_cast<const T*>(p.w);
  auto issue = [&](int i) {
    if (i < npieces) {
      const int ri = i / ppr, k0 = (i - ri * ppr) * PK, len = min(PK, K - k0);
      const T* src = W + wrow(r0 + warp + ri * WARPS) * K + k0;
      T* dst = ring + (i % S) * PK;
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const int e = lane * 8 + j * 256;
        if (e < len) cp_async16_stream(dst + e, src + e);
      }
    }
    cp_async_commit();
  };
  // This CTA's split of the positions 0..pos: cached rows of one tile into ks/vs (pos itself is
  // the new token's, filled in from the projections).
  const int64_t cache_base = static_cast<int64_t>(kvh) * a.max_ctx * HD;  // batch 1
  T* kc = static_cast<T*>(a.kcache) + cache_base;
  T* vc = static_cast<T*>(a.vcache) + cache_base;
  int pos = 0, t_lo = 0, t_hi = 0;
  auto split = [&] {
    pos = a.pos[0];
    const int ctx = pos + 1, ch = (ctx + CS - 1) / CS;
    t_lo = min(ctx, rank * ch);
    t_hi = min(ctx, t_lo + ch);
    for (int i = tid; i < HALF; i += THREADS) {
      float sn, cs;
      sincosf(static_cast<float>(pos) * a.inv_freq[i], &sn, &cs);
      rope[i] = cs;
      rope[HALF + i] = sn;
    }
  };
  auto issue_tile = [&](int t0) {
    const int nt = min(TILE, t_hi - t0);
    for (int i = tid; i < nt * (HD / 8); i += THREADS) {
      const int r = i / (HD / 8), c = (i % (HD / 8)) * 8, t = t0 + r;
      if (t != pos) {
        cp_async16(ks + r * HD + c, kc + static_cast<int64_t>(t) * HD + c);
        cp_async16(vs + r * HD + c, vc + static_cast<int64_t>(t) * HD + c);
      }
    }
    cp_async_commit();
  };
  // Before the wait: weights, and inside graphs (early_kv) the position and first cached tile.
  if (a.early_kv) {
    split();
    issue_tile(t_lo);
  }
  const int pre = min(S, P.pre);
  for (int i = 0; i < pre; ++i) issue(i);
  const NormWeights<THREADS> normw = load_norm_weights<true, THREADS>(p);
  pdl_wait();
  stamp(a.stamps, 1);
  if (!a.early_kv) {
    split();
    issue_tile(t_lo);
  }
  stage_gemv_input<T, 1, true, THREADS>(p, xs, normw);
  for (int i = pre; i < S; ++i) issue(i);
  __syncthreads();
  stamp(a.stamps, 3);

  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  // The projections of this CTA's rows.
  float psum = 0.f;
  for (int i = 0; i < npieces; ++i) {
    const int ri = i / ppr, seg = i - ri * ppr, k0 = seg * PK, len = min(PK, K - k0);
    const T* st = ring + (i % S) * PK;
    cp_async_wait_pending(S - 1);
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int e = lane * 8 + j * 256;
      if (e < len) {
        float w[8], x[8];
        unpack8<T>(*reinterpret_cast<const uint4*>(st + e), w);
        unpack8<T>(*reinterpret_cast<const uint4*>(xs + k0 + e), x);
#pragma unroll
        for (int q = 0; q < 8; ++q) psum = fmaf(w[q], x[q], psum);
      }
    }
    issue(i + S);
    if (seg + 1 < ppr) continue;
    const float v = warp_sum(psum);
    psum = 0.f;
    // Into every CTA's copy of the head's rows, rounded to T as the separate kernels store them.
    if (lane < CS) cluster.map_shared_rank(head, lane)[r0 + warp + ri * WARPS] = Num<T>::to(Num<T>::from(v));
  }
  cp_async_wait_pending(0);
  stamp(a.stamps, 4);
  cluster.sync();  // every CTA's rows are in every CTA's shared memory
  // The softmax state, then RoPE of the head's queries and new key.
  if (tid < kMaxGroup) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.f;
  }
  for (int i = tid; i < kMaxGroup * HD; i += THREADS) acc[i] = 0.f;
  __syncthreads();
  const float scale = a.scale_log2;
  for (int idx = tid; idx < (g + 1) * HALF; idx += THREADS) {
    const int h = idx / HALF, i = idx % HALF;  // h == g: the new key
    float* x = head + h * HD;
    const float x1 = x[i], x2 = x[i + HALF], c = rope[i], sn = rope[HALF + i];
    const float y1 = x1 * c - x2 * sn, y2 = x2 * c + x1 * sn;
    if (h < g) {
      x[i] = y1 * scale;
      x[i + HALF] = y2 * scale;
    } else {
      x[i] = Num<T>::to(Num<T>::from(y1));
      x[i + HALF] = Num<T>::to(Num<T>::from(y2));
    }
  }
  __syncthreads();
  const float* qv = head;               // [g][HD], scaled
  const float* knew = head + g * HD;    // [HD]
  const float* vnew = head + (g + 1) * HD;
  if (rank == 0) {
    for (int d = tid; d < HD; d += THREADS) {
      kc[static_cast<int64_t>(pos) * HD + d] = Num<T>::from(knew[d]);
      vc[static_cast<int64_t>(pos) * HD + d] = Num<T>::from(vnew[d]);
    }
  }
  // Online softmax over this CTA's positions, a tile at a time.
  for (int t0 = t_lo; t0 < t_hi; t0 += TILE) {
    const int nt = min(TILE, t_hi - t0);
    if (t0 != t_lo) issue_tile(t0);
    cp_async_wait_pending(0);
    if (pos >= t0 && pos < t0 + nt) {
      for (int d = tid; d < HD; d += THREADS) {
        ks[(pos - t0) * HD + d] = Num<T>::from(knew[d]);
        vs[(pos - t0) * HD + d] = Num<T>::from(vnew[d]);
      }
    }
    __syncthreads();
    for (int idx = tid; idx < g * nt; idx += THREADS) {
      const int h = idx / nt, t = idx % nt;
      float s = 0.f;
#pragma unroll
      for (int c = 0; c < HD; c += 8) {
        float kf[8];
        unpack8<T>(*reinterpret_cast<const uint4*>(ks + t * HD + c), kf);
#pragma unroll
        for (int e = 0; e < 8; ++e) s = fmaf(kf[e], qv[h * HD + c + e], s);
      }
      sc[h * TILE + t] = s;
    }
    __syncthreads();
    for (int h = warp; h < g; h += WARPS) {
      float mx = -INFINITY;
      for (int t = lane; t < nt; t += 32) mx = fmaxf(mx, sc[h * TILE + t]);
      mx = warp_max(mx);
      const float m_new = fmaxf(m_s[h], mx);
      float sum = 0.f;
      for (int t = lane; t < nt; t += 32) {
        const float e = exp2f(sc[h * TILE + t] - m_new);
        sc[h * TILE + t] = e;
        sum += e;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float c = exp2f(m_s[h] - m_new);
        corr_s[h] = c;
        l_s[h] = l_s[h] * c + sum;
        m_s[h] = m_new;
      }
    }
    __syncthreads();
    for (int idx = tid; idx < g * HD; idx += THREADS) {
      const int h = idx / HD, d = idx % HD;
      float v0 = acc[idx] * corr_s[h], v1 = 0.f;  // two chains, loads unrolled ahead
      int t = 0;
#pragma unroll 8
      for (; t + 1 < nt; t += 2) {
        v0 = fmaf(sc[h * TILE + t], Num<T>::to(vs[t * HD + d]), v0);
        v1 = fmaf(sc[h * TILE + t + 1], Num<T>::to(vs[(t + 1) * HD + d]), v1);
      }
      if (t < nt) v0 = fmaf(sc[h * TILE + t], Num<T>::to(vs[t * HD + d]), v0);
      acc[idx] = v0 + v1;
    }
    __syncthreads();
  }
  // Each CTA sends every CTA its partials for that CTA's slice of the outputs, and its maxima and sums.
  const int n = g * HD, lo = rank * n / CS, hi = (rank + 1) * n / CS, sl = (n + CS - 1) / CS;
  for (int idx = tid; idx < n; idx += THREADS) {
    const int o = ((idx + 1) * CS - 1) / n;
    cluster.map_shared_rank(part, o)[rank * sl + idx - o * n / CS] = acc[idx];
  }
  for (int i = tid; i < CS * g; i += THREADS) {
    const int o = i / g, h = i - o * g;
    float* r = cluster.map_shared_rank(ml, o);
    r[rank * kMaxGroup + h] = m_s[h];
    r[(kMaxCluster + rank) * kMaxGroup + h] = l_s[h];
  }
  cluster.sync();  // every CTA's partials are where they are combined
  // This CTA's slice of the head's outputs. No CTA touches another's shared memory after the
  // barrier, so none has to wait for the others before it exits.
  T* out = static_cast<T*>(a.out);
  for (int idx = lo + tid; idx < hi; idx += THREADS) {
    const int h = idx / HD;
    float M = -INFINITY;
    for (int o = 0; o < CS; ++o) M = fmaxf(M, ml[o * kMaxGroup + h]);
    float num = 0.f, den = 0.f;
    for (int o = 0; o < CS; ++o) {
      const float m = ml[o * kMaxGroup + h];
      if (m != -INFINITY) {
        const float w = exp2f(m - M);
        num += w * part[o * sl + idx - lo];
        den += w * ml[(kMaxCluster + o) * kMaxGroup + h];
      }
    }
    out[(kvh * g) * HD + idx] = Num<T>::from(num / den);
  }
  if (a.stamps) __syncthreads();
  stamp(a.stamps, 2);
#else
  __trap();  // the engine selects this kernel on sm_90 and newer only
#endif
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
// Persistent decode step (batch 1, `--variant mega`): one block per SM runs every phase of the
// step — per layer the QKV, attention, output, gate/up and down phases, then the LM head and the
// token advance — separated by grid barriers instead of kernel boundaries. Each block issues the
// L2 prefetch of its next weights before it waits at a barrier, so HBM keeps streaming while the
// slowest block, the attention latency or the barrier itself would otherwise leave it idle.
// The barrier is the one of cooperative groups (arrive with release, wait with acquire) on a
// counter of our own whose top bit flips once per barrier, so it never needs resetting; all blocks
// are resident at once (one 512-thread block per SM, launched cooperatively).
struct MegaParams {
  const GemvParams* gemv;  ///< per layer: qkv, out, gate/up, down; then the LM head
  const AttnParams* attn;  ///< per layer
  AdvanceParams advance;
  int layers, attn_items;  ///< attention items per layer: splits * kv heads
  unsigned* barrier;
};

__device__ __forceinline__ unsigned grid_arrive(unsigned* bar) {
  unsigned old = 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned nb = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
    asm volatile("atom.add.release.gpu.u32 %0,[%1],%2;" : "=r"(old) : "l"(bar), "r"(nb) : "memory");
  }
  return old;
}
__device__ __forceinline__ void grid_wait(unsigned* bar, unsigned old) {
  if (threadIdx.x == 0) {
    unsigned cur;
    do {
      asm volatile("ld.acquire.gpu.u32 %0,[%1];" : "=r"(cur) : "l"(bar) : "memory");
    } while (((old ^ cur) & 0x80000000u) == 0);
  }
  __syncthreads();
}

template <typename T, int HD>
__global__ void __launch_bounds__(kGemvThreads, 1) decode_step_kernel(const MegaParams P) {
  const int bid = static_cast<int>(blockIdx.x), nblk = static_cast<int>(gridDim.x);
  unsigned tok = 0;
  bool pending = false;  // no barrier before the first phase: the previous step's kernel has ended
  auto wait = [&] {
    if (pending) grid_wait(P.barrier, tok);
  };
  auto arrive = [&] {
    tok = grid_arrive(P.barrier);
    pending = true;
  };
  for (int l = 0; l < P.layers; ++l) {
    const GemvParams* g = P.gemv + 4 * l;
    gemv_body<T, 1, true, 8>(g[0], bid, nblk, wait);  // RMSNorm + QKV
    arrive();
    {
      // Attention: the first 4 warps of some blocks; every block first asks L2 for its rows of
      // the output projection, which the next phase reads.
      const GemvParams& o = g[1];
      const int first = (static_cast<int>(threadIdx.x) >> 5) * nblk + bid;
      if (first < o.units) {
        const char* base = reinterpret_cast<const char*>(static_cast<const T*>(o.w) + static_cast<int64_t>(2 * first) * o.k);
        for (int off = (threadIdx.x & 31) * 128; off < 2 * o.k * static_cast<int>(sizeof(T)); off += 32 * 128) {
          prefetch_l2(base + off);
        }
      }
      wait();
      for (int w = bid; w < P.attn_items; w += nblk) {
        if (threadIdx.x < kAttnThreads) {
          const AttnParams& a = P.attn[l];
          attn_body<T, HD>(a, w % a.splits, w / a.splits, 0,
                           [] { asm volatile("bar.sync 1, %0;" ::"n"(kAttnThreads) : "memory"); }, [] {});
        }
      }
      arrive();
    }
    gemv_body<T, 1, false, 8>(g[1], bid, nblk, wait);  // output projection + residual
    arrive();
    gemv_body<T, 1, true, 8>(g[2], bid, nblk, wait);   // RMSNorm + gate/up + SwiGLU
    arrive();
    gemv_body<T, 1, false, 8>(g[3], bid, nblk, wait);  // down projection + residual
    arrive();
  }
  gemv_body<T, 1, true, 8>(P.gemv[4 * P.layers], bid, nblk, wait);  // final norm + LM head + argmax
  arrive();
  if (bid == 0) {  // the token: into the residual stream and the history
    wait();
    advance_body<T>(P.advance, 0);
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

// Prefill attention, flash style: one block = 64 query rows of one head of one sequence, four
// warps of 16 rows each. K/V tiles of 64 positions go through shared memory; S = QK^T and O += PV
// run on tensor cores (WMMA, float accumulation); the running max / sum of the online softmax
// live in shared memory, as does O (fragments have no defined element layout).
struct FlashParams {
  const void* qkv;      ///< roped queries, rows [tokens][qkv_ld]; row of (s, j) = s * rows_per_seq + j
  int qkv_ld;
  const void* kcache;   ///< layer cache [B][KV][max_ctx][hd]
  const void* vcache;
  int max_ctx;
  const int* seq_of;    ///< batch row of each sequence of the chunk
  int rows_per_seq;     ///< query rows per sequence (the chunk length)
  int p0;               ///< position of query row 0
  int heads, kv_heads;
  float scale_log2;
  void* out;            ///< [tokens][out_ld]
  int out_ld;
};

constexpr int kFlashRows = 64, kFlashKeys = 64;

template <int HD>
constexpr size_t flash_smem_bytes() {
  // Q, K, V tiles (T, padded rows), S (float), P (T), O (float), row statistics.
  return size_t{3} * 64 * (HD + 8) * 2 + size_t{64} * 64 * 4 + size_t{64} * (64 + 8) * 2 + size_t{64} * (HD + 4) * 4 +
         size_t{3} * 64 * 4;
}

template <typename T, int HD>
__global__ void __launch_bounds__(128) flash_prefill_kernel(const FlashParams p) {
  using namespace nvcuda;
  constexpr int QP = HD + 8, SP = 64, PP = 64 + 8, OP = HD + 4;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* qs = reinterpret_cast<T*>(smem_raw);
  T* ks = qs + 64 * QP;
  T* vs = ks + 64 * QP;
  float* ss = reinterpret_cast<float*>(vs + 64 * QP);
  T* ps = reinterpret_cast<T*>(ss + 64 * SP);
  float* os = reinterpret_cast<float*>(ps + 64 * PP);
  float* m_s = os + 64 * OP;
  float* l_s = m_s + 64;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int s = blockIdx.z, h = blockIdx.y, r0 = blockIdx.x * kFlashRows;
  const int nrows = min(kFlashRows, p.rows_per_seq - r0);
  const int b = p.seq_of[s], g = p.heads / p.kv_heads;
  const T* q = static_cast<const T*>(p.qkv) + (static_cast<int64_t>(s) * p.rows_per_seq + r0) * p.qkv_ld + h * HD;
  const int64_t cache = (static_cast<int64_t>(b) * p.kv_heads + h / g) * p.max_ctx * HD;
  const T* kc = static_cast<const T*>(p.kcache) + cache;
  const T* vc = static_cast<const T*>(p.vcache) + cache;
  // Q tile (rows past the chunk: zeros), O = 0, statistics.
  for (int i = tid; i < 64 * (HD / 8); i += 128) {
    const int r = i / (HD / 8), c = (i % (HD / 8)) * 8;
    if (r < nrows) {
      cp_async16(qs + r * QP + c, q + static_cast<int64_t>(r) * p.qkv_ld + c);
    } else {
      *reinterpret_cast<uint4*>(qs + r * QP + c) = make_uint4(0u, 0u, 0u, 0u);
    }
  }
  for (int i = tid; i < 64 * OP; i += 128) os[i] = 0.f;
  if (tid < 64) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.f;
  }
  const int last_pos = p.p0 + r0 + nrows - 1;  // keys 0..last_pos are needed
  for (int t0 = 0; t0 <= last_pos; t0 += kFlashKeys) {
    __syncthreads();  // previous tile's K/V/P no longer in use
    for (int i = tid; i < 64 * (HD / 8); i += 128) {
      const int r = i / (HD / 8), c = (i % (HD / 8)) * 8;
      if (t0 + r <= last_pos) {
        cp_async16(ks + r * QP + c, kc + static_cast<int64_t>(t0 + r) * HD + c);
        cp_async16(vs + r * QP + c, vc + static_cast<int64_t>(t0 + r) * HD + c);
      } else {
        *reinterpret_cast<uint4*>(ks + r * QP + c) = make_uint4(0u, 0u, 0u, 0u);
        *reinterpret_cast<uint4*>(vs + r * QP + c) = make_uint4(0u, 0u, 0u, 0u);
      }
    }
    cp_async_wait_all();
    __syncthreads();
    // S (this warp's 16 rows x 64 keys) = Q K^T.
    {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[j], 0.f);
#pragma unroll
      for (int k = 0; k < HD; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::load_matrix_sync(a, qs + warp * 16 * QP + k, QP);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> bk;
          wmma::load_matrix_sync(bk, ks + j * 16 * QP + k, QP);
          wmma::mma_sync(acc[j], a, bk, acc[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) wmma::store_matrix_sync(ss + warp * 16 * SP + j * 16, acc[j], SP, wmma::mem_row_major);
    }
    __syncwarp();
    // Online softmax over the warp's rows: lane pair (2r, 2r+1) takes row r, 32 keys each.
    {
      const int r = warp * 16 + lane / 2, half = lane & 1;
      const int qpos = p.p0 + r0 + r;
      float* srow = ss + r * SP + half * 32;
      float mx = -INFINITY;
#pragma unroll 8
      for (int j = 0; j < 32; ++j) {
        const int t = t0 + half * 32 + j;
        const float v = t <= qpos ? srow[j] * p.scale_log2 : -INFINITY;
        srow[j] = v;
        mx = fmaxf(mx, v);
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 1));
      const float m_old = m_s[r];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.f;
      T* prow = ps + r * PP + half * 32;
#pragma unroll 8
      for (int j = 0; j < 32; ++j) {
        const float e = m_new == -INFINITY ? 0.f : exp2f(srow[j] - m_new);
        sum += e;
        prow[j] = Num<T>::from(e);
      }
      sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
      const float corr = m_new == -INFINITY ? 1.f : exp2f(m_old - m_new);
      // Rescale this row's half of O.
      float* orow = os + r * OP + half * (HD / 2);
#pragma unroll 8
      for (int j = 0; j < HD / 2; ++j) orow[j] *= corr;
      __syncwarp();
      if (half == 0) {
        m_s[r] = m_new;
        l_s[r] = l_s[r] * corr + sum;
      }
    }
    __syncwarp();
    // O (16 x HD) += P (16 x 64) V (64 x HD).
#pragma unroll
    for (int n = 0; n < HD; n += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
      wmma::load_matrix_sync(o, os + warp * 16 * OP + n, OP, wmma::mem_row_major);
#pragma unroll
      for (int k = 0; k < 64; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bv;
        wmma::load_matrix_sync(a, ps + warp * 16 * PP + k, PP);
        wmma::load_matrix_sync(bv, vs + k * QP + n, QP);
        wmma::mma_sync(o, a, bv, o);
      }
      wmma::store_matrix_sync(os + warp * 16 * OP + n, o, OP, wmma::mem_row_major);
    }
  }
  __syncthreads();
  T* out = static_cast<T*>(p.out) + (static_cast<int64_t>(s) * p.rows_per_seq + r0) * p.out_ld + h * HD;
  for (int i = tid; i < nrows * HD; i += 128) {
    const int r = i / HD, c = i % HD;
    out[static_cast<int64_t>(r) * p.out_ld + c] = Num<T>::from(os[r * OP + c] / l_s[r]);
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

// Asks L2 to fetch two byte ranges (16-byte aligned) and returns at once: the data arrives while
// the kernels on the main branch run (Hopper bulk prefetch; 128-byte prefetches before sm_90).
__global__ void l2_prefetch_kernel(const char* a, size_t na, const char* b, size_t nb) {
  constexpr size_t kChunk = 64 << 10;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int r = 0; r < 2; ++r) {
    const char* base = r == 0 ? a : b;
    const size_t n = r == 0 ? na : nb;
    if (!base) continue;
    for (size_t off = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kChunk; off < n; off += stride * kChunk) {
      const uint32_t len = static_cast<uint32_t>(min(kChunk, n - off)) & ~15u;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      if (len) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(base + off), "r"(len) : "memory");
#else
      for (uint32_t i = 0; i < len; i += 128) prefetch_l2(base + off + i);
#endif
    }
  }
}

}  // namespace jouleprof::llm::kern
