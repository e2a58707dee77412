// Import speed of Kineto traces (issue 18): writes a Kineto-shaped trace of SIZE bytes (the events
// of a real PyTorch profiler trace repeated with fresh timestamps and ids, Kineto's own
// formatting), then reads it (1) with jouleprof's streaming importer and (2) with Python's `json`
// module, each in a child process, and reports MB/s, peak RSS and the ratio — same file, same run.
// `--file TRACE.json` reads an existing (real) trace instead of writing one.
//
//   jouleprof_kineto_bench [--size-gb 1.0] [--template TRACE.json[.gz]] [--file TRACE.json] [--dir DIR] [--json OUT]
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "jouleprof/replay/kernel_table.hpp"

namespace fs = std::filesystem;
using namespace jouleprof;

namespace {

std::string read_any(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

// The raw text of each event of the template's traceEvents array.
std::vector<std::string> template_events(const std::string& text) {
  std::vector<std::string> out;
  const auto at = text.find("\"traceEvents\"");
  if (at == std::string::npos) return out;
  std::size_t i = text.find('[', at) + 1;
  int depth = 0;
  bool str = false, esc = false;
  std::size_t start = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (str) {
      if (esc) esc = false;
      else if (c == '\\') esc = true;
      else if (c == '"') str = false;
      continue;
    }
    if (c == '"') str = true;
    else if (c == '{') {
      if (depth++ == 0) start = i;
    } else if (c == '}') {
      if (--depth == 0) out.push_back(text.substr(start, i + 1 - start));
    } else if (c == ']' && depth == 0) {
      break;
    }
  }
  return out;
}

// An event split around its "ts" value and its id values, to write fresh ones quickly.
struct Piece {
  std::vector<std::string> text;  // text[0] v0 text[1] v1 ... (values: 't' ts, 'e' id)
  std::vector<char> value;
};

Piece split(const std::string& ev) {
  static const std::regex re(R"(("ts": )([0-9.]+)|("External id": |"correlation": |"id": )([0-9]+))");
  Piece p;
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(ev.begin(), ev.end(), re); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    const bool ts = m[1].matched;
    const auto vpos = static_cast<std::size_t>(ts ? m.position(2) : m.position(4));
    const auto vlen = static_cast<std::size_t>(ts ? m.length(2) : m.length(4));
    p.text.push_back(ev.substr(last, vpos - last));
    p.value.push_back(ts ? 't' : 'e');
    last = vpos + vlen;
  }
  p.text.push_back(ev.substr(last));
  return p;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct ChildResult {
  double seconds = 0;
  long max_rss_kb = 0;
  int status = 0;
  std::string out;
};

// Runs fn in a child process; its peak RSS from wait4 (the parent's memory is not counted).
template <typename Fn>
ChildResult in_child(Fn fn) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return {};
  const double t0 = now_s();
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    const std::string s = fn();
    if (write(pipefd[1], s.data(), s.size()) < 0) _exit(3);
    _exit(0);
  }
  close(pipefd[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n = 0;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<std::size_t>(n));
  close(pipefd[0]);
  rusage ru{};
  wait4(pid, &r.status, 0, &ru);
  r.seconds = now_s() - t0;
  r.max_rss_kb = ru.ru_maxrss;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  double size_gb = 1.0;
  std::string tmpl = std::string(JOULEPROF_SOURCE_DIR) + "/tests/data/replay/llama_tiny_generate.json.gz";
  std::string dir = fs::temp_directory_path().string(), json_out, python = "python3", given;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--size-gb") size_gb = std::stod(next());
    else if (a == "--template") tmpl = next();
    else if (a == "--dir") dir = next();
    else if (a == "--json") json_out = next();
    else if (a == "--python") python = next();
    else if (a == "--keep") keep = true;
    else if (a == "--file") given = next();
    else {
      std::fprintf(stderr, "usage: %s [--size-gb G] [--template TRACE] [--file TRACE] [--dir DIR] [--json OUT] [--python PY] [--keep]\n",
                   argv[0]);
      return 2;
    }
  }
  const std::string text = given.empty() ? read_any(tmpl) : std::string();
  const auto events = template_events(text);
  if (given.empty() && events.empty()) {
    std::fprintf(stderr, "jouleprof_kineto_bench: no events in %s\n", tmpl.c_str());
    return 2;
  }
  std::vector<Piece> pieces;
  for (const auto& e : events) pieces.push_back(split(e));
  const std::string header = text.substr(0, text.find("\"traceEvents\"")) + "\"traceEvents\": [\n";
  const std::string path = given.empty() ? (fs::path(dir) / fmt::format("jouleprof-kineto-bench-{}.json", getpid())).string() : given;
  // 1. Write the trace.
  const double tw = now_s();
  const auto target = static_cast<uint64_t>(size_gb * 1e9);
  uint64_t written = 0, n_events = 0, n_kernels = 0;
  std::error_code size_error;
  if (!given.empty()) {
    written = fs::file_size(given, size_error);
    if (size_error) {
      std::fprintf(stderr, "jouleprof_kineto_bench: cannot read %s: %s\n", given.c_str(), size_error.message().c_str());
      return 2;
    }
    keep = true;  // not ours to remove
  } else {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) {
      std::fprintf(stderr, "jouleprof_kineto_bench: cannot write %s\n", path.c_str());
      return 1;
    }
    std::vector<char> iobuf(1 << 22);
    std::setvbuf(f, iobuf.data(), _IOFBF, iobuf.size());
    std::string out;
    written += std::fwrite(header.data(), 1, header.size(), f);
    uint64_t rep = 0;
    int64_t id_base = 0;
    while (written < target) {
      out.clear();
      const double ts_base = 1.0e12 + static_cast<double>(rep) * 1.0e5;
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        const Piece& p = pieces[i];
        out += (rep == 0 && i == 0) ? "  " : ",\n  ";
        for (std::size_t k = 0; k < p.value.size(); ++k) {
          out += p.text[k];
          if (p.value[k] == 't') out += fmt::format("{:.3f}", ts_base + static_cast<double>(i) * 0.5);
          else out += std::to_string(id_base + static_cast<int64_t>(i) + 1);
        }
        out += p.text.back();
        ++n_events;
        if (events[i].find("\"cat\": \"kernel\"") != std::string::npos) ++n_kernels;
      }
      written += std::fwrite(out.data(), 1, out.size(), f);
      ++rep;
      id_base += static_cast<int64_t>(pieces.size()) + 1;
    }
    const std::string tail = "\n  ],\n  \"traceName\": \"jouleprof_kineto_bench\"\n}\n";
    written += std::fwrite(tail.data(), 1, tail.size(), f);
    std::fclose(f);
  }
  const double write_s = now_s() - tw;
  const double mb = static_cast<double>(written) / 1e6;
  if (given.empty()) {
    std::fprintf(stderr, "wrote %s: %.0f MB, %llu events (%llu kernels) in %.1f s\n", path.c_str(), mb,
                 static_cast<unsigned long long>(n_events), static_cast<unsigned long long>(n_kernels), write_s);
  }
  // Page cache warm for both readers: read it once.
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    std::vector<char> b(1 << 22);
    while (std::fread(b.data(), 1, b.size(), f) > 0) {
    }
    std::fclose(f);
  }
  // 2. jouleprof's importer.
  auto ours = in_child([&] {
    auto classes = KernelClassifier::load(default_kernel_classes_path());
    auto tiers = KernelClassifier::load(default_replay_tiers_path());
    if (!classes || !tiers) return std::string("error: rules");
    KernelTableOptions o;
    o.classes = &*classes;
    o.tiers = &*tiers;
    const double t0 = now_s();
    auto t = read_kernel_table({path}, o);
    const double s = now_s() - t0;
    if (!t) return "error: " + t.error().message;
    return fmt::format("{} {} {}", s, t->kernels, t->events);
  });
  // 3. Python's json module, same file.
  auto py = in_child([&] {
    const std::string code =
        "import json,sys,time\nt=time.perf_counter()\nd=json.load(open(sys.argv[1]))\nn=len(d['traceEvents'])\n"
        "s=time.perf_counter()-t\nk=sum(1 for e in d['traceEvents'] if e.get('cat')=='kernel')\nprint(s, n, k)\n";
    std::string cmd = python + " -c \"$JP_CODE\" " + path;
    setenv("JP_CODE", code.c_str(), 1);
    std::FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char b[256];
    while (std::fgets(b, sizeof b, p) != nullptr) out += b;
    if (pclose(p) != 0) out = "error: python failed " + out;
    return out;
  });
  if (!keep) fs::remove(path);
  double our_s = 0, py_s = 0;
  unsigned long long our_kernels = 0, our_events = 0, py_events = 0, py_kernels = 0;
  if (std::sscanf(ours.out.c_str(), "%lf %llu %llu", &our_s, &our_kernels, &our_events) != 3) {
    std::fprintf(stderr, "jouleprof importer failed: %s\n", ours.out.c_str());
    return 1;
  }
  const bool py_ok = std::sscanf(py.out.c_str(), "%lf %llu %llu", &py_s, &py_events, &py_kernels) == 3;
  if (!given.empty()) {  // a given file: Python's count of its events and kernels is the reference
    n_events = py_events;
    n_kernels = py_ok ? py_kernels : our_kernels + 1;
  }
  nlohmann::json j = {{"schema", "jouleprof.bench.kineto_import"},
                      {"schema_version", 1},
                      {"file", given.empty() ? "generated" : given},
                      {"file_mb", mb},
                      {"events", n_events},
                      {"kernels", n_kernels},
                      {"jouleprof", {{"seconds", our_s}, {"mb_per_s", mb / our_s}, {"peak_rss_mb", static_cast<double>(ours.max_rss_kb) / 1024.0},
                                     {"kernels", our_kernels}, {"events", our_events}}}};
  if (py_ok) {
    j["python_json"] = {{"seconds", py_s}, {"mb_per_s", mb / py_s}, {"peak_rss_mb", static_cast<double>(py.max_rss_kb) / 1024.0}, {"events", py_events}};
    j["speedup"] = py_s / our_s;
  } else {
    j["python_json"] = {{"error", py.out}};
  }
  fmt::print("kineto import, {:.0f} MB file, {} events ({} kernels)\n", mb, n_events, n_kernels);
  fmt::print("  jouleprof     {:8.2f} s  {:8.0f} MB/s  peak RSS {:7.0f} MB  kernels {} {}\n", our_s, mb / our_s,
             static_cast<double>(ours.max_rss_kb) / 1024.0, our_kernels, our_kernels == n_kernels ? "(all)" : "(MISMATCH)");
  if (py_ok) {
    fmt::print("  python json   {:8.2f} s  {:8.0f} MB/s  peak RSS {:7.0f} MB\n", py_s, mb / py_s, static_cast<double>(py.max_rss_kb) / 1024.0);
    fmt::print("  ratio         {:8.1f}x faster than Python's json\n", py_s / our_s);
  } else {
    fmt::print("  python json   failed: {}\n", py.out);
  }
  if (!json_out.empty()) std::ofstream(json_out) << j.dump(1) << "\n";
  return our_kernels == n_kernels ? 0 : 1;
}
