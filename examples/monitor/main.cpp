// Measures two windows of a (pretend) inference step with the Monitor API and records the
// measurement in a run store. Usage: monitor_example [sim|nvml|auto] [STORE.db]
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "jouleprof/sampler/monitor.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/version.hpp"

int main(int argc, char** argv) {
  jouleprof::MonitorOptions opt;
  opt.gpus.backend = argc > 1 ? argv[1] : "sim";
  auto created = jouleprof::Monitor::create(opt);
  if (!created) return jouleprof::report_error(created.error());
  jouleprof::Monitor& mon = **created;
  {
    auto w = mon.scope("prefill");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  const auto decode = mon.begin("decode");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  mon.end(decode);
  mon.count(decode, "tokens", 64);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // samples past the last edge
  jouleprof::Measurement m = mon.finish();
  std::printf("jouleprof %s, backend %s%s\n", jouleprof::kVersion, m.backend.c_str(), m.simulated ? " [simulated]" : "");
  for (const auto& w : m.windows) {
    std::printf("%-8s %7.3f s %9.3f J (%s)\n", w.name.c_str(), w.duration_s(), w.gpu_energy_j,
                w.gpus.empty() ? "-" : w.gpus.front().method.c_str());
  }
  if (argc > 2) {
    jouleprof::StoreOptions so;
    so.db_path = argv[2];
    so.source = "monitor_example";
    auto id = jouleprof::record_measurement(m, so);
    if (!id) return jouleprof::report_error(id.error());
    std::printf("stored as run %lld in %s\n", static_cast<long long>(*id), argv[2]);
  }
  return 0;
}
