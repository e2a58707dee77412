// Scenario files for the simulated GPU and the fake libnvidia-ml: one "key value..." per line,
// '#' starts a comment. Documented in docs/simulated-gpu.md.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "jouleprof/core/parse.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/sensors/sim_model.hpp"

namespace jouleprof {
namespace {

bool read_number(std::istringstream& in, double& out) {
  std::string tok;
  return static_cast<bool>(in >> tok) && parse_finite_double(tok, out);
}

Error line_error(int line, const std::string& what) {
  return make_error(Errc::parse, clean_label("scenario line " + std::to_string(line) + ": " + what));
}

}  // namespace

Result<SimConfig> parse_sim_scenario(const std::string& text, SimConfig cfg) {
  cfg.initial.high_w = cfg.idle_w;
  std::istringstream lines(text);
  std::string raw;
  int no = 0;
  while (std::getline(lines, raw)) {
    ++no;
    const auto hash = raw.find('#');
    if (hash != std::string::npos) raw.resize(hash);
    std::istringstream in(raw);
    std::string key;
    if (!(in >> key)) continue;
    double x = 0;
    auto need = [&](double& v) { return read_number(in, v); };
    auto rest = [&]() {
      std::string r;
      std::getline(in, r);
      const auto b = r.find_first_not_of(" \t");
      return b == std::string::npos ? std::string() : r.substr(b);
    };
    if (key == "gpus") {
      if (!need(x) || x < 1 || x > 64 || x != std::floor(x)) {
        return line_error(no, "gpus needs an integer 1..64");
      }
      cfg.gpus = static_cast<int>(x);
    } else if (key == "name") {
      cfg.name = clean_label(rest());
      if (cfg.name.empty()) return line_error(no, "name needs a value");
    } else if (key == "driver") {
      cfg.driver_version = rest();
      if (cfg.driver_version.empty()) return line_error(no, "driver needs a value");
    } else if (key == "idle_w" || key == "tdp_w" || key == "noise_w" || key == "sample_period_s" ||
               key == "sample_window_s" || key == "update_period_s" || key == "instant_window_s" ||
               key == "average_window_s" || key == "fail_after_s" || key == "buffer_samples" ||
               key == "energy_start_mj") {
      if (!need(x)) return line_error(no, key + " needs a number");
      const bool positive_only = key != "fail_after_s" && key != "noise_w" && key != "idle_w";
      if ((positive_only && x <= 0) || x < 0 || x > 1e15) {
        return line_error(no, key + " out of range");
      }
      if (key == "idle_w") {
        cfg.idle_w = x;
        cfg.initial.high_w = x;  // the GPU idles until the first 'at' segment
      } else if (key == "tdp_w") {
        cfg.tdp_w = x;
      } else if (key == "noise_w") {
        cfg.noise_w = x;
      } else if (key == "sample_period_s") {
        cfg.sample_period_s = x;
      } else if (key == "sample_window_s") {
        cfg.sample_window_s = x;
      } else if (key == "update_period_s") {
        cfg.update_period_s = x;
      } else if (key == "instant_window_s") {
        cfg.instant_window_s = x;
      } else if (key == "average_window_s") {
        cfg.average_window_s = x;
      } else if (key == "fail_after_s") {
        cfg.fail_after_s = x;
      } else if (key == "buffer_samples") {
        if (x > 100000 || x != std::floor(x)) return line_error(no, "buffer_samples out of range");
        cfg.buffer_samples = static_cast<unsigned>(x);
      } else {
        cfg.energy_start_mj = static_cast<uint64_t>(x);
      }
    } else if (key == "at") {
      PowerSchedule::Segment s;
      std::string kind;
      if (!need(s.t_start) || !(in >> kind)) {
        return line_error(no, "expected: at T constant W | at T square ON_S OFF_S HIGH_W LOW_W");
      }
      if (kind == "constant") {
        if (!need(s.high_w) || s.high_w < 0) return line_error(no, "constant needs watts >= 0");
      } else if (kind == "square") {
        s.square = true;
        if (!need(s.on_s) || !need(s.off_s) || !need(s.high_w) ||
            !need(s.low_w) || s.on_s <= 0 || s.off_s <= 0 || s.high_w < 0 || s.low_w < 0) {
          return line_error(no, "square needs ON_S>0 OFF_S>0 HIGH_W>=0 LOW_W>=0");
        }
      } else {
        return line_error(no, "unknown segment kind '" + kind + "' (constant, square)");
      }
      if (!cfg.schedule.empty() && s.t_start < cfg.schedule.back().t_start) {
        return line_error(no, "segments must be in time order");
      }
      cfg.schedule.push_back(s);
    } else if (key == "unsupported") {
      std::string f;
      while (in >> f) cfg.unsupported.push_back(f);
    } else if (key == "mig") {
      if (!need(x)) return line_error(no, "mig needs 0 or 1");
      cfg.mig_enabled = x != 0;
    } else if (key == "workload_time_scale") {
      if (!need(x) || x <= 0 || x > 100) return line_error(no, "workload_time_scale needs a number in (0, 100]");
      cfg.workload_time_scale = x;
    } else if (key == "application") {
      // application KEY=VALUE[,KEY=VALUE...] [power_scale X] [time_scale Y] [compute_share S]
      SimApplication app;
      std::string match;
      if (!(in >> match)) return line_error(no, "application needs KEY=VALUE[,KEY=VALUE...]");
      std::istringstream pairs(match);
      std::string kv;
      while (std::getline(pairs, kv, ',')) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
          return line_error(no, "application needs KEY=VALUE pairs, got '" + kv + "'");
        }
        app.match.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      }
      std::string what;
      while (in >> what) {
        double v = 0;
        if (!read_number(in, v)) return line_error(no, "application: " + what + " needs a number");
        if (what == "power_scale" && v >= 0 && v <= 20) {
          app.power_scale = v;
        } else if (what == "time_scale" && v > 0 && v <= 100) {
          app.time_scale = v;
        } else if (what == "compute_share" && v >= 0 && v <= 1) {
          app.compute_share = v;
        } else if (what != "power_scale" && what != "time_scale" && what != "compute_share") {
          return line_error(no, "application: unknown '" + what + "' (power_scale, time_scale, compute_share)");
        } else {
          return line_error(no, "application: " + what + " out of range (power_scale 0..20, time_scale (0, 100], "
                                                         "compute_share 0..1)");
        }
      }
      if (cfg.applications.size() >= 1000) return line_error(no, "more than 1000 applications");
      cfg.applications.push_back(std::move(app));
    } else if (key == "load_file") {
      cfg.load_file = rest();
    } else {
      return line_error(no, "unknown key '" + key + "'");
    }
    std::string extra;
    if (key != "name" && key != "driver" && key != "load_file" && key != "unsupported" && key != "application" &&
        (in >> extra)) {
      return line_error(no, "unexpected '" + extra + "'");
    }
  }
  return cfg;
}

}  // namespace jouleprof
