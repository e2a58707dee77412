// Finding the charting library, and running Node.js / rsvg-convert / Chromium for static figures.
#include "jouleprof/report/assets.hpp"
#include "jouleprof/core/self_exe.hpp"

#include "jouleprof/core/files.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

#ifdef JOULEPROF_HAVE_EMBEDDED_ECHARTS
extern "C" const char jp_echarts_begin[];
extern "C" const char jp_echarts_end[];
#endif

namespace jouleprof {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  auto add_dir = [&](const fs::path& d) {
    out.push_back(d / "echarts.min.js");
    out.push_back(d / "node_modules" / "echarts" / "dist" / "echarts.min.js");
  };
  if (const char* e = std::getenv("JOULEPROF_WEB_DIR"); e != nullptr && *e != '\0') add_dir(e);
  if (const fs::path dir = self_exe_dir(); !dir.empty()) add_dir(dir.parent_path() / "share" / "jouleprof" / "web");
#ifdef JOULEPROF_WEB_SOURCE_DIR
  add_dir(JOULEPROF_WEB_SOURCE_DIR);
#endif
  return out;
}

// Runs argv with stdout to `out_path`, stderr to `err_path`; returns the exit status.
Result<int> run_process(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return make_error(Errc::unavailable, "cannot run " + argv[0] + " (not installed?)");
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return make_error(Errc::io, "waiting for " + argv[0]);
  if (WIFEXITED(status)) {
    // posix_spawnp reports a missing program as exit 127 from the child.
    if (WEXITSTATUS(status) == 127) return make_error(Errc::unavailable, "cannot run " + argv[0] + " (not installed?)");
    return WEXITSTATUS(status);
  }
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "jouleprof-plot-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

std::string first_line(const std::string& s) {
  std::string t = s.substr(0, s.find('\n'));
  return t.size() > 300 ? t.substr(0, 300) : t;
}

// Server-side rendering with the library's SSR mode: no DOM, no canvas, SVG string out.
constexpr const char* kRenderJs = R"js(
const fs = require('fs');
const echarts = require(process.argv[2]);
const spec = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const w = Number(process.argv[4]), h = Number(process.argv[5]);
const chart = echarts.init(null, null, {renderer: 'svg', ssr: true, width: w, height: h});
spec.animation = false;
if (!spec.backgroundColor) spec.backgroundColor = '#ffffff';
chart.setOption(spec);
process.stdout.write(chart.renderToSVGString());
chart.dispose();
)js";

}  // namespace

Result<std::string> charting_library_js() {
  static const Result<std::string> cached = []() -> Result<std::string> {
#ifdef JOULEPROF_HAVE_EMBEDDED_ECHARTS
    const char* dir = std::getenv("JOULEPROF_WEB_DIR");
    if (dir == nullptr || *dir == '\0') {
      return std::string(jp_echarts_begin, static_cast<std::size_t>(jp_echarts_end - jp_echarts_begin));
    }
#endif
    std::string searched;
    for (const fs::path& p : candidates()) {
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) return slurp(p);
      searched += (searched.empty() ? "" : ", ") + p.string();
    }
    return make_error(Errc::unavailable, "the charting library (echarts.min.js) is not installed: run scripts/install-deps.sh "
                                         "or set JOULEPROF_WEB_DIR (searched " + searched + ")");
  }();
  return cached;
}

std::string charting_library_name() {
  auto js = charting_library_js();
  if (!js) return "Apache ECharts (not installed)";
  // The UMD bundle ends with `t.version="X.Y.Z"`.
  const auto p = js->rfind(".version=\"");
  if (p == std::string::npos) return "Apache ECharts";
  const auto q = js->find('"', p + 10);
  return "Apache ECharts " + js->substr(p + 10, q == std::string::npos ? 0 : std::min<std::size_t>(q - p - 10, 20));
}

Result<std::string> render_svg(const ChartSpec& spec, int width, int height) {
  if (spec.option_json.empty()) return make_error(Errc::invalid_argument, "chart '" + spec.id + "' has no data for these runs");
  auto js = charting_library_js();
  if (!js) return js.error();
  TempDir tmp;
  if (tmp.path.empty()) return make_error(Errc::io, "cannot create a temporary folder");
  const fs::path lib = tmp.path / "echarts.min.js", spec_path = tmp.path / "spec.json", script = tmp.path / "render.js";
  for (const auto& [file, text] : {std::pair<fs::path, std::string_view>{lib, *js}, {spec_path, spec.option_json}, {script, kRenderJs}}) {
    if (auto w = write_file_atomic(file.string(), text); !w) return w.error();
  }
  const char* node_env = std::getenv("JOULEPROF_NODE");
  const std::string node = node_env != nullptr && *node_env != '\0' ? node_env : "node";
  const std::string out = (tmp.path / "out.svg").string(), err = (tmp.path / "err.txt").string();
  auto rc = run_process({node, script.string(), lib.string(), spec_path.string(), std::to_string(width), std::to_string(height)}, out,
                        err);
  if (!rc) return make_error(Errc::unavailable, rc.error().message + ": static figures need Node.js ($JOULEPROF_NODE or node on PATH)");
  if (*rc != 0) return make_error(Errc::internal, "rendering " + spec.id + " failed: " + first_line(slurp(err)));
  std::string svg = slurp(out);
  if (svg.rfind("<svg", 0) != 0) return make_error(Errc::internal, "rendering " + spec.id + " gave no SVG");
  return svg;
}

Result<void> svg_to_png(const std::string& svg_path, const std::string& png_path, int width, int height) {
  TempDir tmp;
  const std::string log = (tmp.path / "log.txt").string();
  auto rc = run_process({"rsvg-convert", "-w", std::to_string(width), "-h", std::to_string(height), "-b", "white", "-o", png_path,
                         svg_path},
                        "/dev/null", log);
  if (rc && *rc == 0) return {};
  // Fallback: a headless browser screenshot of the SVG.
  const std::string profile = (tmp.path / "profile").string();
  for (const char* browser : {"chromium", "chromium-browser", "google-chrome"}) {
    auto b = run_process({browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                          "--user-data-dir=" + profile, "--screenshot=" + png_path,
                          "--window-size=" + std::to_string(width) + "," + std::to_string(height),
                          "file://" + fs::absolute(svg_path).string()},
                         "/dev/null", log);
    if (b && *b == 0 && fs::exists(png_path)) return {};
  }
  return make_error(Errc::unavailable, "PNG output needs rsvg-convert (Debian librsvg2-bin) or chromium");
}

}  // namespace jouleprof
