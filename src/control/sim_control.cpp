// The simulated control backend (`--device sim`): settings of the in-process simulated GPUs,
// which obey them (sim_operating_point). They die with the process, so no journal is needed.
#include <fstream>
#include <sstream>

#include "control_backends.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/sensors/sim_model.hpp"
#include "sim/sim_gpu.hpp"

namespace jouleprof::control {
namespace {

class SimControlBackend final : public ControlBackend {
 public:
  explicit SimControlBackend(SimConfig cfg) : cfg_(std::move(cfg)) {}
  std::string name() const override { return "sim"; }
  std::string library() const override { return ""; }
  bool durable() const override { return false; }

  Result<std::vector<GpuCapabilities>> discover(const std::vector<std::string>& ids) override {
    std::vector<GpuCapabilities> all;
    for (int i = 0; i < cfg_.gpus; ++i) {
      GpuCapabilities c;
      c.index = i;
      c.uuid = sim_gpu_uuid(i);
      c.name = cfg_.name;
      c.mem_clocks_mhz = sim_supported_mem_clocks();
      for (unsigned m : c.mem_clocks_mhz) c.gpu_clocks_mhz[m] = sim_supported_gpu_clocks(m);
      c.power_limit_min_mw = 200000;
      c.power_limit_max_mw = c.power_limit_default_mw = static_cast<unsigned>(cfg_.tdp_w * 1000);
      c.locked_clocks = c.mem_locked_clocks = c.power_limit = true;
      c.app_clocks = false;
      all.push_back(c);
    }
    return select_gpus(all, ids);
  }

  Result<GpuControlState> read_state(const std::string& uuid) override {
    auto i = index_of(uuid);
    if (!i) return i.error();
    const SimControl c = sim_device_control(*i);
    GpuControlState st;
    if (c.sm_clock_lock_mhz) st.gpu_locked = ClockRange{static_cast<unsigned>(*c.sm_clock_lock_mhz), static_cast<unsigned>(*c.sm_clock_lock_mhz)};
    if (c.mem_clock_lock_mhz) st.mem_locked = ClockRange{static_cast<unsigned>(*c.mem_clock_lock_mhz), static_cast<unsigned>(*c.mem_clock_lock_mhz)};
    st.power_limit_mw = static_cast<unsigned>(c.power_limit_w.value_or(cfg_.tdp_w) * 1000);
    st.persistence = true;
    return st;
  }

  std::string permission(const std::string&) override { return ""; }

  Result<void> apply(const std::string& uuid, const Setting& s) override {
    auto i = index_of(uuid);
    if (!i) return i.error();
    SimControl c = sim_device_control(*i);
    if (s.gpu_clock_mhz) c.sm_clock_lock_mhz = *s.gpu_clock_mhz;
    if (s.mem_clock_mhz) c.mem_clock_lock_mhz = *s.mem_clock_mhz;
    if (s.power_limit_w) c.power_limit_w = *s.power_limit_w;
    set_sim_device_control(*i, c);
    return {};
  }

  Result<void> restore(const std::string& uuid, const GpuControlState& o) override {
    auto i = index_of(uuid);
    if (!i) return i.error();
    SimControl c;
    if (o.gpu_locked) c.sm_clock_lock_mhz = o.gpu_locked->max_mhz;
    if (o.mem_locked) c.mem_clock_lock_mhz = o.mem_locked->max_mhz;
    if (o.power_limit_mw && *o.power_limit_mw != static_cast<unsigned>(cfg_.tdp_w * 1000)) {
      c.power_limit_w = *o.power_limit_mw / 1000.0;
    }
    set_sim_device_control(*i, c);
    return {};
  }

  Result<std::pair<unsigned, unsigned>> current_clocks(const std::string& uuid) override {
    auto i = index_of(uuid);
    if (!i) return i.error();
    const SimControl c = sim_device_control(*i);
    // What a busy simulated GPU would run at (an idle one reports its idle clock instead).
    const SimOperatingPoint op = sim_operating_point(cfg_, c, cfg_.tdp_w, 0.9);
    return std::pair<unsigned, unsigned>{static_cast<unsigned>(op.clock_mhz), static_cast<unsigned>(op.mem_clock_mhz)};
  }

 private:
  Result<int> index_of(const std::string& uuid) const {
    for (int i = 0; i < cfg_.gpus; ++i) {
      if (sim_gpu_uuid(i) == uuid) return i;
    }
    return make_error(Errc::not_found, "simulated GPU " + uuid + " not found");
  }
  SimConfig cfg_;
};

}  // namespace

Result<std::unique_ptr<ControlBackend>> open_sim_control(const std::string& scenario) {
  SimConfig cfg;
  if (!scenario.empty()) {
    auto text = read_text_file(scenario);  // bounded; a folder or device refused (core/files)
    if (!text) return text.error();
    auto parsed = parse_sim_scenario(*text, cfg);
    if (!parsed) return make_error(Errc::parse, scenario + ": " + parsed.error().message);
    cfg = *parsed;
  }
  return std::unique_ptr<ControlBackend>(std::make_unique<SimControlBackend>(cfg));
}

}  // namespace jouleprof::control
