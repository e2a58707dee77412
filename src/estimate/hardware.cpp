#include "jouleprof/estimate/hardware.hpp"
#include "jouleprof/core/self_exe.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jouleprof/estimate/builders.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/parse.hpp"

#ifndef JOULEPROF_ESTIMATE_DATA_DIR
#define JOULEPROF_ESTIMATE_DATA_DIR ""
#endif

namespace jouleprof::estimate {
namespace {

using json = nlohmann::json;

std::string fmtnum(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

struct Reader {
  const json& j;
  std::string file;
  std::optional<Error> err;

  void fail(const std::string& field, const std::string& why) {
    if (!err) err = make_error(Errc::parse, file + ": field '" + field + "': " + why);
  }

  Sourced sourced(const json& obj, const std::string& field, const std::string& path, bool required = true) {
    Sourced s;
    if (!obj.is_object() || !obj.contains(field)) {
      if (required) fail(path, "missing");
      s.value = NAN;
      return s;
    }
    const json& v = obj.at(field);
    if (!v.is_object() || !v.contains("value") || !v.at("value").is_number()) {
      fail(path, "expected {\"value\": NUMBER, \"source\": \"...\"}");
      return s;
    }
    if (!v.contains("source") || !v.at("source").is_string() || v.at("source").get<std::string>().empty()) {
      fail(path, "has no source (every number needs one)");
      return s;
    }
    s.value = v.at("value").get<double>();
    s.source = v.at("source").get<std::string>();
    if (!std::isfinite(s.value)) fail(path, "is not a finite number");
    return s;
  }

  std::map<std::string, Sourced> sourced_map(const json& obj, const std::string& field, bool required) {
    std::map<std::string, Sourced> m;
    if (!obj.contains(field)) {
      if (required) fail(field, "missing");
      return m;
    }
    if (!obj.at(field).is_object()) {
      fail(field, "expected an object");
      return m;
    }
    for (const auto& [k, v] : obj.at(field).items()) {
      (void)v;
      m[k] = sourced(obj.at(field), k, field + "." + k);
    }
    return m;
  }

  std::string str(const std::string& field, bool required = true) {
    if (!j.contains(field)) {
      if (required) fail(field, "missing");
      return {};
    }
    if (!j.at(field).is_string()) {
      fail(field, "expected a string");
      return {};
    }
    return j.at(field).get<std::string>();
  }
};

void fill_default_events(HardwareSpec& hw) {
  // Dynamic energy scales with switched capacitance (taken as proportional to the feature
  // size) and with V^2: E = E_45nm * (node / 45 nm) * (V / 0.9 V)^2. This is the classical
  // (Dennard-era) rule and is optimistic below ~20 nm; calibration corrects it where
  // measurements exist (docs/estimate.md).
  const double node = hw.process_nm.value, v = hw.voltage_max_v.value;
  const double scale = (node / 45.0) * (v / 0.9) * (v / 0.9);
  for (const EventDefault& e : horowitz_45nm()) {
    if (hw.events_pj.count(e.key)) continue;
    hw.events_pj[e.key] = Sourced{e.pj_45nm * scale, std::string(e.source) + "; " + fmtnum(e.pj_45nm) +
                                                         " pJ at 45 nm/0.9 V scaled x" + fmtnum(scale) + " (" +
                                                         fmtnum(node) + " nm, " + fmtnum(v) + " V)"};
  }
}

}  // namespace

const char* to_string(HwClass c) {
  switch (c) {
    case HwClass::cpu: return "cpu";
    case HwClass::gpu: return "gpu";
    case HwClass::tpu: return "tpu";
    case HwClass::kpu: return "kpu";
  }
  return "?";
}

const std::vector<EventDefault>& horowitz_45nm() {
  static const std::vector<EventDefault> t = {
      {"mac_fp32", 4.6, "Horowitz ISSCC'14: fp32 mult 3.7 + add 0.9 pJ"},
      {"mac_tf32", 2.0, "assumption: tf32 mult ~ fp16 mult 1.1 + fp32 add 0.9 pJ (Horowitz ISSCC'14)"},
      {"mac_bf16", 2.0, "Horowitz ISSCC'14: fp16 mult 1.1 + fp32 accumulate 0.9 pJ (bf16 taken as fp16)"},
      {"mac_fp16", 2.0, "Horowitz ISSCC'14: fp16 mult 1.1 + fp32 accumulate 0.9 pJ"},
      {"mac_fp8", 0.6, "assumption: between int8 mult 0.2 and fp16 add 0.4 pJ (Horowitz ISSCC'14)"},
      {"mac_int8", 0.3, "Horowitz ISSCC'14: int8 mult 0.2 + int32 add 0.1 pJ"},
      {"flop_fp32", 2.3, "Horowitz ISSCC'14: fp32 FMA (3.7 + 0.9 pJ) per 2 FLOP"},
      {"flop_fp16", 0.75, "Horowitz ISSCC'14: fp16 FMA (1.1 + 0.4 pJ) per 2 FLOP"},
      {"flop_bf16", 0.75, "Horowitz ISSCC'14: fp16 FMA (1.1 + 0.4 pJ) per 2 FLOP (bf16 taken as fp16)"},
      {"transcendental", 20.0, "assumption: ~5 fp32 multiplies (3.7 pJ each, Horowitz ISSCC'14) per special function"},
      {"register_per_byte", 0.75, "Horowitz ISSCC'14 keynote: register file access ~6 pJ per 64-bit word"},
      {"sram_8k_per_byte", 1.25, "Horowitz ISSCC'14: 8 KB SRAM, 64-bit read 10 pJ"},
      {"sram_32k_per_byte", 2.5, "Horowitz ISSCC'14: 32 KB SRAM, 64-bit read 20 pJ"},
      {"sram_1m_per_byte", 12.5, "Horowitz ISSCC'14: 1 MB SRAM, 64-bit read 100 pJ"},
      {"instruction_fetch", 25.0, "Horowitz ISSCC'14 keynote: I-cache access 25 pJ of a ~70 pJ instruction"},
      {"instruction_decode", 20.0, "assumption: half of the ~39 pJ control share of a 70 pJ instruction (Horowitz ISSCC'14)"},
      {"instruction_dispatch", 19.0, "assumption: the other half of the control share (Horowitz ISSCC'14)"},
      {"warp_instruction", 70.0, "assumption: one Horowitz ISSCC'14 instruction overhead (70 pJ) per warp instruction"},
      {"branch", 5.0, "assumption: predictor lookup ~ a small SRAM read (Horowitz ISSCC'14 8 KB: 10 pJ/64 bit, halved)"},
      {"branch_mispredict", 1000.0, "assumption: ~15 flushed pipeline slots x 70 pJ (Horowitz ISSCC'14 instruction)"},
      {"noc_hop_per_byte", 0.6, "assumption: ~0.075 pJ/bit per router hop + 1 mm link at 45 nm"},
  };
  return t;
}

std::optional<double> HardwareSpec::peak_flops(DType t, bool matrix) const {
  const auto& m = matrix ? matrix_peak_tflops : vector_peak_tflops;
  const auto it = m.find(to_string(t));
  if (it == m.end() || !(it->second.value > 0)) return std::nullopt;
  return it->second.value * 1e12;
}

double HardwareSpec::param(const std::string& key, double fallback) const {
  const auto it = params.find(key);
  return it == params.end() ? fallback : it->second.value;
}

double HardwareSpec::event_pj(const std::string& key) const {
  const auto it = events_pj.find(key);
  return it == events_pj.end() ? 0.0 : it->second.value;
}

Result<HardwareSpec> parse_hardware(const std::string& text, const std::string& file) {
  if (auto at = json_too_deep(text)) return make_error(Errc::parse, file + ": JSON nested too deep at byte " + std::to_string(*at));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return make_error(Errc::parse, file + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return make_error(Errc::parse, file + ": expected a JSON object");
  Reader r{j, file, std::nullopt};
  HardwareSpec hw;
  hw.file = file;
  hw.id = r.str("id");
  hw.name = r.str("name");
  hw.vendor = r.str("vendor", false);
  const std::string cls = r.str("class");
  if (r.err) return *r.err;
  if (cls == "cpu") hw.cls = HwClass::cpu;
  else if (cls == "gpu") hw.cls = HwClass::gpu;
  else if (cls == "tpu") hw.cls = HwClass::tpu;
  else if (cls == "kpu") hw.cls = HwClass::kpu;
  else return make_error(Errc::parse, file + ": field 'class': expected cpu, gpu, tpu or kpu, got '" + cls + "'");
  if (j.contains("aliases")) {
    if (!j.at("aliases").is_array()) return make_error(Errc::parse, file + ": field 'aliases': expected an array");
    for (const auto& a : j.at("aliases")) {
      if (!a.is_string()) return make_error(Errc::parse, file + ": field 'aliases': expected strings");
      hw.aliases.push_back(a.get<std::string>());
    }
  }
  hw.process_nm = r.sourced(j, "process_nm", "process_nm");
  hw.tdp_w = r.sourced(j, "tdp_w", "tdp_w");
  hw.idle_w = r.sourced(j, "idle_w", "idle_w");
  hw.compute_units = r.sourced(j, "compute_units", "compute_units");
  hw.clock_max_mhz = r.sourced(j, "clock_max_mhz", "clock_max_mhz");
  hw.clock_min_mhz = r.sourced(j, "clock_min_mhz", "clock_min_mhz");
  hw.voltage_max_v = r.sourced(j, "voltage_max_v", "voltage_max_v");
  hw.voltage_min_v = r.sourced(j, "voltage_min_v", "voltage_min_v");
  hw.launch_overhead_us = r.sourced(j, "launch_overhead_us", "launch_overhead_us");
  hw.matrix_peak_tflops = r.sourced_map(j, "matrix_peak_tflops", false);
  hw.vector_peak_tflops = r.sourced_map(j, "vector_peak_tflops", true);
  hw.params = r.sourced_map(j, "params", false);
  hw.events_pj = r.sourced_map(j, "events_pj", false);
  if (!j.contains("memory") || !j.at("memory").is_array() || j.at("memory").empty()) {
    r.fail("memory", "missing or empty (an array of levels, nearest first, off-chip memory last)");
  } else {
    std::size_t i = 0;
    for (const auto& m : j.at("memory")) {
      const std::string p = "memory[" + std::to_string(i++) + "]";
      MemoryLevel l;
      if (!m.is_object() || !m.contains("name") || !m.at("name").is_string()) {
        r.fail(p + ".name", "missing");
        break;
      }
      l.name = m.at("name").get<std::string>();
      l.size_bytes = r.sourced(m, "size_bytes", p + ".size_bytes");
      l.bandwidth_gbps = r.sourced(m, "bandwidth_gbps", p + ".bandwidth_gbps");
      l.energy_pj_per_byte = r.sourced(m, "energy_pj_per_byte", p + ".energy_pj_per_byte");
      hw.memory.push_back(l);
    }
  }
  if (j.contains("efficiency")) {
    const json& e = j.at("efficiency");
    hw.eff_matrix = r.sourced(e, "matrix", "efficiency.matrix", false);
    hw.eff_vector = r.sourced(e, "vector", "efficiency.vector", false);
    hw.eff_memory = r.sourced(e, "memory", "efficiency.memory", false);
  }
  if (r.err) return *r.err;
  auto def = [](Sourced& s, double v, const char* why) {
    if (!std::isfinite(s.value) || s.source.empty()) s = Sourced{v, why};
  };
  def(hw.eff_matrix, 0.8, "default assumption: 80% of the matrix peak on large GEMMs");
  def(hw.eff_vector, 0.7, "default assumption: 70% of the vector peak");
  def(hw.eff_memory, 0.85, "default assumption: 85% of the memory bandwidth");
  fill_default_events(hw);
  if (auto v = validate(hw); !v) return v.error();
  return hw;
}

Result<void> validate(const HardwareSpec& hw) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return make_error(Errc::parse, hw.file + ": field '" + field + "': " + why);
  };
  auto range = [&](const Sourced& s, const char* field, double lo, double hi) -> std::optional<Error> {
    if (!(s.value >= lo && s.value <= hi)) {
      return bad(field, "value " + fmtnum(s.value) + " outside the plausible range [" + fmtnum(lo) + ", " + fmtnum(hi) + "]");
    }
    return std::nullopt;
  };
  for (auto e : {range(hw.process_nm, "process_nm", 1, 250), range(hw.tdp_w, "tdp_w", 0.1, 5000),
                 range(hw.idle_w, "idle_w", 0, 5000), range(hw.compute_units, "compute_units", 1, 1e6),
                 range(hw.clock_max_mhz, "clock_max_mhz", 10, 10000), range(hw.clock_min_mhz, "clock_min_mhz", 1, 10000),
                 range(hw.voltage_max_v, "voltage_max_v", 0.3, 2.0), range(hw.voltage_min_v, "voltage_min_v", 0.2, 2.0),
                 range(hw.launch_overhead_us, "launch_overhead_us", 0, 1e4), range(hw.eff_matrix, "efficiency.matrix", 0.01, 1),
                 range(hw.eff_vector, "efficiency.vector", 0.01, 1), range(hw.eff_memory, "efficiency.memory", 0.01, 1)}) {
    if (e) return *e;
  }
  if (hw.idle_w.value >= hw.tdp_w.value) return bad("idle_w", "idle power " + fmtnum(hw.idle_w.value) + " W is not below tdp_w " + fmtnum(hw.tdp_w.value) + " W");
  if (hw.clock_min_mhz.value > hw.clock_max_mhz.value) return bad("clock_min_mhz", "above clock_max_mhz");
  if (hw.voltage_min_v.value > hw.voltage_max_v.value) return bad("voltage_min_v", "above voltage_max_v");
  if (hw.vector_peak_tflops.empty()) return bad("vector_peak_tflops", "needs at least one precision (fp32)");
  for (const auto* m : {&hw.matrix_peak_tflops, &hw.vector_peak_tflops}) {
    for (const auto& [k, v] : *m) {
      if (!parse_dtype(k)) return bad(k, "unknown precision '" + k + "' (fp32, tf32, fp16, bf16, fp8, int8)");
      if (!(v.value > 0 && v.value < 1e5)) return bad(k, "peak " + fmtnum(v.value) + " TFLOP/s is not plausible");
    }
  }
  double prev_bw = INFINITY;
  for (std::size_t i = 0; i < hw.memory.size(); ++i) {
    const MemoryLevel& l = hw.memory[i];
    const std::string p = "memory[" + std::to_string(i) + "] (" + l.name + ")";
    if (!(l.size_bytes.value > 0)) return bad(p + ".size_bytes", "must be positive");
    if (!(l.bandwidth_gbps.value > 0 && l.bandwidth_gbps.value < 1e7)) return bad(p + ".bandwidth_gbps", "not plausible");
    if (!(l.energy_pj_per_byte.value > 0 && l.energy_pj_per_byte.value < 1e4)) return bad(p + ".energy_pj_per_byte", "not plausible");
    if (l.bandwidth_gbps.value > prev_bw * 1.0001 && i + 1 == hw.memory.size()) {
      return bad(p + ".bandwidth_gbps", "off-chip memory faster than the level above it");
    }
    prev_bw = l.bandwidth_gbps.value;
  }
  for (const auto& [k, v] : hw.events_pj) {
    if (!(v.value >= 0 && v.value < 1e5)) return bad("events_pj." + k, "not plausible");
  }
  return {};
}

Result<HardwareSpec> load_hardware_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return make_error(text.error().code, "hardware file: " + text.error().message);
  return parse_hardware(*text, path);
}

Result<Catalog> load_catalog(const std::vector<std::string>& dirs) {
  Catalog c;
  c.dirs = dirs;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(d, ec)) {
      return make_error(Errc::not_found, "hardware directory " + d + " does not exist");
    }
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(d, ec)) {
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto hw = load_hardware_file(f);
      if (!hw) return hw.error();
      auto same = std::find_if(c.hw.begin(), c.hw.end(), [&](const HardwareSpec& h) { return h.id == hw->id; });
      if (same != c.hw.end()) *same = std::move(*hw);
      else c.hw.push_back(std::move(*hw));
    }
  }
  return c;
}

Result<const HardwareSpec*> Catalog::find(const std::string& name) const {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return s;
  };
  const std::string n = lower(name);
  std::vector<std::string> names;
  std::map<std::string, std::string> id_of;  // id or alias -> id
  for (const auto& h : hw) {
    if (lower(h.id) == n) return &h;
    for (const auto& a : h.aliases) {
      if (lower(a) == n) return &h;
      names.push_back(a);
      id_of[a] = h.id;
    }
    names.push_back(h.id);
    id_of[h.id] = h.id;
  }
  std::string msg = "unknown hardware '" + name + "'";
  std::vector<std::string> close;
  for (const auto& c : closest_names(name, names, 8)) {
    const std::string& id = id_of[c];
    if (std::find(close.begin(), close.end(), id) == close.end() && close.size() < 3) close.push_back(id);
  }
  if (!close.empty()) {
    msg += "; did you mean ";
    for (std::size_t i = 0; i < close.size(); ++i) msg += (i ? ", " : "") + close[i];
    msg += "?";
  }
  return make_error(Errc::not_found, msg + " (jouleprof estimate --list-hw)");
}

std::string default_data_dir() {
  if (const char* e = std::getenv("JOULEPROF_DATA_DIR"); e && *e) return e;
  std::error_code ec;
  if (const auto dir = self_exe_dir(); !dir.empty()) {
    const auto share = dir.parent_path() / "share" / "jouleprof";
    if (std::filesystem::is_directory(share / "hw", ec)) return share.string();
  }
  return JOULEPROF_ESTIMATE_DATA_DIR;
}

}  // namespace jouleprof::estimate
