#include "jouleprof/measure/markers.hpp"

#include "jouleprof/core/parse.hpp"
#include "jouleprof/core/text.hpp"

#include <cmath>
#include <sstream>
#include <vector>

namespace jouleprof {
namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || c == ':' || c == '/';
    if (!ok) return false;
  }
  return true;
}

Error bad(const std::string& why) { return make_error(Errc::parse, "bad marker: " + why); }

}  // namespace

Result<std::optional<Marker>> parse_marker_line(const std::string& raw) {
  std::string line = raw;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::istringstream in(line);
  std::vector<std::string> tok;
  for (std::string t; in >> t;) tok.push_back(t);
  if (tok.empty() || tok[0][0] == '#') return std::optional<Marker>{};
  Marker m;
  if (tok[0] == "begin" || tok[0] == "end") {
    m.kind = tok[0] == "begin" ? Marker::Kind::begin : Marker::Kind::end;
    if (tok.size() < 2 || tok.size() > 3) return bad("expected '" + tok[0] + " NAME [t=UNIX_SECONDS]'");
    if (!valid_name(tok[1])) return bad("window name '" + clean_label(tok[1]) + "' (letters, digits, _-.:/; at most 128)");
    m.name = tok[1];
    if (tok.size() == 3) {
      double t = 0;
      // Up to the year 2255: the time in nanoseconds fits 64 bits (t=1e300 would not).
      if (tok[2].rfind("t=", 0) != 0 || !parse_finite_double(tok[2].substr(2), t) || t <= 0 || t > 9e9) {
        return bad("expected t=UNIX_SECONDS (a time after 1970 and before the year 2255), got '" + clean_label(tok[2]) + "'");
      }
      m.unix_s = t;
    }
    return std::optional<Marker>{m};
  }
  if (tok[0] == "count") {
    m.kind = Marker::Kind::count;
    if (tok.size() < 3 || tok.size() > 4) return bad("expected 'count KEY VALUE [WINDOW]'");
    if (!valid_name(tok[1])) return bad("count key '" + clean_label(tok[1]) + "'");
    if (!parse_finite_double(tok[2], m.value) || m.value < 0) return bad("count value '" + clean_label(tok[2]) + "'");
    m.key = tok[1];
    if (tok.size() == 4) {
      if (!valid_name(tok[3])) return bad("window name '" + clean_label(tok[3]) + "'");
      m.name = tok[3];
    }
    return std::optional<Marker>{m};
  }
  return bad("unknown verb '" + clean_label(tok[0]) + "' (begin, end, count)");
}

}  // namespace jouleprof
