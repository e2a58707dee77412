// The thread-block-cluster QKV-attention kernel of the cluster decode plan (plan_cluster.cuh); it
// shares the GEMV staging and the attention parameters with the separate kernels. Its
// online-softmax step and split combine are written out here rather than through combine_splits /
// warp_softmax_step: through those helpers its shared-memory partials are addressed generically
// (cvta.shared), and the 3B decode was 0.6% slower (H100: 361.9 vs 364.2 tok/s).
#pragma once

#include "kernels.cuh"

namespace jouleprof::llm::kern {

// ---------------------------------------------------------------------------------------------
// QKV projection and decode attention in one kernel (batch 1, the cluster decode plan, sm_90): one thread
// block cluster per KV head. The cluster's CTAs compute the q rows of the head's query group and
// its k and v rows (RMSNorm folded in; every warp streams its rows, in pieces of at most 2048
// elements, through its own ring of shared-memory stages filled by asynchronous copies; the first
// pieces and the CTA's first tile of cached K/V are requested before the wait for the previous
// kernel), send them to every CTA of the cluster (stores to distributed shared memory, then one
// cluster barrier), apply RoPE, and each CTA takes one split of the positions; each CTA sends the
// others its softmax partials for their slices of the head's outputs (again stores, then a
// barrier) and combines its slice from what it received. Every exchange is a push followed by a
// barrier: no remote loads, whose round trips would follow the barrier, and no closing barrier
// (loads after the barrier needed 250 registers and spilled; pushes need 110).
// Against the separate QKV and attention kernels this removes a kernel boundary, the projections'
// round trip through global memory and the global-memory combine (partials, fence, counter) —
// the serial latency that left HBM idle for ~13 us per layer.
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
  // 128-byte aligned: the weight ring's asynchronous copies write 512-byte runs per warp; from a
  // 16-byte-aligned start (the kernel's static shared memory ends at 80 bytes) each took twice the
  // L2 sectors and four times the shared-memory wavefronts (ncu, H100, 8B: 34.3 vs 30.9 us).
  extern __shared__ __align__(128) unsigned char qa_smem[];
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


}  // namespace jouleprof::llm::kern
