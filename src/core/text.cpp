#include "jouleprof/core/text.hpp"

#include <cstdint>

namespace jouleprof {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;  // overlong
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;                          // surrogate
  if (cp > 0x10FFFF) return 0;
  return n;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

void hex_escape(std::string& out, unsigned v) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[(v >> 4) & 0xF];
  out += kHex[v & 0xF];
}

// Escapes C0 controls, DEL and C1 controls (U+0080..U+009F) of valid UTF-8 text.
std::string escape_controls(std::string_view s, bool named) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      if (named && c == '\n') out += "\\n";
      else if (named && c == '\t') out += "\\t";
      else if (named && c == '\r') out += "\\r";
      else if (named && c == 0x1B) out += "\\e";
      else hex_escape(out, c);
      ++i;
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      hex_escape(out, static_cast<unsigned char>(s[i + 1]));  // C1 control, e.g. U+009B (CSI)
      i += 2;
    } else {
      out += s[i];
      ++i;
    }
  }
  return out;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s, bool* replaced) {
  if (replaced != nullptr) *replaced = false;
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += kReplacement;
      if (replaced != nullptr) *replaced = true;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string clean_label(std::string_view s, bool* changed) {
  bool replaced = false;
  std::string out = escape_controls(to_valid_utf8(s, &replaced), /*named=*/false);
  if (changed != nullptr) *changed = replaced || out != s;
  return out;
}

std::string for_terminal(std::string_view s) { return escape_controls(to_valid_utf8(s), /*named=*/true); }

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace jouleprof
