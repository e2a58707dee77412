#include "jouleprof/sensors/meter_csv.hpp"

#include "jouleprof/core/parse.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/core/files.hpp"

#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

namespace jouleprof {
namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  for (auto& s : out) {
    const auto b = s.find_first_not_of(" \t\"");
    const auto e = s.find_last_not_of(" \t\"");
    s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  }
  return out;
}

// "YYYY-MM-DD HH:MM:SS[.fff]" (space or 'T'), or plain unix seconds.
bool parse_time(const std::string& s, bool utc, double& unix_s) {
  // Up to the year 2255: the time in nanoseconds fits 64 bits (1e300 would not).
  if (parse_finite_double(s, unix_s)) return unix_s > 0 && unix_s <= 9e9;
  int Y = 0, M = 0, D = 0, h = 0, m = 0;
  double sec = 0;
  char sep = 0;
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d:%lf%n", &Y, &M, &D, &sep, &h, &m, &sec, &consumed) != 7 ||
      static_cast<std::size_t>(consumed) != s.size() || (sep != ' ' && sep != 'T') || M < 1 || M > 12 ||
      D < 1 || D > 31 || h > 23 || m > 59 || sec < 0 || sec >= 61) {
    return false;
  }
  std::tm tm{};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = 0;
  tm.tm_isdst = -1;
  const std::time_t t = utc ? timegm(&tm) : std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return false;
  unix_s = static_cast<double>(t) + sec;
  return true;
}

}  // namespace

Result<MeterLog> parse_meter_csv(const std::string& text, const MeterCsvOptions& opt,
                                 const std::string& source) {
  std::istringstream in(text);
  std::string line;
  int no = 0;
  auto fail = [&](const std::string& what) {
    return make_error(Errc::parse, clean_label(source + " line " + std::to_string(no) + ": " + what));
  };
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    header = split_csv(line);
  }
  if (header.empty()) return make_error(Errc::parse, source + ": empty file (expected a header line)");
  int tcol = -1, pcol = -1;
  std::string want = opt.power_column;
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "time" || header[i] == "timestamp") tcol = static_cast<int>(i);
  }
  const char* defaults[] = {"sum", "power_w", "watts", "power"};
  for (std::size_t i = 0; i < header.size() && pcol < 0; ++i) {
    if (!want.empty() && header[i] == want) pcol = static_cast<int>(i);
  }
  if (want.empty()) {
    for (const char* d : defaults) {
      for (std::size_t i = 0; i < header.size() && pcol < 0; ++i) {
        if (header[i] == d) {
          pcol = static_cast<int>(i);
          want = d;
        }
      }
    }
  }
  if (tcol < 0) return fail("no 'time' or 'timestamp' column in the header");
  if (pcol < 0) {
    return fail(want.empty() ? "no power column (sum, power_w, watts, power); choose one with --meter-column"
                             : "no column named '" + want + "'");
  }
  MeterLog log;
  log.column = clean_label(header[static_cast<std::size_t>(pcol)]);
  while (std::getline(in, line)) {
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    const auto f = split_csv(line);
    if (f.size() != header.size()) {
      return fail("expected " + std::to_string(header.size()) + " fields, found " + std::to_string(f.size()));
    }
    double t = 0, w = 0;
    if (!parse_time(f[static_cast<std::size_t>(tcol)], opt.utc, t)) {
      return fail("bad time '" + f[static_cast<std::size_t>(tcol)] + "'");
    }
    if (!parse_finite_double(f[static_cast<std::size_t>(pcol)], w) || w < 0) {
      return fail("bad power '" + f[static_cast<std::size_t>(pcol)] + "'");
    }
    t += opt.clock_offset_s;
    if (!(t > 0 && t <= 9e9)) return fail("time with --meter-offset is outside 1970 to the year 2255");
    if (!log.samples.empty() && t < log.samples.back().t_s) return fail("time goes backwards");
    log.samples.push_back({t, w});
  }
  if (log.samples.empty()) return make_error(Errc::parse, source + ": no samples after the header");
  return log;
}

Result<MeterLog> load_meter_csv(const std::string& path, const MeterCsvOptions& opt) {
  auto text = read_text_file(path);
  if (!text) return make_error(text.error().code, "meter log: " + text.error().message);
  return parse_meter_csv(*text, opt, path);
}

}  // namespace jouleprof
