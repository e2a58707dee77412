// Stand-in for a CUDA program under `jouleprof trace` in CI (no GPU): writes the per-process trace
// file the injection library would, with kernels of two classes alternating every 100 ms on the
// wall clock while it sleeps through them.
//   jouleprof_fake_traced SECONDS [--no-end] [--corrupt] [--layers N] [--period-us P] [--no-sleep]
//   --no-end   exit without the End record (as a killed process leaves its file)
//   --corrupt  append a damaged record after the good ones
//   --layers N each kernel also inside an NVTX range model.layers.K.{self_attn|mlp}, K cycling
//              over N layers (as jouleprof.torch.annotate gives a Hugging Face model)
//   --period-us P  a kernel every P microseconds (default 100000), busy 90% of it
//   --records-stopped  the note the injection library writes when another CUPTI client took its
//              records (format.hpp kRecordsStoppedNote)
//   --no-sleep     write the file at once instead of sleeping through SECONDS (for timing
//              the processing of long runs: bench/trace)
// Under `trace --sample` ($JOULEPROF_TRACE_SAMPLE): kernels only in the duty cycle's on-windows
// (format.hpp DutyCycle, the injection library's schedule) and the switch log beside the file.
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "jouleprof/trace/format.hpp"

using namespace jouleprof::trace_format;

namespace {

std::vector<char> buf;

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

void add(RecordType t, const void* p, uint32_t n) {
  RecordHeader h{static_cast<uint16_t>(t), 0, n};
  buf.insert(buf.end(), reinterpret_cast<const char*>(&h), reinterpret_cast<const char*>(&h) + sizeof(h));
  buf.insert(buf.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
}

void add_string(uint32_t id, const std::string& s) {
  std::vector<char> p(4 + s.size());
  std::memcpy(p.data(), &id, 4);
  std::memcpy(p.data() + 4, s.data(), s.size());
  add(RecordType::string, p.data(), static_cast<uint32_t>(p.size()));
}

DutyCycle sample_cycle() {
  const char* p = std::getenv(kSampleEnv);
  const char* ms = std::getenv(kSamplePeriodEnv);
  if (p == nullptr) return {};
  DutyCycle c;
  c.period_ns = static_cast<int64_t>((ms != nullptr ? std::atof(ms) : 1000.0) * 1e6);
  c.on_ns = static_cast<int64_t>(static_cast<double>(c.period_ns) * std::atof(p) / 100);
  return c;
}

// The switches between t0 and t1, as the injection library logs them (on at start when on).
void write_sample_log(const char* dir, const DutyCycle& c, int64_t t0, int64_t t1) {
  const std::string path = std::string(dir) + "/" + kSampleFilePrefix + std::to_string(getpid()) + kSampleFileSuffix;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  std::fprintf(f, "%s on_ns=%lld period_ns=%lld\n", kSampleFileMagic, static_cast<long long>(c.on_ns), static_cast<long long>(c.period_ns));
  bool on = c.on_at(t0);
  if (on) std::fprintf(f, "on %lld\n", static_cast<long long>(t0));
  for (int64_t t = c.next_switch(t0); t < t1; t = c.next_switch(t)) {
    on = !on;
    std::fprintf(f, "%s %lld\n", on ? "on" : "off", static_cast<long long>(t));
  }
  if (on) std::fprintf(f, "off %lld\n", static_cast<long long>(t1));
  std::fclose(f);
}

// A program that paused itself (jouleprof_trace_pause) from t0 to t1: the log the injection library
// writes at its first pause in a fully traced process.
void write_pause_log(const char* dir, int64_t start, int64_t t0, int64_t t1) {
  const std::string path = std::string(dir) + "/" + kSampleFilePrefix + std::to_string(getpid()) + kSampleFileSuffix;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  std::fprintf(f, "%s on_ns=0 period_ns=0\non %lld\npause %lld\noff %lld took_ns=1000\n# flush took_ns=2000\non %lld took_ns=1000\nresume %lld\n",
               kSampleFileMagic, static_cast<long long>(start), static_cast<long long>(t0), static_cast<long long>(t0),
               static_cast<long long>(t1), static_cast<long long>(t1));
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  const char* dir = std::getenv(kDirEnv);
  if (dir == nullptr || argc < 2) return 2;
  const double seconds = std::atof(argv[1]);
  bool end = true, corrupt = false, stopped = false;
  int layers = 0;
  double paused_first_s = 0;  // --paused-first S: the program paused its trace for its first S seconds
  int64_t period_ns = 100000000;
  bool sleep = true;
  for (int i = 2; i < argc; ++i) {
    sleep &= std::strcmp(argv[i], "--no-sleep") != 0;
    if (std::strcmp(argv[i], "--period-us") == 0 && i + 1 < argc) period_ns = std::max<int64_t>(1000, std::atoll(argv[++i]) * 1000);
    end &= std::strcmp(argv[i], "--no-end") != 0;
    corrupt |= std::strcmp(argv[i], "--corrupt") == 0;
    stopped |= std::strcmp(argv[i], "--records-stopped") == 0;
    if (std::strcmp(argv[i], "--layers") == 0 && i + 1 < argc) layers = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--paused-first") == 0 && i + 1 < argc) paused_first_s = std::atof(argv[++i]);
  }
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kVersion;
  h.header_size = sizeof(h);
  h.pid = getpid();
  h.ppid = getppid();
  h.start_realtime_ns = now_ns();
  buf.insert(buf.end(), reinterpret_cast<const char*>(&h), reinterpret_cast<const char*>(&h) + sizeof(h));
  // CUPTI's clock is CLOCK_REALTIME here: offset 0.
  ClockRecord c{static_cast<uint64_t>(h.start_realtime_ns), h.start_realtime_ns, 100, clock_start, 0};
  add(RecordType::clock, &c, sizeof(c));
  add_string(1, "_Z11gemm_kernelPfS_i");  // mangled, as CUPTI reports it
  add_string(2, "stream_copy_kernel");
  add_string(3, "layer.0");
  for (int l = 0; l < layers; ++l) {
    add_string(static_cast<uint32_t>(10 + 2 * l), "model.layers." + std::to_string(l) + ".self_attn");
    add_string(static_cast<uint32_t>(11 + 2 * l), "model.layers." + std::to_string(l) + ".mlp");
  }
  const int64_t t0 = now_ns();
  const DutyCycle cycle = sample_cycle();
  if (cycle.active()) write_sample_log(dir, cycle, t0, t0 + static_cast<int64_t>(seconds * 1e9));
  const int64_t resumed = t0 + static_cast<int64_t>(paused_first_s * 1e9);
  if (paused_first_s > 0) write_pause_log(dir, h.start_realtime_ns, t0, resumed);
  uint32_t corr = 1;
  for (int64_t t = t0; t < t0 + static_cast<int64_t>(seconds * 1e9); t += period_ns, ++corr) {
    if (cycle.active() && !cycle.on_at(t)) continue;  // records off: the launch is not seen
    if (t < resumed) continue;                         // paused
    KernelRecord k{};
    k.start_ns = static_cast<uint64_t>(t);
    k.end_ns = static_cast<uint64_t>(t + period_ns * 9 / 10);
    k.stream = 7;
    k.correlation = corr;
    k.grid_x = 132;
    k.block_x = 256;
    k.registers = 64;
    k.name_id = corr % 2 == 1 ? 1 : 2;
    add(RecordType::kernel, &k, sizeof(k));
    ApiRecord a{static_cast<uint64_t>(t - 1000), static_cast<uint64_t>(t), corr, 42, 211, 0};
    add(RecordType::api, &a, sizeof(a));
    if (layers > 0) {  // the launch inside its module's range (push before, pop after)
      const auto layer = static_cast<uint32_t>((corr - 1) / 2 % static_cast<uint32_t>(layers));
      const uint32_t name = 10 + 2 * layer + (corr % 2 == 1 ? 1 : 0);  // GEMM in the MLP, copy in attention
      MarkerRecord push{static_cast<uint64_t>(t - 3000), 42, 100 + corr, marker_start, name, 0, 2, 0};
      MarkerRecord pop{static_cast<uint64_t>(t - 500), 42, 100 + corr, marker_end, 0, 0, 2, 0};
      add(RecordType::marker, &push, sizeof(push));
      add(RecordType::marker, &pop, sizeof(pop));
    }
  }
  MarkerRecord start{static_cast<uint64_t>(t0 - 5000), 42, 9, marker_start, 3, 0, 2, 0};
  MarkerRecord stop{static_cast<uint64_t>(t0 + static_cast<int64_t>(seconds * 1e9)), 42, 9, marker_end, 0, 0, 2, 0};
  if (layers == 0) {  // one range around everything
    add(RecordType::marker, &start, sizeof(start));
    add(RecordType::marker, &stop, sizeof(stop));
  }
  if (sleep) usleep(static_cast<useconds_t>(seconds * 1e6));
  if (stopped) add(RecordType::note, kRecordsStoppedNote, static_cast<uint32_t>(std::strlen(kRecordsStoppedNote)));
  ClockRecord ce{static_cast<uint64_t>(now_ns()), now_ns(), 100, clock_end, 0};
  add(RecordType::clock, &ce, sizeof(ce));
  if (corrupt) {
    RecordHeader bad{999, 0, 12};
    buf.insert(buf.end(), reinterpret_cast<const char*>(&bad), reinterpret_cast<const char*>(&bad) + sizeof(bad));
  } else if (end) {
    EndRecord e{corr - 1, 0, 0, 0};
    add(RecordType::end, &e, sizeof(e));
  }
  const std::string path = std::string(dir) + "/" + kFilePrefix + std::to_string(getpid()) + kFileSuffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 3;
  std::fwrite(buf.data(), 1, buf.size(), f);
  std::fclose(f);
  return 0;
}
