#include "jouleprof/estimate/estimate.hpp"

#include "jouleprof/core/checked.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/parse.hpp"

#include <algorithm>
#include <cstdio>
#include <array>
#include <cmath>
#include <fstream>
#include <list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

namespace jouleprof::estimate {
namespace {

using json = nlohmann::json;

// LRU model of the last-level cache over storage tensors, "fluid": a tensor may be partly
// resident (one larger than the cache keeps a cache-sized part, as a thrash-resistant
// replacement policy does on a cyclic sweep: hit ratio C/N, not LRU's zero), and eviction
// takes bytes from the least recently used tensors. Write-back: evicted dirty bytes cost DRAM
// write traffic.
class Llc {
 public:
  explicit Llc(double capacity) : cap_(capacity) {}
  // Returns the bytes that hit; dram_read/dram_write accumulate the misses and write-backs.
  double read(int t, double bytes, double& dram_read, double& dram_write) {
    double hit = 0;
    auto it = map_.find(t);
    if (it != map_.end()) {
      const Entry e = *it->second;
      hit = e.bytes > 0 ? bytes * std::min(1.0, e.resident / e.bytes) : 0;
      remove(it);
      place(t, std::max(bytes, e.bytes), e.dirty, dram_write);
    } else {
      place(t, bytes, false, dram_write);
    }
    dram_read += bytes - hit;
    return hit;
  }
  void write(int t, double bytes, double& dram_write) {
    auto it = map_.find(t);
    if (it != map_.end()) remove(it);
    const double kept = place(t, bytes, true, dram_write);
    dram_write += bytes - kept;  // the part that cannot stay streams to DRAM
  }
  double dirty_bytes() const {
    double d = 0;
    for (const auto& e : lru_) d += e.dirty ? e.resident : 0;
    return d;
  }

 private:
  struct Entry {
    int t;
    double bytes, resident;
    bool dirty;
  };
  using Iter = std::list<Entry>::iterator;
  void remove(std::unordered_map<int, Iter>::iterator it) {
    used_ -= it->second->resident;
    lru_.erase(it->second);
    map_.erase(it);
  }
  // Makes t the most recently used tensor with min(bytes, capacity) resident, evicting bytes
  // of the least recently used ones; returns the resident bytes.
  double place(int t, double bytes, bool dirty, double& dram_write) {
    const double want = std::min(bytes, cap_);
    double need = used_ + want - cap_;
    while (need > 1e-9 && !lru_.empty()) {
      Entry& e = lru_.back();
      const double take = std::min(need, e.resident);
      if (e.dirty) dram_write += take;
      e.resident -= take;
      used_ -= take;
      need -= take;
      if (e.resident <= 1e-9) {
        map_.erase(e.t);
        lru_.pop_back();
      }
    }
    if (want <= 0) return 0;
    lru_.push_front(Entry{t, bytes, want, dirty});
    map_[t] = lru_.begin();
    used_ += want;
    return want;
  }
  double cap_, used_ = 0;
  std::list<Entry> lru_;
  std::unordered_map<int, Iter> map_;
};

double ceil_div(double a, double b) { return std::ceil(a / b); }

std::string class_key(OpClass c) {
  switch (c) {
    case OpClass::matmul: return "matmul";
    case OpClass::conv: return "conv";
    case OpClass::attention: return "attention";
    default: return "other";
  }
}

// Counts that do not depend on the clock.
struct Counts {
  double mac = 0, matrix_flops_on_vector = 0, vflops = 0, transc = 0;
  double dram_read = 0, dram_write = 0, llc_hit = 0;
  double l1_bytes = 0, l2_bytes = 0, l3_bytes = 0, reg_bytes = 0;
  double util = 1;  // tile/array utilization of the matrix units
  double active_sms = 0;  // GPU GEMMs: SMs with a CTA (0: all); bounds the memory bandwidth
  double resweep = 0;     // extra read sweeps of multi-pass row kernels, bytes
  double host_s = 0;
  std::vector<std::pair<std::string, double>> extra;  // class-specific event counts (name, count)
};

struct Ctx {
  Ctx(const Graph& g_, const HardwareSpec& hw_, const EstimateOptions& opt_, const Calibration* cal_)
      : g(g_), hw(hw_), opt(opt_), cal(cal_) {}
  const Graph& g;
  const HardwareSpec& hw;
  const EstimateOptions& opt;
  const Calibration* cal;
  double b = 2;  // bytes per element at the compute precision
  double peak_m = 0, peak_v = 0, eff_m = 0.8, eff_v = 0.7, eff_mem = 0.85, eff_att = 0.8, gemm_k0 = 0;
  bool matrix_units = true;
  double idle_w = 0, active_w = 0, busy_w = 0, launch_s = 0;
  double fmax = 0, fmin = 0;
  std::string mac_key, flop_key;
};

double cal_or(const std::optional<double>& c, double v) { return c ? *c : v; }

Counts count(const Ctx& c, const Subgraph& sg, double dram_read, double dram_write, double llc_hit) {
  Counts k;
  const HardwareSpec& hw = c.hw;
  k.dram_read = dram_read;
  k.dram_write = dram_write;
  k.llc_hit = llc_hit;
  k.resweep = sg.resweep_bytes;
  const double X = sg.bytes();
  k.vflops = sg.vector_flops;
  k.transc = sg.transcendentals;
  if (c.matrix_units) k.mac = sg.matrix_flops / 2;
  else k.matrix_flops_on_vector = sg.matrix_flops;
  const double M = static_cast<double>(sg.gemm_m), N = static_cast<double>(sg.gemm_n), K = static_cast<double>(sg.gemm_k),
               Bt = static_cast<double>(std::max<int64_t>(1, sg.gemm_batch));
  const bool gemm = sg.gemm_m > 0 && sg.matrix_flops > 0;
  switch (hw.cls) {
    case HwClass::gpu: {
      const double tm = hw.param("tile_m", 128), tn = hw.param("tile_n", 128), sms = hw.compute_units.value;
      double smem = X;
      if (gemm) {
        double tile_m = tm, tile_n = tn;
        if (sg.anchor != OpClass::attention) {
          // GEMM libraries map the smaller of M and N onto the MMA's N dimension (operand
          // swap) and pick a narrow tile for it, padded to the MMA's N granularity.
          const double gran = std::max(1.0, hw.param("mma_n_granularity", 8));
          if (M < tm && M <= N) tile_m = std::max(gran, ceil_div(M, gran) * gran);
          else if (N < tn && N < M) tile_n = std::max(gran, ceil_div(N, gran) * gran);
        }
        const double tiles = Bt * ceil_div(M, tile_m) * ceil_div(N, tile_n);
        const double waves = std::ceil(tiles / sms);
        const double pad = (M * N) / (ceil_div(M, tile_m) * tile_m * ceil_div(N, tile_n) * tile_n);
        // Per output tile, pipeline fill and the epilogue cost about as much as gemm_k0 more
        // steps of the K loop: shallow-K GEMMs reach a smaller fraction of the peak.
        const double depth = sg.anchor == OpClass::attention ? 1.0 : K / (K + c.gemm_k0);
        k.util = std::clamp(tiles / (waves * sms) * pad * depth, 1e-3, 1.0);
        k.active_sms = std::min(sms, tiles);
        const double lt = hw.param("l2_tile", tm);  // operand reuse between CTAs (clusters, multicast)
        smem = c.b * Bt * (M * K * ceil_div(N, lt) + K * N * ceil_div(M, lt)) + sg.output_bytes;
      }
      // Multi-pass row kernels re-read their rows from L1/L2.
      smem += sg.resweep_bytes;
      k.l1_bytes = smem;
      k.l2_bytes = std::max(smem, dram_read + dram_write + llc_hit);
      k.reg_bytes = 2 * k.mac * c.b / 16 + 3 * (k.vflops + k.matrix_flops_on_vector) * 4;
      const double instr = k.mac / 65536 + (k.vflops + k.matrix_flops_on_vector) / 32 + (k.l1_bytes + k.l2_bytes) / 512;
      k.extra = {{"warp_instructions", instr}};
      break;
    }
    case HwClass::cpu: {
      const double simd_bytes = hw.param("simd_bits", 512) / 8, lanes = simd_bytes / c.b;
      const double reuse = hw.param("register_blocking", 8);
      k.l1_bytes = (gemm ? 2 * (k.mac + k.matrix_flops_on_vector / 2) * c.b / reuse : 0) + X;
      k.l2_bytes = (gemm ? k.l1_bytes / hw.param("l1_reuse", 8) : 0) + X;
      k.l3_bytes = X;
      const double compute_instr =
          (c.matrix_units ? k.mac / hw.param("matrix_macs_per_instruction", 8192) : 0) +
          (k.matrix_flops_on_vector / 2 + k.vflops) / lanes;
      const double mem_instr = k.l1_bytes / simd_bytes;
      const double body = compute_instr + mem_instr;
      const double branches = body / hw.param("instructions_per_branch", 8);
      const double instr = body + branches;
      k.reg_bytes = 3 * compute_instr * simd_bytes;
      k.extra = {{"instructions", instr}, {"branches", branches},
                 {"mispredicts", branches * hw.param("mispredict_rate", 0.01)}};
      break;
    }
    case HwClass::tpu: {
      const double a = hw.param("array_dim", 128);
      if (gemm) {
        k.util = std::clamp((K * N) / (ceil_div(K, a) * a * ceil_div(N, a) * a), 1e-3, 1.0);
        const double weight_loads = c.b * Bt * K * N * std::max(1.0, ceil_div(M, hw.param("m_block", 1024)));
        const double ub = c.b * Bt * (M * K * ceil_div(N, a) + M * N);
        k.extra = {{"weight_load_bytes", weight_loads}, {"unified_buffer_bytes", ub}};
      } else {
        k.extra = {{"weight_load_bytes", 0}, {"unified_buffer_bytes", X}};
      }
      break;
    }
    case HwClass::kpu: {
      const double tiles = hw.compute_units.value, td = hw.param("tile_dim", 16);
      const double edge = std::sqrt(tiles);
      const double fabric = td * edge;  // the array's MACs in one dimension
      double stream = X;
      if (gemm) {
        const double t = Bt * ceil_div(M, td) * ceil_div(N, td);
        const double waves = std::ceil(t / tiles);
        k.util = std::clamp(t / (waves * tiles), 1e-3, 1.0);
        stream = c.b * Bt * (M * K * ceil_div(N, fabric) + K * N * ceil_div(M, fabric));
      }
      k.extra = {{"tile_memory_bytes", 2 * k.mac * c.b / td + 3 * k.vflops * c.b},
                 {"noc_byte_hops", stream * edge / 1.5},
                 {"token_bytes", X}};
      break;
    }
  }
  return k;
}

struct Timing {
  double t_compute = 0, t_memory = 0, t_overhead = 0, latency = 0;
  double f = 0;  // clock it runs at (MHz)
  std::string bound;
};

// Device time of one subgraph at clock f (host dispatch is combined in estimate_partitioned).
Timing timing(const Ctx& c, const Subgraph& sg, const Counts& k, double f) {
  const HardwareSpec& hw = c.hw;
  // Datasheet peaks hold at the clock they were quoted for (matrix_peak_clock_mhz, default
  // the maximum clock); throughput scales with the clock.
  Timing t;
  const double eff_m = sg.anchor == OpClass::attention ? c.eff_att : c.eff_m;
  const double m_rate = c.peak_m * eff_m * k.util * f / hw.param("matrix_peak_clock_mhz", c.fmax);
  const double v_rate = c.peak_v * c.eff_v * f / c.fmax;
  t.t_compute = (m_rate > 0 ? 2 * k.mac / m_rate : 0) + (k.vflops + k.matrix_flops_on_vector) / v_rate;
  double dram_bw = hw.dram().bandwidth_gbps.value * 1e9 * c.eff_mem;
  double llc_cap = INFINITY;
  if (hw.cls == HwClass::gpu && k.active_sms > 0) {
    // A GEMM with fewer CTAs than SMs moves its operands through only that many SMs' load
    // paths (sm_load_bytes_per_clock each, at the core clock).
    const double per_sm = hw.param("sm_load_bytes_per_clock", 0) * f * 1e6;
    if (per_sm > 0) {
      llc_cap = k.active_sms * per_sm;
      dram_bw = std::min(dram_bw, llc_cap);
    }
  }
  // Multi-pass row kernels: every extra sweep of the rows is charged at the streaming rate
  // (the passes are separated by block barriers; the kernels are occupancy/latency bound).
  const double dram = (k.dram_read + k.dram_write + k.resweep) / dram_bw;
  double llc = 0;
  if (const MemoryLevel* l = hw.llc()) {
    const double traffic = hw.cls == HwClass::gpu ? k.l2_bytes : (hw.cls == HwClass::cpu ? k.l3_bytes : k.llc_hit);
    // GPU L2 runs in the core clock domain: its bandwidth scales with the clock.
    const double clk = hw.cls == HwClass::gpu ? f / c.fmax : 1.0;
    llc = traffic / std::min(l->bandwidth_gbps.value * 1e9 * c.eff_mem * clk, llc_cap);
  }
  t.t_memory = std::max(dram, llc);
  t.t_overhead = sg.kernels * c.launch_s;
  t.latency = std::max(t.t_compute, t.t_memory) + t.t_overhead;
  t.bound = t.t_compute >= t.t_memory ? "compute" : "memory";
  if (t.t_overhead > std::max(t.t_compute, t.t_memory)) t.bound = "overhead";
  return t;
}

// Dynamic events at clock f (V^2 scaling of on-chip events); static power over the latency.
void energy(const Ctx& c, const Counts& k, double f, double latency, double busy, SubgraphEstimate& out) {
  const HardwareSpec& hw = c.hw;
  const double v = voltage_at(hw, f) / hw.voltage_max_v.value;
  const double v2 = v * v;
  const double kc = (c.cal ? c.cal->k_compute : 1) * v2 * 1e-12;
  const double ko = (c.cal ? c.cal->k_onchip : 1) * v2 * 1e-12;
  const double kd = (c.cal ? c.cal->k_dram : 1) * 1e-12;
  const double mac_pj = hw.event_pj(c.mac_key), flop_pj = hw.event_pj(c.flop_key), fp32_pj = hw.event_pj("flop_fp32");
  const double transc_pj = hw.event_pj("transcendental");
  const double dram_pj = hw.dram().energy_pj_per_byte.value;
  const double l1_pj = hw.memory.size() >= 2 ? hw.memory.front().energy_pj_per_byte.value : 0;
  const MemoryLevel* llc = hw.llc();
  const double llc_pj = llc ? llc->energy_pj_per_byte.value : 0;
  std::vector<Event>& e = out.events;
  e.clear();
  auto add = [&](const char* group, const char* name, const char* unit, double count, double j) {
    e.push_back(Event{group, name, unit, count, j});
  };
  const double dram = k.dram_read + k.dram_write;
  auto extra = [&](const char* key) {
    for (const auto& [n, v2c] : k.extra) {
      if (n == key) return v2c;
    }
    return 0.0;
  };
  switch (hw.cls) {
    case HwClass::gpu:
      add("compute", "tensor_core_mac", "MAC", k.mac, k.mac * mac_pj * kc);
      add("compute", "cuda_core_flop", "FLOP", k.vflops + k.matrix_flops_on_vector,
          (k.vflops * flop_pj + k.matrix_flops_on_vector * fp32_pj) * kc);
      add("compute", "sfu_op", "op", k.transc, k.transc * transc_pj * kc);
      add("register_file", "register_access", "B", k.reg_bytes, k.reg_bytes * hw.event_pj("register_per_byte") * ko);
      add("shared_l1", "shared_l1_access", "B", k.l1_bytes, k.l1_bytes * l1_pj * ko);
      add("l2", "l2_access", "B", k.l2_bytes, k.l2_bytes * llc_pj * ko);
      add("dram", "hbm_read", "B", k.dram_read, k.dram_read * dram_pj * kd);
      add("dram", "hbm_write", "B", k.dram_write, k.dram_write * dram_pj * kd);
      add("control", "warp_instruction", "instr", extra("warp_instructions"),
          extra("warp_instructions") * hw.event_pj("warp_instruction") * ko);
      break;
    case HwClass::cpu: {
      const double instr = extra("instructions");
      add("pipeline", "instruction_fetch", "instr", instr, instr * hw.event_pj("instruction_fetch") * ko);
      add("pipeline", "instruction_decode", "instr", instr, instr * hw.event_pj("instruction_decode") * ko);
      add("pipeline", "instruction_dispatch", "instr", instr, instr * hw.event_pj("instruction_dispatch") * ko);
      add("register_file", "register_access", "B", k.reg_bytes, k.reg_bytes * hw.event_pj("register_per_byte") * ko);
      const double lv[3] = {k.l1_bytes, k.l2_bytes, k.l3_bytes};
      const char* names[3] = {"l1_access", "l2_access", "l3_access"};
      for (std::size_t i = 0; i < 3; ++i) {
        const double pj = i + 1 < hw.memory.size() ? hw.memory[i].energy_pj_per_byte.value : 0;
        add("memory", names[i], "B", lv[i], lv[i] * pj * ko);
      }
      add("memory", "dram_access", "B", dram, dram * dram_pj * kd);
      add("alu", "matrix_mac", "MAC", k.mac, k.mac * mac_pj * kc);
      add("alu", "simd_flop", "FLOP", k.vflops + k.matrix_flops_on_vector,
          (k.vflops * flop_pj + k.matrix_flops_on_vector * fp32_pj) * kc);
      add("alu", "special_function", "op", k.transc, k.transc * transc_pj * kc);
      add("branch", "branch", "branch", extra("branches"), extra("branches") * hw.event_pj("branch") * ko);
      add("branch", "mispredict", "branch", extra("mispredicts"),
          extra("mispredicts") * hw.event_pj("branch_mispredict") * ko);
      break;
    }
    case HwClass::tpu:
      add("systolic_array", "array_mac", "MAC", k.mac, k.mac * mac_pj * kc);
      add("weight_load", "weight_load", "B", extra("weight_load_bytes"),
          extra("weight_load_bytes") * hw.event_pj("register_per_byte") * ko);
      add("unified_buffer", "unified_buffer_access", "B", extra("unified_buffer_bytes"),
          extra("unified_buffer_bytes") * l1_pj * ko);
      add("vector_unit", "vector_flop", "FLOP", k.vflops + k.matrix_flops_on_vector,
          (k.vflops * flop_pj + k.matrix_flops_on_vector * fp32_pj + k.transc * transc_pj) * kc);
      add("dma", "hbm_access", "B", dram, dram * dram_pj * kd);
      break;
    case HwClass::kpu:
      add("tile_compute", "tile_mac", "MAC", k.mac, k.mac * mac_pj * kc);
      add("tile_compute", "tile_vector_flop", "FLOP", k.vflops + k.matrix_flops_on_vector,
          (k.vflops * flop_pj + k.matrix_flops_on_vector * fp32_pj + k.transc * transc_pj) * kc);
      add("tile_memory", "tile_sram_access", "B", extra("tile_memory_bytes"),
          extra("tile_memory_bytes") * hw.event_pj("sram_8k_per_byte") * ko);
      add("noc", "noc_hop", "B*hop", extra("noc_byte_hops"), extra("noc_byte_hops") * hw.event_pj("noc_hop_per_byte") * ko);
      add("token_io", "token_injection_extraction", "B", extra("token_bytes"),
          extra("token_bytes") * hw.event_pj("sram_32k_per_byte") * ko);
      add("dram", "dram_access", "B", dram, dram * dram_pj * kd);
      break;
  }
  double dyn = 0;
  for (const Event& ev : e) dyn += ev.energy_j;
  add("static", "idle_power", "s", latency, c.idle_w * latency);
  add("static", "active_static_power", "s", latency, c.active_w * v * latency);
  add("static", "device_busy_power", "s", busy, c.busy_w * v * busy);
  out.dynamic_j = dyn;
  out.static_j = (c.idle_w + c.active_w * v) * latency + c.busy_w * v * busy;
  out.energy_j = out.dynamic_j + out.static_j;
}

}  // namespace

double voltage_at(const HardwareSpec& hw, double mhz) {
  const double f0 = hw.clock_min_mhz.value, f1 = hw.clock_max_mhz.value;
  const double v0 = hw.voltage_min_v.value, v1 = hw.voltage_max_v.value;
  if (f1 <= f0) return v1;
  return v0 + (v1 - v0) * std::clamp((mhz - f0) / (f1 - f0), 0.0, 1.0);
}

// Sizes checked in 64 bits before any arithmetic on them: a tensor whose element count overflows,
// or that alone is larger than the device's memory, cannot run there (and would print as a
// negative or absurd figure). The message says how much it needs.
Result<void> check_sizes(const Graph& g, const HardwareSpec& hw) {
  const double capacity = hw.memory.empty() ? 0 : hw.dram().size_bytes.value;
  for (const Tensor& t : g.tensors) {
    if (!numel_fits(t.shape)) {
      return make_error(Errc::invalid_argument, "tensor '" + t.name + "' of shape " + to_string(t.shape) +
                                                    " has more elements than 64 bits count; reduce the sizes");
    }
    if (capacity > 0) {
      if (auto fits = check_fits("tensor '" + t.name + "' of shape " + to_string(t.shape), t.bytes(), capacity, hw.id); !fits) {
        return fits.error();
      }
    }
  }
  return {};
}

Result<Estimate> estimate(const Graph& g, const HardwareSpec& hw, const EstimateOptions& opt, const Calibration* cal) {
  if (auto t = check_topological(g); !t) return t.error();
  if (auto s = check_sizes(g, hw); !s) return s.error();
  PartitionOptions po;
  po.fuse = opt.fuse;
  return estimate_partitioned(g, partition(g, po), hw, opt, cal);
}

namespace {

// The compute peaks, efficiencies and event keys at the requested precision (the calibration's
// figures over the datasheet's). Gives the requested clock, or why it cannot be estimated.
Result<double> set_up_context(Ctx& c) {
  const HardwareSpec& hw = c.hw;
  const EstimateOptions& opt = c.opt;
  const Calibration* cal = c.cal;
  c.b = dtype_bytes(opt.precision);
  const std::string p = to_string(opt.precision);
  auto available = [&]() {
    std::string s;
    for (const auto* m : {&hw.matrix_peak_tflops, &hw.vector_peak_tflops}) {
      for (const auto& [k, v] : *m) {
        (void)v;
        if (s.find(k) == std::string::npos) s += (s.empty() ? "" : ", ") + k;
      }
    }
    return s;
  };
  if (auto m = hw.peak_flops(opt.precision, true)) {
    c.peak_m = *m;
  } else if (auto v = hw.peak_flops(opt.precision, false)) {
    c.peak_m = *v;
    c.matrix_units = false;
  } else {
    return make_error(Errc::invalid_argument, "hardware '" + hw.id + "' has no " + p +
                                                  " peak in " + hw.file + " (available: " + available() + ")");
  }
  c.peak_v = hw.peak_flops(opt.precision, false).value_or(hw.peak_flops(DType::f32, false).value_or(c.peak_m));
  c.eff_m = cal_or(cal ? cal->eff_matrix : std::nullopt, hw.eff_matrix.value);
  c.eff_v = cal_or(cal ? cal->eff_vector : std::nullopt, hw.eff_vector.value);
  c.eff_mem = cal_or(cal ? cal->eff_memory : std::nullopt, hw.eff_memory.value);
  c.eff_att = cal_or(cal ? cal->eff_attention : std::nullopt, hw.param("eff_attention", c.eff_m));
  c.gemm_k0 = cal_or(cal ? cal->gemm_k0 : std::nullopt, hw.param("gemm_k0", 0));
  c.idle_w = cal_or(cal ? cal->idle_w : std::nullopt, hw.idle_w.value);
  c.active_w = cal_or(cal ? cal->active_w : std::nullopt, 0.1 * hw.tdp_w.value);
  c.busy_w = cal ? cal->busy_w : 0;
  c.launch_s = cal_or(cal ? cal->launch_us : std::nullopt, hw.launch_overhead_us.value) * 1e-6;
  c.fmax = hw.clock_max_mhz.value;
  c.fmin = hw.clock_min_mhz.value;
  c.mac_key = "mac_" + p;
  if (hw.event_pj(c.mac_key) <= 0) c.mac_key = "mac_fp32";
  c.flop_key = (opt.precision == DType::f32 || opt.precision == DType::tf32) ? "flop_fp32" : "flop_" + p;
  if (hw.event_pj(c.flop_key) <= 0) c.flop_key = "flop_fp32";
  const double f_req = opt.clock_mhz.value_or(c.fmax);
  if (f_req > c.fmax * 1.0001 || f_req < c.fmin * 0.9999) {
    return make_error(Errc::invalid_argument, "--clock " + std::to_string(static_cast<int>(f_req)) + " MHz is outside " +
                                                  hw.id + "'s range " + std::to_string(static_cast<int>(c.fmin)) + "-" +
                                                  std::to_string(static_cast<int>(c.fmax)) + " MHz");
  }
  return f_req;
}

// The estimate's identity: model, hardware, options, the requested clock.
Estimate estimate_header(const Ctx& c, double f_req) {
  Estimate est;
  est.model = c.g.name;
  est.hw_id = c.hw.id;
  est.hw_name = c.hw.name;
  est.cls = c.hw.cls;
  est.precision = c.opt.precision;
  est.fused = c.opt.fuse;
  est.eager = c.opt.eager;
  est.warm = c.opt.warm;
  est.clock_mhz = f_req;
  est.clock_requested_mhz = f_req;
  est.power_cap_w = c.hw.tdp_w.value;
  est.calibration = c.cal ? c.cal->file : "";
  est.weight_bytes = c.g.weight_bytes();
  return est;
}

// Cache model: one pass (cold) or the second of two passes (steady state). Per subgraph: DRAM
// bytes read, written, and LLC bytes hit.
std::vector<std::array<double, 3>> cache_traffic(const Ctx& c, const std::vector<Subgraph>& sgs) {
  const HardwareSpec& hw = c.hw;
  const MemoryLevel* llc = hw.llc();
  // Data read by all cores is cached in every partition of a partitioned LLC (A100/H100 L2:
  // two halves, each caching for the SMs attached to it), so reuse capacity is one partition.
  Llc cache(llc ? llc->size_bytes.value / std::max(1.0, hw.param("llc_partitions", 1)) *
                      std::clamp(hw.param("llc_usable_fraction", 1.0), 0.0, 1.0)
                : 0);
  std::vector<std::array<double, 3>> traffic(sgs.size());
  for (int pass = 0; pass < (c.opt.warm ? 2 : 1); ++pass) {
    for (std::size_t i = 0; i < sgs.size(); ++i) {
      double rd = 0, wr = 0, hit = 0;
      for (const auto& [t, bytes] : sgs[i].reads) hit += cache.read(t, bytes, rd, wr);
      for (const auto& [t, bytes] : sgs[i].writes) cache.write(t, bytes, wr);
      traffic[i] = {rd, wr, hit};
    }
  }
  if (!c.opt.warm && !sgs.empty()) traffic.back()[1] += cache.dirty_bytes();  // written back eventually
  return traffic;
}

// The eager framework's host time to dispatch a subgraph (calibrated per op class), added to k.
void add_host_dispatch(const Ctx& c, const Subgraph& sg, Counts& k) {
  const Calibration* cal = c.cal;
  const bool multi = c.g.ops.size() > 1;
  for (int oi : sg.dispatched) {
    const Op& op = c.g.ops[static_cast<std::size_t>(oi)];
    double us = 8;  // uncalibrated default: a typical eager-framework op dispatch
    if (cal) {
      auto it = cal->dispatch_us.find(class_key(op.cls));
      if (it == cal->dispatch_us.end()) it = cal->dispatch_us.find("other");
      if (it != cal->dispatch_us.end()) us = it->second;
      if (multi) us += cal->model_overhead_us;
    }
    k.host_s += us * 1e-6 * op.kernels;
  }
  if (cal) {
    for (int oi : sg.ops) k.host_s += c.g.ops[static_cast<std::size_t>(oi)].module_calls * cal->module_us * 1e-6;
  }
}

// Wall time and energy of the whole graph at a clock f, from each subgraph's counts.
struct ClockModel {
  const Ctx& c;
  const std::vector<Subgraph>& sgs;
  std::vector<Counts> counts;
  // Energy of each subgraph's events at the requested clock: the part that scales with V(f)^2
  // (on-chip) and DRAM's.
  std::vector<double> e_scaled, e_fixed;
  double v_req = 1;
  std::vector<Timing> dev;  // of the last run_at
  std::vector<double> wall;

  ClockModel(const Ctx& ctx, const std::vector<Subgraph>& s) : c(ctx), sgs(s), counts(s.size()), e_scaled(s.size()),
                                                             e_fixed(s.size()), dev(s.size()), wall(s.size()) {}

  // (1) Counts and host dispatch of every subgraph; the energy of its events at the requested clock.
  void count_all(const std::vector<std::array<double, 3>>& traffic, double f_req) {
    v_req = voltage_at(c.hw, f_req) / c.hw.voltage_max_v.value;
    for (std::size_t i = 0; i < sgs.size(); ++i) {
      Counts& k = counts[i];
      k = count(c, sgs[i], traffic[i][0], traffic[i][1], traffic[i][2]);
      if (c.opt.eager) add_host_dispatch(c, sgs[i], k);
      SubgraphEstimate tmp;
      energy(c, k, f_req, 0, 0, tmp);
      double dram_j = 0;  // off-chip events do not scale with the core voltage
      for (const Event& ev : tmp.events) {
        if (ev.group == "dram" || ev.group == "dma" || ev.name == "dram_access") dram_j += ev.energy_j;
      }
      e_fixed[i] = dram_j;
      e_scaled[i] = tmp.dynamic_j - dram_j;
    }
  }

  // (2) Wall time at clock f. An eager framework dispatches kernels from the host
  // asynchronously: host and device form a two-stage pipeline. Steady state of repeated runs:
  // the slower stage sets the pace (max of total host and total device time); one cold run:
  // kernel i starts when it has been dispatched and kernel i-1 has finished.
  std::pair<double, double> run_at(double f) {
    double host_sum = 0, dev_sum = 0;
    for (std::size_t i = 0; i < sgs.size(); ++i) {
      dev[i] = timing(c, sgs[i], counts[i], f);
      dev[i].f = f;
      host_sum += counts[i].host_s;
      dev_sum += dev[i].latency;
    }
    if (!c.opt.eager) {
      for (std::size_t i = 0; i < sgs.size(); ++i) wall[i] = dev[i].latency;
    } else if (c.opt.warm) {
      const bool host_bound = host_sum > dev_sum;
      for (std::size_t i = 0; i < sgs.size(); ++i) wall[i] = host_bound ? counts[i].host_s : dev[i].latency;
    } else {
      double issued = 0, end = 0;
      for (std::size_t i = 0; i < sgs.size(); ++i) {
        issued += counts[i].host_s;
        const double e = std::max(issued, end) + dev[i].latency;
        wall[i] = e - end;
        end = e;
      }
    }
    const double v = voltage_at(c.hw, f) / c.hw.voltage_max_v.value;
    const double r = (v * v) / (v_req * v_req);
    double t = 0, e = 0;
    for (std::size_t i = 0; i < sgs.size(); ++i) {
      t += wall[i];
      e += e_scaled[i] * r + e_fixed[i] + (c.idle_w + c.active_w * v) * wall[i] + c.busy_w * v * dev[i].latency;
    }
    return std::make_pair(t, e);
  }

  // Power cap: GPUs and accelerators limit their average power over windows longer than a
  // kernel, so the clock is lowered for the whole run until its average power fits TDP.
  void run_capped(double f_req, Estimate& est) {
    auto [t_req, e_req] = run_at(f_req);
    const double tdp = c.hw.tdp_w.value;
    if (!(c.opt.power_cap && e_req / std::max(t_req, 1e-30) > tdp && f_req > c.fmin)) return;
    double lo = c.fmin, hi = f_req;
    for (int it = 0; it < 30; ++it) {
      const double mid = 0.5 * (lo + hi);
      const auto [t, e] = run_at(mid);
      if (e / std::max(t, 1e-30) > tdp) hi = mid;
      else lo = mid;
    }
    run_at(lo);
    est.clock_mhz = lo;
    est.power_capped = true;
    est.uncapped_power_w = e_req / std::max(t_req, 1e-30);
  }
};

// (3) One subgraph's energy: dynamic events at its clock, static power over its wall time.
SubgraphEstimate subgraph_estimate(const Ctx& c, const Subgraph& sg, const Counts& k, const Timing& t, double wall) {
  SubgraphEstimate se;
  se.name = sg.name;
  se.anchor = sg.anchor;
  se.ops = sg.ops.size();
  se.kernels = sg.kernels;
  se.flops = sg.flops();
  se.matrix_flops = sg.matrix_flops;
  se.dram_bytes = k.dram_read + k.dram_write;
  se.llc_bytes = k.llc_hit;
  energy(c, k, t.f, wall, t.latency, se);
  se.device_s = t.latency;
  se.clock_mhz = t.f;
  se.t_compute_s = t.t_compute;
  se.t_memory_s = t.t_memory;
  se.t_overhead_s = t.t_overhead;
  se.latency_s = wall;
  se.bound = t.bound;
  if (wall > t.latency * (1 + 1e-9)) {  // the device waited for the host
    se.t_overhead_s = wall - std::max(t.t_compute, t.t_memory);
    se.bound = "overhead";
  }
  const double peak = c.peak_m > 0 ? c.peak_m : c.peak_v;
  se.utilization = wall > 0 ? se.flops / wall / peak : 0;
  return se;
}

// Adds a subgraph to the totals; events of the same group and name are summed.
void add_to_totals(Estimate& est, SubgraphEstimate se, std::map<std::pair<std::string, std::string>, std::size_t>& index) {
  est.latency_s += se.latency_s;
  est.energy_j += se.energy_j;
  est.dynamic_j += se.dynamic_j;
  est.static_j += se.static_j;
  est.flops += se.flops;
  est.dram_bytes += se.dram_bytes;
  est.ops += se.ops;
  for (const Event& ev : se.events) {
    const auto key = std::make_pair(ev.group, ev.name);
    auto it = index.find(key);
    if (it == index.end()) {
      index[key] = est.totals.size();
      est.totals.push_back(ev);
    } else {
      est.totals[it->second].count += ev.count;
      est.totals[it->second].energy_j += ev.energy_j;
    }
  }
  est.subgraphs.push_back(std::move(se));
}

}  // namespace

Result<Estimate> estimate_partitioned(const Graph& g, const std::vector<Subgraph>& sgs, const HardwareSpec& hw,
                                      const EstimateOptions& opt, const Calibration* cal) {
  Ctx c(g, hw, opt, cal);
  auto f_req = set_up_context(c);
  if (!f_req) return f_req.error();
  Estimate est = estimate_header(c, *f_req);
  ClockModel model(c, sgs);
  model.count_all(cache_traffic(c, sgs), *f_req);
  model.run_capped(*f_req, est);
  est.subgraphs.reserve(sgs.size());
  std::map<std::pair<std::string, std::string>, std::size_t> total_index;
  for (std::size_t i = 0; i < sgs.size(); ++i) {
    add_to_totals(est, subgraph_estimate(c, sgs[i], model.counts[i], model.dev[i], model.wall[i]), total_index);
  }
  est.avg_power_w = est.latency_s > 0 ? est.energy_j / est.latency_s : 0;
  if (!cal) est.notes.push_back("uncalibrated: datasheet peaks, default efficiencies, Horowitz-scaled event energies");
  if (hw.cls == HwClass::gpu) est.notes.push_back("warp divergence not modelled (the built-in ops are branch-free)");
  return est;
}

Result<Calibration> load_calibration(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return make_error(text.error().code, "calibration file: " + text.error().message);
  if (auto at = json_too_deep(*text)) return make_error(Errc::parse, path + ": JSON nested too deep at byte " + std::to_string(*at));
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception& e) {
    return make_error(Errc::parse, path + ": not valid JSON: " + e.what());
  }
  Calibration c;
  c.file = path;
  try {
    c.hw_id = j.at("hw_id").get<std::string>();
    c.provenance = j.value("provenance", std::string{});
    const json& p = j.at("parameters");
    auto opt = [&](const char* k, std::optional<double>& dst) {
      if (p.contains(k)) dst = p.at(k).get<double>();
    };
    opt("eff_matrix", c.eff_matrix);
    opt("eff_vector", c.eff_vector);
    opt("eff_memory", c.eff_memory);
    opt("eff_attention", c.eff_attention);
    opt("gemm_k0", c.gemm_k0);
    opt("idle_w", c.idle_w);
    opt("active_w", c.active_w);
    opt("launch_us", c.launch_us);
    c.k_compute = p.value("k_compute", 1.0);
    c.k_onchip = p.value("k_onchip", 1.0);
    c.k_dram = p.value("k_dram", 1.0);
    c.model_overhead_us = p.value("model_overhead_us", 0.0);
    c.module_us = p.value("module_us", 0.0);
    c.busy_w = p.value("busy_w", 0.0);
    if (p.contains("dispatch_us")) c.dispatch_us = p.at("dispatch_us").get<std::map<std::string, double>>();
    if (j.contains("stats")) c.stats = j.at("stats").get<std::map<std::string, double>>();
  } catch (const json::exception& e) {
    return make_error(Errc::parse, path + ": " + e.what());
  }
  for (double v : {c.k_compute, c.k_onchip, c.k_dram}) {
    if (!(v >= 0 && v < 1e4)) return make_error(Errc::parse, path + ": energy multiplier out of range");
  }
  // Every parameter a figure is computed from: finite and in a plausible range.
  const std::pair<const char*, std::optional<double>> ranged[] = {
      {"eff_matrix", c.eff_matrix}, {"eff_vector", c.eff_vector}, {"eff_memory", c.eff_memory},
      {"eff_attention", c.eff_attention}};
  for (const auto& [k, v] : ranged) {
    if (v && !(*v > 0 && *v <= 1.5)) return make_error(Errc::parse, path + ": parameters." + k + " must be in (0, 1.5]");
  }
  const std::pair<const char*, std::optional<double>> nonneg[] = {
      {"gemm_k0", c.gemm_k0}, {"idle_w", c.idle_w}, {"active_w", c.active_w}, {"launch_us", c.launch_us},
      {"model_overhead_us", c.model_overhead_us}, {"module_us", c.module_us}, {"busy_w", c.busy_w}};
  for (const auto& [k, v] : nonneg) {
    if (v && !(*v >= 0 && *v < 1e7)) return make_error(Errc::parse, path + ": parameters." + k + " must be in [0, 1e7)");
  }
  for (const auto& [k, v] : c.dispatch_us) {
    if (!(v >= 0 && v < 1e7)) return make_error(Errc::parse, path + ": parameters.dispatch_us." + k + " must be in [0, 1e7)");
  }
  return c;
}

Result<void> save_calibration(const Calibration& c, const std::string& path) {
  json p;
  auto put = [&](const char* k, const std::optional<double>& v) {
    if (v) p[k] = *v;
  };
  put("eff_matrix", c.eff_matrix);
  put("eff_vector", c.eff_vector);
  put("eff_memory", c.eff_memory);
  put("eff_attention", c.eff_attention);
  put("gemm_k0", c.gemm_k0);
  put("idle_w", c.idle_w);
  put("active_w", c.active_w);
  put("launch_us", c.launch_us);
  p["k_compute"] = c.k_compute;
  p["k_onchip"] = c.k_onchip;
  p["k_dram"] = c.k_dram;
  p["model_overhead_us"] = c.model_overhead_us;
  p["module_us"] = c.module_us;
  p["busy_w"] = c.busy_w;
  p["dispatch_us"] = c.dispatch_us;
  json j = {{"schema_version", 1}, {"hw_id", c.hw_id}, {"provenance", c.provenance}, {"parameters", p}, {"stats", c.stats}};
  return write_file_atomic(path, j.dump(2) + "\n");
}

}  // namespace jouleprof::estimate
