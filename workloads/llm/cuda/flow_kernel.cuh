// Dataflow persistent decode step (batch 1, `--variant dataflow`, sm_90): the whole step — per layer
// the QKV projection, attention, output projection, gate/up and down projections, then the LM
// head — as one kernel with one block per SM, in which weights stream without ever waiting for
// activations.
//
// Why: a decode step at batch 1 is a chain of matrix-vector products whose weights (2.5 GB for
// Llama-3.2-1B) are the only real traffic, but each product needs the whole result of the one
// before. With one kernel per product (or grid barriers between phases) every dependency drains
// HBM: the next product's weights start only once the previous product's slowest block and the
// latency-bound attention are done (~16 us of 57 per layer for Llama-3.2-1B on the H100). Here
// the step is a list of items (a chunk of a matrix's rows, or one split of one KV head's
// attention) dealt to the blocks in turn. In each block one producer thread walks the block's
// items and copies each chunk's rows into a ring of shared-memory slots with Hopper bulk copies
// (cp.async.bulk, completion on an mbarrier); the weights depend on nothing, so the ring fills as
// far ahead as it is deep, across layers and dependencies. Eight consumer warps take the same
// items in order: before the first item of a product they wait until a global counter says every
// item of the product it reads has been written, stage its input vector in shared memory (with
// the RMSNorm where it has one), then multiply the chunks as they arrive and write the rows.
// After its last item of a product a block adds its count of items to that product's counter.
// Items are in the step's order and every block takes them in that order, so each wait is for
// earlier items only, and all blocks are resident at once: no deadlock.
// With ring attention (the cached K/V rows streamed like weights) and bulk-store hand-overs it is
// the fastest batch-1 form for Llama-3.2-1B on the H100 and the default there (decode_plan.cpp).
// Fields of FlowParams marked "fixed by the host" belong to forms measured no faster and retired
// from the options; the kernel keeps their branches so that the default compiles as measured.
#pragma once

#include "kernels.cuh"

namespace jouleprof::llm::kern {

constexpr int kFlowWarps = 8;                        // consumer warps (with 16, 96 registers each: spills)
constexpr int kFlowThreads = (kFlowWarps + 1) * 32;  // and one producer warp
constexpr int kFlowMaxRows = 128;                    // rows per chunk at most (one writer thread each)
constexpr int kFlowMaxHidden = 4 * 4 * kFlowWarps * 32;  // RMSNorm staging keeps 4 float4 per thread
constexpr int kFlowMaxLayers = 32;  // per-layer parameters copied into shared memory
constexpr unsigned long long kFlowWaitLimitNs = 2000000000ull;  // a dependency wait this long traps

enum FlowOp : int { flow_qkv = 0, flow_attn = 1, flow_out = 2, flow_gate_up = 3, flow_down = 4, flow_lm = 5 };
// The step's products in order: per layer its five ops (qkv .. down), then the LM head.
constexpr int kFlowProductsPerLayer = 5;
__host__ __device__ constexpr int flow_product(int layer, int op) { return layer * kFlowProductsPerLayer + op; }
__host__ __device__ constexpr int flow_lm_product(int layers) { return layers * kFlowProductsPerLayer; }
constexpr int kFlowCounterStride = 8;  // counter of product (layer, op): key = layer * stride + op
// Each counter on its own 128-byte line: the blocks polling one product's counter then do not
// queue behind the atomic adds to another's.
constexpr int kFlowCounterSpacing = 32;

__host__ __device__ constexpr int flow_counter_words(int layers) {
  return ((layers + 1) * kFlowCounterStride + 1) * kFlowCounterSpacing;
}

// One matrix product's chunks: `r` rows of `k` elements per chunk, `g` warps per row (1: each
// warp takes whole rows, r >= 16), `items` items of `c` chunks of consecutive rows each (gate/up:
// per chunk of gate rows the chunk of the same up rows after it). c > 1 only where an item's rows
// must be whole 16-byte pieces for bulk stores (FlowParams::bulk_ops) and one chunk's are not.
struct FlowShape {
  int rows;  ///< output rows (gate/up: units)
  int k;
  int r, g;
  int items;
  int c;
};

struct FlowLayer {
  const void *wqkv, *wo, *wgu, *wd;
  const float *attn_norm, *mlp_norm;
  AttnParams attn;  ///< as for the separate kernels, with this layer's caches and early_kv = 1
};

static_assert(sizeof(FlowLayer) % 4 == 0, "FlowLayer is copied by 4-byte words");

struct FlowParams {
  const FlowLayer* layer;  ///< [layers], device memory
  int layers;
  // The products this launch runs, first..last (flow_product, flow_lm_product): fixed by the
  // host to the whole step.
  int first, last;
  FlowShape qkv, out, gu, down, lm;
  const void* lm_w;
  const float* final_norm;
  float eps;
  const void* attn_out;  ///< T [q dim]: attention output
  int attn_items;   ///< splits * kv heads
  // Ring attention (1, fixed by the host): the cached K/V rows of each (split, KV head) item
  // stream through the ring like weights; attn_splits splits of attn_span cached positions per KV
  // head. 0: the separate kernels' attention body, its K/V tiles read after the wait.
  int attn_ring, attn_span, attn_splits;
  // Ring attention: the cached K/V rows of the block's attention items asked of L2 once the ring
  // is first full (1 normal priority, 2 evict-last). Fixed by the host to 0: no faster, the
  // items' chunks are already in the ring when due.
  int kv_prefetch;
  int attn_floats;  ///< flow_attn_floats, or 0 without ring attention
  float* resid;     ///< residual stream [hidden], float
  void* qkv_y;      ///< T [qkv rows]
  void* act;        ///< T [intermediate]: SwiGLU output
  float* logits;
  unsigned long long* argmax;
  unsigned* counters;  ///< [flow_counter_words(layers)]: key * kFlowCounterSpacing, then the finished-block count; zero between launches
  int poll_ns;         ///< pause between two reads of a counter not yet reached (fixed by the host to 0: no faster)
  int slots, slot_bytes;
  // Chunks asked of L2 beyond the ring while this block's consumers wait for a dependency (0:
  // none): then the ring is full and does not drain, so this SM would read nothing from HBM.
  int l2_wait;
  // Products (bit 1 << FlowOp) whose rows are handed over by the async proxy (bulk hand-overs): each block
  // keeps its items' rows in shared memory (bulk_bytes) and, after its last item, thread 0 copies
  // them out with bulk stores, waits for their completion and adds its count without a fence; see
  // the consumers' signal. Only products whose items' rows are whole 16-byte pieces.
  int bulk_ops, bulk_bytes;
  // Ring attention with bulk hand-overs and several splits: each (KV head, split) item's partial
  // result as one record of flow_attn_record floats (sums, then m and l per query head), at
  // attn_part + (kvh * splits + split) * record; the head's last split combines them.
  float* attn_part;
  int attn_stage;  ///< bytes of rows_s per ring attention item: a record and the output rows
  int attn_last_combines;  ///< 1: the last split to finish combines even where the owner could (fixed by the host to 0)
  // Diagnostic timeline (null: off): per product p (flow_product, flow_lm_product) and
  // block b, at stamps[(p * stamp_blocks + b) * kStampsPerBlock]: the globaltimer when the block
  // reached its first item of the product, when its input was staged, when it had signalled its
  // last; then per block the nanoseconds spent waiting for a full slot, for other blocks' products
  // (with the staging), and (producer) for an empty slot, as products flow_lm_product + 1, 2, 3;
  // with ring attention, the nanoseconds its items spent from the QKV product seen to their rows
  // loaded, in their chunks, writing their results, and (within the chunks) waiting for a chunk
  // to land, as products + 4, 5, 6, 7.
  unsigned long long* stamps;
  int stamp_blocks;
};

// Ring attention keeps each thread's q and sums for every query head of its KV head in registers:
// at most this many query heads per KV head (Llama 3: 3 or 4), so that the kernel, whose register
// count is that of its largest path, keeps the GEMV paths' (with 8: 785 instead of 873 tok/s).
constexpr int kFlowRingGroup = 4;
// Ring attention's scratch (floats): q, the new key and value, each warp's sums, m/l/corr per
// query head, and the scores of one chunk of `tpos` positions; 0 without ring attention.
__host__ __device__ constexpr int flow_attn_floats(int hd, int tpos) {
  return (kFlowRingGroup + 2 + kFlowWarps * kFlowRingGroup) * hd + 3 * kFlowRingGroup + kFlowRingGroup * tpos;
}

// Ring attention's partial result per (KV head, split), in floats: g * hd weighted sums, g maxima,
// g sums of weights, padded to whole 16-byte pieces for the bulk store.
__host__ __device__ constexpr int flow_attn_record(int g, int hd) { return g * hd + (2 * g + 3) / 4 * 4; }

// Dynamic shared memory, in bytes from its start: the ring; the staged input vector, which ring
// attention's scratch shares (an attention item stages nothing, and the next product re-stages);
// double-buffered partial sums and a reduction scratch; the ring's full/empty mbarriers; the rows
// of the block's items of a product handed over by bulk stores (FlowParams::bulk_ops).
struct FlowSmem {
  size_t xs, parts, bars, rows, bytes;
};
__host__ __device__ constexpr size_t flow_align16(size_t n) { return (n + 15) / 16 * 16; }
__host__ __device__ constexpr FlowSmem flow_smem(int slots, int slot_bytes, int kmax, int tbytes, int attn_floats,
                                                 int bulk_bytes) {
  FlowSmem m{};
  m.xs = static_cast<size_t>(slots) * static_cast<size_t>(slot_bytes);
  const size_t xs_bytes = static_cast<size_t>(kmax) * static_cast<size_t>(tbytes);
  const size_t attn_bytes = static_cast<size_t>(attn_floats) * sizeof(float);
  m.parts = flow_align16(m.xs + (xs_bytes > attn_bytes ? xs_bytes : attn_bytes));
  m.bars = m.parts + (2 * kFlowMaxRows + kFlowWarps) * sizeof(float);
  m.rows = flow_align16(m.bars + 2 * static_cast<size_t>(slots) * 8);
  m.bytes = m.rows + static_cast<size_t>(bulk_bytes);
  return m;
}

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint64_t* b, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
      : "=r"(done)
      : "r"(smem_u32(b)), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
  while (!mbar_try_wait(b, parity)) {
  }
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar)), "l"(policy)
      : "memory");
}
// Shared to global memory by the async proxy, in this thread's bulk async-group.
__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_u32(src)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, unsigned bytes, uint64_t policy) {
  asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(src), "r"(bytes), "l"(policy)
               : "memory");
}
__device__ __forceinline__ unsigned long long* flow_stamp(const FlowParams& P, int product, int k) {
  return P.stamps + (static_cast<int64_t>(product) * P.stamp_blocks + blockIdx.x) * kStampsPerBlock + k;
}
__device__ __forceinline__ int flow_key_product(const FlowParams& P, int key) {
  const int op = key % kFlowCounterStride;
  return op == flow_lm ? flow_lm_product(P.layers) : flow_product(key / kFlowCounterStride, op);
}
__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// The consumer warps' barrier (the producer warp never joins it; attention uses barrier 1).
__device__ __forceinline__ void flow_sync() { asm volatile("bar.sync 2, %0;" ::"n"(kFlowWarps * 32) : "memory"); }

struct FlowCursor {
  int layer, op, start, len;
};
__device__ __forceinline__ const FlowShape& flow_shape(const FlowParams& P, int op) {
  switch (op) {
    case flow_qkv: return P.qkv;
    case flow_out: return P.out;
    case flow_gate_up: return P.gu;
    case flow_down: return P.down;
    default: return P.lm;
  }
}
__device__ __forceinline__ int flow_len(const FlowParams& P, int op) {
  return op == flow_attn ? P.attn_items : flow_shape(P, op).items;
}
__device__ __forceinline__ int flow_op_of(const FlowParams& P, int product) {
  return product == flow_lm_product(P.layers) ? static_cast<int>(flow_lm) : product % kFlowProductsPerLayer;
}
__device__ __forceinline__ int flow_total(const FlowParams& P) {
  int n = 0;
  for (int p = P.first; p <= P.last; ++p) n += flow_len(P, flow_op_of(P, p));
  return n;
}
__device__ __forceinline__ FlowCursor flow_begin(const FlowParams& P) {
  const int op = flow_op_of(P, P.first);
  return FlowCursor{P.first / kFlowProductsPerLayer, op, 0, flow_len(P, op)};
}
// Moves the cursor forward to the product holding item t (t never decreases; t < flow_total).
__device__ __forceinline__ void flow_seek(const FlowParams& P, FlowCursor& c, int t) {
  while (t >= c.start + c.len) {
    c.start += c.len;
    if (c.op == flow_down) {
      c.op = ++c.layer < P.layers ? flow_qkv : flow_lm;
    } else {
      c.op += 1;
    }
    c.len = flow_len(P, c.op);
  }
}
__device__ __forceinline__ const void* flow_weights(const FlowParams& P, const FlowLayer* layers, const FlowCursor& c) {
  if (c.op == flow_lm) return P.lm_w;
  const FlowLayer& L = layers[c.layer];
  switch (c.op) {
    case flow_qkv: return L.wqkv;
    case flow_out: return L.wo;
    case flow_gate_up: return L.wgu;
    default: return L.wd;
  }
}

// Ring attention: the cached positions [s0, s1) of item w of a layer's attention (w / splits:
// the KV head, w % splits: the split) before position `pos`, and whether it owns `pos` itself.
struct FlowAttnItem {
  int kvh, split, s0, s1;
  bool owns_new;
};
__device__ __forceinline__ FlowAttnItem flow_attn_item(const FlowParams& P, int w, int pos) {
  FlowAttnItem it;
  it.kvh = w / P.attn_splits;
  it.split = w % P.attn_splits;
  it.s0 = it.split * P.attn_span;
  it.s1 = min(it.s0 + P.attn_span, pos);
  it.owns_new = pos / P.attn_span == it.split;
  return it;
}

// The block's chunks in the order its consumers take them: item t = bid, bid + nblk, ...; a
// matrix item is one chunk of weight rows (gate/up: two, gate rows then the same up rows), a ring
// attention item a K chunk then a V chunk per `tpos` cached positions (none without ring attention).
template <typename T, int HD>
struct FlowChunks {
  FlowCursor c;
  int t, part;
  const FlowLayer* layers;
  int pos = -1;  // the step's position: read once the previous kernel is complete
  __device__ bool next(const FlowParams& P, int total, int nblk, const T*& src, unsigned& bytes) {
    const int tpos = P.slot_bytes / static_cast<int>(sizeof(T) * HD);
    while (t < total) {
      flow_seek(P, c, t);
      if (c.op == flow_attn) {
        if (P.attn_ring) {
          const AttnParams& a = layers[c.layer].attn;
          if (pos < 0) {  // earlier steps' K/V rows and the position are written by earlier kernels
            pdl_wait();
            pos = __ldcg(a.pos);
          }
          const FlowAttnItem it = flow_attn_item(P, t - c.start, pos);
          if (it.s1 > it.s0 && part < 2 * ((it.s1 - it.s0 + tpos - 1) / tpos)) {
            const int t0 = it.s0 + (part / 2) * tpos;
            src = static_cast<const T*>(part % 2 ? a.vcache : a.kcache) +
                  (static_cast<int64_t>(it.kvh) * a.max_ctx + t0) * HD;
            bytes = static_cast<unsigned>(min(tpos, it.s1 - t0) * HD) * static_cast<unsigned>(sizeof(T));
            ++part;
            return true;
          }
        }
        part = 0;
        t += nblk;
        continue;
      }
      const FlowShape& s = flow_shape(P, c.op);
      const bool gu = c.op == flow_gate_up;
      if (part < (gu ? 2 : 1) * s.c) {
        const int r0 = (t - c.start) * s.r * s.c + (gu ? part >> 1 : part) * s.r;
        const int nr = min(s.r, s.rows - r0);
        src = static_cast<const T*>(flow_weights(P, layers, c)) +
              static_cast<int64_t>(r0 + (gu ? part & 1 : 0) * s.rows) * s.k;
        bytes = static_cast<unsigned>(nr * s.k) * static_cast<unsigned>(sizeof(T));
        ++part;
        return true;
      }
      part = 0;
      t += nblk;
    }
    return false;
  }
};

// Dot product of a weight row slice in shared memory with the staged input (vectors v0..v1 of 8
// elements; consecutive lanes read consecutive 16 bytes: no bank conflicts), summed over the warp.
template <typename T>
__device__ __forceinline__ float flow_dot(const T* w, const T* xs, int v0, int v1, int lane) {
  float a0 = 0.f, a1 = 0.f;
#pragma unroll 4
  for (int v = v0 + lane; v < v1; v += 32) {
    float fw[8], fx[8];
    unpack8<T>(*reinterpret_cast<const uint4*>(w + v * 8), fw);
    unpack8<T>(*reinterpret_cast<const uint4*>(xs + v * 8), fx);
#pragma unroll
    for (int i = 0; i < 8; i += 2) {
      a0 = fmaf(fw[i], fx[i], a0);
      a1 = fmaf(fw[i + 1], fx[i + 1], a1);
    }
  }
  return warp_sum(a0 + a1);
}

// Input staging by the 512 consumer threads: RMSNorm(resid) * g rounded to T (as
// stage_gemv_input), or a copy of a T vector. Ends with a barrier: xs is ready.
template <typename T>
__device__ __forceinline__ void flow_stage_norm(const float* x, const float* g, int K, float eps, T* xs, float* red) {
  constexpr int N = kFlowWarps * 32;
  const int tid = threadIdx.x;
  float4 v[4], w[4];
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int k = (tid + j * N) * 4;
    if (k < K) {
      v[j] = __ldcg(reinterpret_cast<const float4*>(x + k));
      w[j] = __ldg(reinterpret_cast<const float4*>(g + k));
      ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
    }
  }
  ss = warp_sum(ss);
  if ((tid & 31) == 0) red[tid >> 5] = ss;
  flow_sync();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kFlowWarps; ++i) s += red[i];
  const float r = rsqrtf(s / K + eps);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int k = (tid + j * N) * 4;
    if (k < K) {
      uint2 o;
      o.x = pack2<T>(v[j].x * r * w[j].x, v[j].y * r * w[j].y);
      o.y = pack2<T>(v[j].z * r * w[j].z, v[j].w * r * w[j].w);
      *reinterpret_cast<uint2*>(xs + k) = o;
    }
  }
  flow_sync();
}
template <typename T>
__device__ __forceinline__ void flow_stage_copy(const void* x, int K, T* xs) {
  const T* src = static_cast<const T*>(x);
  for (int k = threadIdx.x * 8; k < K; k += kFlowWarps * 32 * 8) {
    *reinterpret_cast<uint4*>(xs + k) = __ldcg(reinterpret_cast<const uint4*>(src + k));
  }
  flow_sync();
}

// Ring attention with kv_prefetch: this block's attention items' cached K/V rows asked of L2.
template <typename T, int HD>
__device__ __forceinline__ void flow_prefetch_kv(const FlowParams& P, const FlowLayer* layers, int total, int nblk) {
  uint64_t policy;
  if (P.kv_prefetch == 2) {
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  } else {
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
  }
  pdl_wait();  // the position and the earlier steps' rows are written by earlier kernels
  const int pos = __ldcg(layers[0].attn.pos);
  FlowCursor c = flow_begin(P);
  for (int t = static_cast<int>(blockIdx.x); t < total; t += nblk) {
    flow_seek(P, c, t);
    if (c.op != flow_attn) continue;
    const AttnParams& a = layers[c.layer].attn;
    const FlowAttnItem it = flow_attn_item(P, t - c.start, pos);
    if (it.s1 <= it.s0) continue;
    const int64_t off = (static_cast<int64_t>(it.kvh) * a.max_ctx + it.s0) * HD;
    const unsigned bytes = static_cast<unsigned>((it.s1 - it.s0) * HD) * static_cast<unsigned>(sizeof(T));
    bulk_prefetch_l2(static_cast<const T*>(a.kcache) + off, bytes, policy);
    bulk_prefetch_l2(static_cast<const T*>(a.vcache) + off, bytes, policy);
  }
}

// A ring attention item's result through bulk stores (no GPU-scope fence: see the consumers'
// signal). One split: the output rows, staged and stored; the signal waits for them. Several, with
// every item on a block of its own: each split but the one owning the new position stores its
// record (sums, m, l per query head), waits for it and adds 1 to the KV head's counter, relaxed;
// the owner keeps its record in shared memory, polls the counter until the others are in, reads
// their records from L2 and stores the combined rows. With more items than blocks (a block could
// then wait for a later item of its own), the last split to add combines instead. (Combining the
// records in the output projection's staging was slower: its loads of six records took 3.4 us
// more than a copy of the output.)
template <typename T, int HD, typename Sum>
__device__ __forceinline__ void flow_ring_output(const FlowParams& P, const AttnParams& a, const FlowAttnItem& it,
                                                 unsigned char* stage, const float* ms, const float* ls, Sum&& block_sum) {
  constexpr int N = kFlowWarps * 32;
  __shared__ bool last_s;
  const int tid = threadIdx.x;
  const int g = a.heads / a.kv_heads, rec_n = flow_attn_record(g, HD);
  float* rec = reinterpret_cast<float*>(stage);
  T* rows = reinterpret_cast<T*>(stage + rec_n * 4);
  if (P.attn_splits == 1) {
    for (int idx = tid; idx < g * HD; idx += N) rows[idx] = Num<T>::from(block_sum(idx) / ls[idx / HD]);
  } else {
    const bool owner_combines = !P.attn_last_combines && P.attn_items <= static_cast<int>(gridDim.x);
    for (int idx = tid; idx < g * HD; idx += N) rec[idx] = block_sum(idx);
    if (tid < g) {
      rec[g * HD + tid] = ms[tid];
      rec[g * HD + g + tid] = ls[tid];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    flow_sync();
    unsigned* counter = a.counters + it.kvh;
    if (tid == 0 && owner_combines && it.owns_new) {
      const unsigned long long since = globaltimer_ns();
      while (ld_acquire_gpu(counter) < static_cast<unsigned>(P.attn_splits - 1)) {
        if (globaltimer_ns() - since > kFlowWaitLimitNs) __trap();  // as the consumers' waits
      }
      *counter = 0u;  // every other split has added: zero for the next launch
    } else if (tid == 0) {
      bulk_store(P.attn_part + static_cast<int64_t>(it.kvh * P.attn_splits + it.split) * rec_n, rec,
                 static_cast<unsigned>(rec_n * 4));
      unsigned old;
      asm volatile(
          "cp.async.bulk.commit_group;\ncp.async.bulk.wait_group 0;\n"
          "atom.relaxed.gpu.global.add.u32 %0, [%1], 1;"
          : "=r"(old)
          : "l"(counter)
          : "memory");
      last_s = !owner_combines && old == static_cast<unsigned>(P.attn_splits - 1);
      if (last_s) *counter = 0u;  // for the next launch
    }
    flow_sync();
    if (owner_combines ? !it.owns_new : !last_s) return;
    const float* r0 = P.attn_part + static_cast<int64_t>(it.kvh * P.attn_splits) * rec_n;
    for (int idx = tid; idx < g * HD; idx += N) {
      const int h = idx / HD;
      auto ld = [&](int sp, int i) { return sp == it.split ? rec[i] : __ldcg(r0 + sp * rec_n + i); };
      rows[idx] = Num<T>::from(combine_splits(
          P.attn_splits, [&](int sp) { return ld(sp, g * HD + h); }, [&](int sp) { return ld(sp, g * HD + g + h); },
          [&](int sp) { return ld(sp, idx); }));
    }
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  flow_sync();
  if (tid == 0) {
    bulk_store(static_cast<T*>(a.out) + it.kvh * g * HD, rows, static_cast<unsigned>(g * HD * sizeof(T)));
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  }
}

// One ring attention item (FlowAttnItem) by the 256 consumer threads. Its cached K/V rows are in
// the ring (the producer copied them, K then V per chunk of tpos positions, while the previous
// products ran); after `wait` (the QKV product is complete) only the new position's q, k and v
// come from global memory. Scores: CH threads per cached row, each with its 8 columns of every
// query head's q in registers (the row read once, conflict-free), summed over the CH threads;
// online softmax per chunk; values: CH threads per row as well, 8 columns each. One split: the
// output directly; several: partials, and the last split of the head combines them.
template <typename T, int HD, typename Wait>
__device__ __forceinline__ void flow_ring_attention(const FlowParams& P, const AttnParams& a, const FlowAttnItem& it,
                                                    int pos, const T* ring, int slot_elems, int& slot, unsigned& phase,
                                                    uint64_t* full, uint64_t* empty, float* sm, unsigned long long* tm,
                                                    unsigned char* stage, Wait&& wait) {
  constexpr int CH = HD / 8;  // 16-byte pieces of a cached row
  constexpr int N = kFlowWarps * 32;
  constexpr int RP = N / CH;  // rows per pass
  constexpr int HALF = HD / 2;
  constexpr int G = kFlowRingGroup;
  static_assert(32 % CH == 0, "a row's threads within one warp");
  __shared__ bool last_s;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, c = tid % CH, rp = tid / CH;
  const int g = a.heads / a.kv_heads;
  const int tpos = slot_elems / HD;
  float* qs = sm;             // [G][HD]: roped, times log2(e) / sqrt(hd)
  float* kn = qs + G * HD;    // the new position's roped key
  float* vn = kn + HD;        // and value
  float* accs = vn + HD;      // [kFlowWarps][G][HD]: each warp's weighted sums of values
  float* ms = accs + kFlowWarps * G * HD;  // running max per query head, then sum (ls), then this chunk's correction
  float* ls = ms + G;
  float* corr = ls + G;
  float* sc = corr + G;       // [G][tpos]: one chunk's scores, then weights
  const T* qkv = static_cast<const T*>(a.qkv);
  T* kc = static_cast<T*>(a.kcache) + static_cast<int64_t>(it.kvh) * a.max_ctx * HD;
  T* vc = static_cast<T*>(a.vcache) + static_cast<int64_t>(it.kvh) * a.max_ctx * HD;
  wait();
  const unsigned long long t_seen = tm ? globaltimer_ns() : 0;
  for (int idx = tid; idx < g * HALF; idx += N) {
    const int h = idx / HALF, i = idx % HALF;
    const T* q = qkv + (it.kvh * g + h) * HD;
    float sn, cs;
    sincosf(static_cast<float>(pos) * a.inv_freq[i], &sn, &cs);
    const float x1 = Num<T>::to(q[i]), x2 = Num<T>::to(q[i + HALF]);
    qs[h * HD + i] = (x1 * cs - x2 * sn) * a.scale_log2;
    qs[h * HD + i + HALF] = (x2 * cs + x1 * sn) * a.scale_log2;
  }
  if (it.owns_new) {  // the new token's key (roped) and value: into the cache, and kept here
    const T* k = qkv + a.heads * HD + it.kvh * HD;
    const T* v = qkv + (a.heads + a.kv_heads) * HD + it.kvh * HD;
    if (tid < HALF) {
      float sn, cs;
      sincosf(static_cast<float>(pos) * a.inv_freq[tid], &sn, &cs);
      const float x1 = Num<T>::to(k[tid]), x2 = Num<T>::to(k[tid + HALF]);
      const T lo = Num<T>::from(x1 * cs - x2 * sn), hi = Num<T>::from(x2 * cs + x1 * sn);
      kc[static_cast<int64_t>(pos) * HD + tid] = lo;
      kc[static_cast<int64_t>(pos) * HD + tid + HALF] = hi;
      kn[tid] = Num<T>::to(lo);
      kn[tid + HALF] = Num<T>::to(hi);
    } else if (tid < HALF + HD) {
      const T x = v[tid - HALF];
      vc[static_cast<int64_t>(pos) * HD + tid - HALF] = x;
      vn[tid - HALF] = Num<T>::to(x);
    }
  }
  flow_sync();
  // The new position's score starts each head's softmax: m = that score, l = 1, its value weight 1.
  if (warp < g) {
    float s = 0.f;
    if (it.owns_new) {
      for (int d = lane; d < HD; d += 32) s += qs[warp * HD + d] * kn[d];
      s = warp_sum(s);
    }
    if (lane == 0) {
      ms[warp] = it.owns_new ? s : -INFINITY;
      ls[warp] = it.owns_new ? 1.f : 0.f;
    }
  }
  float qr[G][8], acc[G][8];
#pragma unroll
  for (int h = 0; h < G; ++h) {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      qr[h][e] = h < g ? qs[h * HD + c * 8 + e] : 0.f;
      acc[h][e] = h < g && it.owns_new && rp == 0 ? vn[c * 8 + e] : 0.f;
    }
  }
  flow_sync();
  const unsigned long long t_rows = tm ? globaltimer_ns() : 0;
  if (tm) tm[0] += t_rows - t_seen;
  for (int t0 = it.s0; t0 < it.s1; t0 += tpos) {
    const int nt = min(tpos, it.s1 - t0);
    unsigned long long tw = tm ? globaltimer_ns() : 0;
    mbar_wait(full + slot, phase);
    if (tm) tm[4] += globaltimer_ns() - tw;
    const T* kt = ring + static_cast<int64_t>(slot) * slot_elems;
    for (int r0 = 0; r0 < nt; r0 += RP) {  // warp-uniform trip count: every lane shuffles
      const int r = r0 + rp;
      float kf[8];
      if (r < nt) {
        unpack8<T>(*reinterpret_cast<const uint4*>(kt + r * HD + c * 8), kf);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) kf[e] = 0.f;
      }
      float s[G];
#pragma unroll
      for (int h = 0; h < G; ++h) {
        s[h] = 0.f;
        if (h < g) {
#pragma unroll
          for (int e = 0; e < 8; ++e) s[h] = fmaf(kf[e], qr[h][e], s[h]);
        }
      }
#pragma unroll
      for (int o = CH / 2; o > 0; o >>= 1) {
#pragma unroll
        for (int h = 0; h < G; ++h) {
          if (h < g) s[h] += __shfl_xor_sync(0xFFFFFFFFu, s[h], o);
        }
      }
      if (c == 0 && r < nt) {
#pragma unroll
        for (int h = 0; h < G; ++h) {
          if (h < g) sc[h * tpos + r] = s[h];
        }
      }
    }
    flow_sync();
    if (tid == 0) mbar_arrive(empty + slot);
    if (++slot == P.slots) {
      slot = 0;
      phase ^= 1u;
    }
    if (warp < g) warp_softmax_step(sc + warp * tpos, nt, ms + warp, ls + warp, corr + warp);  // head `warp`
    flow_sync();
#pragma unroll
    for (int h = 0; h < G; ++h) {
      if (h < g) {
        const float cr = corr[h];
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[h][e] *= cr;
      }
    }
    tw = tm ? globaltimer_ns() : 0;
    mbar_wait(full + slot, phase);
    if (tm) tm[4] += globaltimer_ns() - tw;
    const T* vt = ring + static_cast<int64_t>(slot) * slot_elems;
    for (int r = rp; r < nt; r += RP) {
      float vf[8];
      unpack8<T>(*reinterpret_cast<const uint4*>(vt + r * HD + c * 8), vf);
#pragma unroll
      for (int h = 0; h < G; ++h) {
        if (h < g) {
          const float w = sc[h * tpos + r];
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[h][e] = fmaf(w, vf[e], acc[h][e]);
        }
      }
    }
    flow_sync();  // the chunk's weights and the V slot are free
    if (tid == 0) mbar_arrive(empty + slot);
    if (++slot == P.slots) {
      slot = 0;
      phase ^= 1u;
    }
  }
  // Sums over the rows each thread took: the warp's lanes of one column piece, then the warps.
#pragma unroll
  for (int o = CH; o < 32; o <<= 1) {
#pragma unroll
    for (int h = 0; h < G; ++h) {
      if (h < g) {
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[h][e] += __shfl_xor_sync(0xFFFFFFFFu, acc[h][e], o);
      }
    }
  }
  if (lane < CH) {
#pragma unroll
    for (int h = 0; h < G; ++h) {
      if (h < g) {
#pragma unroll
        for (int e = 0; e < 8; ++e) accs[(warp * G + h) * HD + c * 8 + e] = acc[h][e];
      }
    }
  }
  flow_sync();
  if (tm) {
    tm[3] = globaltimer_ns();
    tm[1] += tm[3] - t_rows;
  }
  auto block_sum = [&](int idx) {  // over the warps, in a fixed order (the same result every run)
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < kFlowWarps; ++w) v += accs[w * G * HD + idx];
    return v;
  };
  T* out = static_cast<T*>(a.out);
  if (stage) {  // bulk hand-overs (P.bulk_ops): see flow_ring_output
    flow_ring_output<T, HD>(P, a, it, stage, ms, ls, block_sum);
    return;
  }
  if (P.attn_splits == 1) {
    for (int idx = tid; idx < g * HD; idx += N) {
      out[it.kvh * g * HD + idx] = Num<T>::from(block_sum(idx) / ls[idx / HD]);
    }
    return;
  }
  for (int idx = tid; idx < g * HD; idx += N) {
    const int h = idx / HD, d = idx % HD;
    const int64_t row = static_cast<int64_t>(it.kvh * g + h) * P.attn_splits + it.split;
    a.part_acc[row * HD + d] = block_sum(idx);
    if (d == 0) {
      a.part_ml[row * 2] = ms[h];
      a.part_ml[row * 2 + 1] = ls[h];
    }
  }
  __threadfence();
  flow_sync();
  if (tid == 0) last_s = atomicAdd(a.counters + it.kvh, 1u) == static_cast<unsigned>(P.attn_splits - 1);
  flow_sync();
  if (!last_s) return;
  __threadfence();
  attn_combine<T, HD>(a, P.attn_splits, it.kvh, 0, tid, N);
}

template <typename T, int HD>
__global__ void __launch_bounds__(kFlowThreads, 1) flow_decode_kernel(const __grid_constant__ FlowParams P) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // bulk copies, mbarrier transactions: Hopper
  // The next kernel may launch once every block of this one has started (so that none of this
  // kernel's blocks, whose items others wait for, can be kept off an SM by it).
  pdl_trigger();
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int bid = static_cast<int>(blockIdx.x), nblk = static_cast<int>(gridDim.x);
  const int kmax = max(max(P.qkv.k, P.out.k), P.down.k);
  T* ring = reinterpret_cast<T*>(smem_raw);
  const FlowSmem sm = flow_smem(P.slots, P.slot_bytes, kmax, sizeof(T), P.attn_floats, P.bulk_bytes);
  T* xs = reinterpret_cast<T*>(smem_raw + sm.xs);
  float* parts = reinterpret_cast<float*>(smem_raw + sm.parts);
  float* red = parts + 2 * kFlowMaxRows;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem_raw + sm.bars);
  uint64_t* empty = full + P.slots;
  float* attn_sm = reinterpret_cast<float*>(xs);  // ring attention's scratch shares the staging buffer
  unsigned char* rows_s = smem_raw + sm.rows;       // bulk_ops: the rows of this block's items of a product
  const int slot_elems = P.slot_bytes / static_cast<int>(sizeof(T));
  const int total = flow_total(P);
  // The per-layer parameters in shared memory: read from global memory they would be L2 round
  // trips each time, as every acquire of a counter invalidates this SM's L1.
  __shared__ FlowLayer layer_s[kFlowMaxLayers];
  for (int i = tid; i < P.layers * static_cast<int>(sizeof(FlowLayer) / 4); i += blockDim.x) {
    reinterpret_cast<uint32_t*>(layer_s)[i] = reinterpret_cast<const uint32_t*>(P.layer)[i];
  }

  __shared__ int dep_wait_s;  // l2_wait: 1 while thread 0 waits for a dependency (the producer reads it)
  volatile int* dep_wait = &dep_wait_s;
  if (tid == 0) *dep_wait = 0;
  if (tid < P.slots) {
    mbar_init(full + tid, 1);
    mbar_init(empty + tid, 1);
  }
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();

  if (warp == kFlowWarps) {
    // Producer: one thread streams the block's chunks into the ring, as far ahead as it is deep.
    if (lane != 0) return;
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    FlowChunks<T, HD> chunks{flow_begin(P), bid, 0, layer_s};
    const T* src;
    unsigned bytes;
    int slot = 0, issued = 0;
    unsigned phase = 0;
    unsigned long long waited = 0;
    FlowChunks<T, HD> idle = chunks;  // l2_wait: the chunks after the ring asked of L2, idle_n of them not yet reached
    int idle_n = 0;
    while (chunks.next(P, total, nblk, src, bytes)) {
      if (issued++ == P.slots && P.attn_ring && P.kv_prefetch) flow_prefetch_kv<T, HD>(P, layer_s, total, nblk);
      if (idle_n > 0) --idle_n;  // this chunk was asked of L2
      const unsigned long long t0 = P.stamps ? globaltimer_ns() : 0;
      if (P.l2_wait > 0) {
        // While the consumers wait for a dependency, the slot is not freed before they are
        // through: ask L2 for the next chunks meanwhile, so that this SM's share of HBM
        // bandwidth is not idle then (up to l2_wait chunks beyond the ring).
        while (!mbar_try_wait(empty + slot, phase ^ 1u)) {
          if (idle_n < P.l2_wait && *dep_wait) {
            if (idle_n == 0) idle = chunks;
            const T* isrc;
            unsigned ibytes;
            if (!idle.next(P, total, nblk, isrc, ibytes)) continue;
            bulk_prefetch_l2(isrc, ibytes);
            ++idle_n;
          }
        }
      } else {
        mbar_wait(empty + slot, phase ^ 1u);
      }
      if (P.stamps) waited += globaltimer_ns() - t0;
      mbar_expect_tx(full + slot, bytes);
      bulk_load(ring + static_cast<int64_t>(slot) * slot_elems, src, bytes, full + slot, policy);
      if (++slot == P.slots) {
        slot = 0;
        phase ^= 1u;
      }
    }
    if (P.stamps) *flow_stamp(P, flow_lm_product(P.layers) + 3, 0) = waited;
    return;
  }

  // Consumers. The previous kernel (the token advance, or the kernel before this part of the
  // step) wrote the residual stream, position and inputs.
  pdl_wait();
  FlowCursor c = flow_begin(P);
  int slot = 0, pbuf = 0;
  unsigned phase = 0;
  int key = -1, done = 0;       // the product being worked on (layer * stride + op), its items done here
  int w_first = 0;              // the product's item of this block's first (the others: + nblk each)
  unsigned long long best = 0;  // LM head: this writer thread's best (logit, index) key
  bool attn_ready = false;
  unsigned long long wait_full = 0, wait_dep = 0;
  // Ring attention's phases (timeline): QKV seen -> rows loaded, -> chunks done and summed, -> the
  // item's end (output or partials written); [3]: when the current item's sums were done.
  unsigned long long ring_ns[5] = {0, 0, 0, 0, 0};
  if (P.stamps) {  // products this block has no item of read as not reached
    for (int i = tid; i < (flow_lm_product(P.layers) + 8) * kStampsPerBlock; i += kFlowWarps * 32) {
      P.stamps[(static_cast<int64_t>(i / kStampsPerBlock) * P.stamp_blocks + blockIdx.x) * kStampsPerBlock +
               i % kStampsPerBlock] = 0ull;
    }
    flow_sync();
  }
  // After a block's last item of a product: every write of its items first, then the count.
  // A release add waits for the block's writes, but as a GPU-scope fence it also waits for the
  // SM's bulk copies in flight, ~1.8 us under the weight stream. With
  // bulk_ops the rows go out as bulk stores instead: thread 0 waits for their completion (writes
  // performed in L2, the GPU's point of coherence, as the readers' acquire + L2 loads see it) and
  // then adds the count relaxed.
  // Thread 0: the bulk store of the rows of this block's j-th item of matrix product `op` (their
  // writers fenced them for the async proxy, then passed a barrier), without waiting for it. Each
  // item's store is issued at the next barrier after its rows are written: the next item's first,
  // or the signal's for the last, so that the signal mostly waits for the last item's only.
  auto store_rows = [&](int op, int j) {
    const FlowShape& s = flow_shape(P, op);
    const bool f32 = op == flow_out || op == flow_down;
    const int esz = f32 ? 4 : static_cast<int>(sizeof(T));
    unsigned char* dst = static_cast<unsigned char*>(f32 ? static_cast<void*>(P.resid) : op == flow_qkv ? P.qkv_y : P.act);
    const int ri = s.r * s.c;  // rows per item
    const int r0 = (w_first + j * nblk) * ri;
    bulk_store(dst + static_cast<int64_t>(r0) * esz, rows_s + j * ri * esz, static_cast<unsigned>(min(ri, s.rows - r0) * esz));
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  };
  auto signal = [&] {
    if (key < 0 || done == 0 || key % kFlowCounterStride == flow_lm) return;
    const int op = key % kFlowCounterStride;
    const bool bulk = (P.bulk_ops >> op) & 1;
    flow_sync();
    if (tid == 0 && bulk) {
      if (op != flow_attn) store_rows(op, done - 1);  // (ring attention items store their rows themselves)
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
      asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(P.counters + key * kFlowCounterSpacing),
                   "r"(static_cast<unsigned>(done))
                   : "memory");
    } else if (tid == 0) {  // a release add: the barrier made the block's writes this thread's to order
      asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(P.counters + key * kFlowCounterSpacing),
                   "r"(static_cast<unsigned>(done))
                   : "memory");
    }
    if (tid == 0 && P.stamps) *flow_stamp(P, flow_key_product(P, key), 2) = globaltimer_ns();
  };
  // The ring's next chunk, `nr` rows of shape s, times the staged input: waits for it to land and
  // leaves each row's partial sums (s.g per row where warps split rows) in the buffer it returns,
  // ending with the block's barrier; the caller then frees the slot and calls next_chunk.
  auto multiply_chunk = [&](const FlowShape& s, int nr) {
    const int nv = s.k / 8;
    const unsigned long long tw = P.stamps && tid == 0 ? globaltimer_ns() : 0;
    mbar_wait(full + slot, phase);
    if (tw) wait_full += globaltimer_ns() - tw;
    const T* wc = ring + static_cast<int64_t>(slot) * slot_elems;
    float* ps = parts + pbuf * kFlowMaxRows;
    if (s.g == 1) {
      for (int row = warp; row < nr; row += kFlowWarps) {
        const float v = flow_dot<T>(wc + static_cast<int64_t>(row) * s.k, xs, 0, nv, lane);
        if (lane == 0) ps[row] = v;
      }
    } else {
      const int row = warp / s.g, sl = warp % s.g;
      if (row < nr) {
        const float v = flow_dot<T>(wc + static_cast<int64_t>(row) * s.k, xs, sl * nv / s.g, (sl + 1) * nv / s.g, lane);
        if (lane == 0) ps[warp] = v;
      }
    }
    flow_sync();
    return static_cast<const float*>(ps);
  };
  auto next_chunk = [&] {  // the next slot; the other partial-sums buffer (the readers of this one are behind a barrier)
    if (++slot == P.slots) {
      slot = 0;
      phase ^= 1u;
    }
    pbuf ^= 1;
  };
  auto row_sum = [&](const FlowShape& s, const float* ps, int i) {  // row i's dot product from multiply_chunk's sums
    float v = 0.f;
    if (s.g == 1) {
      v = ps[i];
    } else {
      for (int j = 0; j < s.g; ++j) v += ps[i * s.g + j];
    }
    return v;
  };
  // Thread 0 polls until the product `ckey` has `target` items done (mark 0 of the timeline: then);
  // a product before this launch's first is complete (pdl_wait above).
  auto wait_for = [&](int ckey, int target) {
    if (flow_key_product(P, ckey) < P.first) return;
    if (tid == 0) {
      const unsigned long long since = globaltimer_ns();
      while (ld_acquire_gpu(P.counters + ckey * kFlowCounterSpacing) < static_cast<unsigned>(target)) {
        *dep_wait = 1;
        if (P.poll_ns > 0) __nanosleep(P.poll_ns);
        // A step takes milliseconds: seconds mean a block that never runs (a bug), so fail
        // the launch rather than hang the process.
        if (globaltimer_ns() - since > kFlowWaitLimitNs) __trap();
      }
      *dep_wait = 0;
      if (P.stamps) *flow_stamp(P, flow_key_product(P, key), 3) = globaltimer_ns();
    }
  };
  for (int t = bid; t < total; t += nblk) {
    flow_seek(P, c, t);
    const int l = c.layer, op = c.op;
    const int k = l * kFlowCounterStride + op;
    if (k != key) {
      signal();
      key = k;
      done = 0;
      w_first = t - c.start;
      attn_ready = false;
      const unsigned long long t0 = P.stamps && tid == 0 ? globaltimer_ns() : 0;
      if (t0) *flow_stamp(P, flow_key_product(P, key), 0) = t0;
      // Wait for the product this one reads, then stage its input.
      const FlowLayer& L = layer_s[op == flow_lm ? 0 : l];
      switch (op) {
        case flow_qkv:
          if (l > 0) wait_for((l - 1) * kFlowCounterStride + flow_down, P.down.items);
          flow_sync();
          flow_stage_norm<T>(P.resid, L.attn_norm, P.qkv.k, P.eps, xs, red);
          break;
        case flow_out:
          wait_for(l * kFlowCounterStride + flow_attn, P.attn_items);
          flow_sync();
          flow_stage_copy<T>(P.attn_out, P.out.k, xs);
          break;
        case flow_gate_up:
          wait_for(l * kFlowCounterStride + flow_out, P.out.items);
          flow_sync();
          flow_stage_norm<T>(P.resid, L.mlp_norm, P.gu.k, P.eps, xs, red);
          break;
        case flow_down:
          wait_for(l * kFlowCounterStride + flow_gate_up, P.gu.items);
          flow_sync();
          flow_stage_copy<T>(P.act, P.down.k, xs);
          break;
        case flow_lm:
          wait_for((P.layers - 1) * kFlowCounterStride + flow_down, P.down.items);
          flow_sync();
          flow_stage_norm<T>(P.resid, P.final_norm, P.lm.k, P.eps, xs, red);
          break;
        default: break;  // attention waits inside, after asking for its first cached tile
      }
      if (t0) {
        const unsigned long long t1 = globaltimer_ns();
        *flow_stamp(P, flow_key_product(P, key), 1) = t1;
        wait_dep += t1 - t0;
      }
    }
    if (op == flow_attn && P.attn_ring) {
      const AttnParams& a = layer_s[l].attn;
      const int pos = __ldcg(a.pos);
      flow_ring_attention<T, HD>(P, a, flow_attn_item(P, t - c.start, pos), pos, ring, slot_elems, slot, phase, full,
                                 empty, attn_sm, P.stamps && tid == 0 ? ring_ns : nullptr,
                                 (P.bulk_ops >> flow_attn) & 1 ? rows_s + done * P.attn_stage : nullptr, [&] {
                                   wait_for(l * kFlowCounterStride + flow_qkv, P.qkv.items);
                                   flow_sync();
                                 });
      if (P.stamps && tid == 0) {
        const unsigned long long now = globaltimer_ns();
        *flow_stamp(P, flow_key_product(P, key), 4) = now;  // mark 1: item done
        ring_ns[2] += now - ring_ns[3];
      }
      flow_sync();
      ++done;
      continue;
    }
    if (op == flow_attn) {
      if (tid < kAttnThreads) {
        const AttnParams& a = layer_s[l].attn;
        const int w = t - c.start;
        attn_body<T, HD>(
            a, w % a.splits, w / a.splits, 0, [] { asm volatile("bar.sync 1, %0;" ::"n"(kAttnThreads) : "memory"); },
            [&] {
              if (!attn_ready) {
                wait_for(l * kFlowCounterStride + flow_qkv, P.qkv.items);
                asm volatile("bar.sync 1, %0;" ::"n"(kAttnThreads) : "memory");
                attn_ready = true;
              }
            });
      }
      if (P.stamps && tid == 0) *flow_stamp(P, flow_key_product(P, key), 4) = globaltimer_ns();  // mark 1: item done
      flow_sync();
      ++done;
      continue;
    }
    if (op == flow_lm) {
      // The LM head, the step's last product: the block's remaining items in a loop of their own
      // (one chunk of rows each, no hand-over), the stream's last and longest stretch.
      const FlowShape& s = P.lm;
      for (; t < total; t += nblk) {
        const int r0 = (t - c.start) * s.r, nr = min(s.r, s.rows - r0);
        const float* ps = multiply_chunk(s, nr);
        if (tid == 0) mbar_arrive(empty + slot);
        next_chunk();
        if (tid < nr) {
          const float v = row_sum(s, ps, tid);
          P.logits[r0 + tid] = v;
          best = max(best, argmax_key(v, r0 + tid));
        }
        ++done;
      }
      break;
    }
    const FlowShape& s = flow_shape(P, op);
    const int r0 = (t - c.start) * s.r * s.c;  // the item's rows: r0 + [0, ni); thread i writes row r0 + i
    const int ni = min(s.r * s.c, s.rows - r0);
    const bool add = op == flow_out || op == flow_down;
    const bool gu = op == flow_gate_up;
    const bool bulk = (P.bulk_ops >> op) & 1;  // rows kept in rows_s for the signal's bulk stores
    T* rows_t = reinterpret_cast<T*>(rows_s) + done * s.r * s.c;
    float* rows_f = reinterpret_cast<float*>(rows_s) + done * s.r * s.c;
    // Residual rows for the adds: asked for now, used after the product.
    const float rin = add && tid < ni ? __ldcg(P.resid + r0 + tid) : 0.f;
    float gate = 0.f;
    for (int part = 0; part < (gu ? 2 : 1) * s.c; ++part) {
      const int rs = (gu ? part >> 1 : part) * s.r;  // the chunk's rows: r0 + rs + [0, nr)
      const int nr = min(s.r, ni - rs);
      const float* ps = multiply_chunk(s, nr);
      if (tid == 0) {
        mbar_arrive(empty + slot);
        if (bulk && part == 0 && done > 0) store_rows(op, done - 1);  // the previous item's rows
      }
      next_chunk();
      if (tid >= rs && tid < rs + nr) {
        const float v = row_sum(s, ps, tid - rs);
        const int row = r0 + tid;
        switch (op) {
          case flow_qkv: (bulk ? rows_t[tid] : static_cast<T*>(P.qkv_y)[row]) = Num<T>::from(v); break;
          case flow_gate_up:
            if ((part & 1) == 0) {
              gate = v;
            } else {
              (bulk ? rows_t[tid] : static_cast<T*>(P.act)[row]) = Num<T>::from(silu(gate) * v);
            }
            break;
          default: (bulk ? rows_f[tid] : P.resid[row]) = rin + v; break;
        }
        if (bulk) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // rows_s: generic writes -> async reads
      }
    }
    ++done;
  }
  signal();
  if (P.stamps && tid == 0) {
    *flow_stamp(P, flow_lm_product(P.layers), 2) = globaltimer_ns();
    *flow_stamp(P, flow_lm_product(P.layers) + 1, 0) = wait_full;
    *flow_stamp(P, flow_lm_product(P.layers) + 2, 0) = wait_dep;
    for (int i = 0; i < 3; ++i) *flow_stamp(P, flow_lm_product(P.layers) + 4 + i, 0) = ring_ns[i];
    *flow_stamp(P, flow_lm_product(P.layers) + 7, 0) = ring_ns[4];
  }
  if (best) atomicMax(P.argmax, best);
  // The last block to finish zeroes the counters for the next launch.
  flow_sync();
  if (tid == 0) {
    unsigned* finished = P.counters + (P.layers + 1) * kFlowCounterStride * kFlowCounterSpacing;
    __threadfence();
    if (atomicAdd(finished, 1u) == static_cast<unsigned>(nblk - 1)) {
      for (int i = 0; i < (P.layers + 1) * kFlowCounterStride; ++i) P.counters[i * kFlowCounterSpacing] = 0u;
      *finished = 0u;
    }
  }
#else
  __trap();  // the engine selects this kernel on sm_90 and newer only
#endif
}

}  // namespace jouleprof::llm::kern
