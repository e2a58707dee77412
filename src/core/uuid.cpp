#include "jouleprof/core/uuid.hpp"

#include <array>
#include <cstdint>
#include <random>

namespace jouleprof {
namespace {

std::string format_uuid(std::array<uint8_t, 16> b, unsigned version) {
  b[6] = static_cast<uint8_t>((b[6] & 0x0F) | (version << 4));
  b[8] = static_cast<uint8_t>((b[8] & 0x3F) | 0x80);  // RFC 9562 variant
  return uuid_text(b.data());
}

void put64(std::array<uint8_t, 16>& b, std::size_t at, uint64_t v) {
  for (std::size_t i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}

// FNV-1a 64 from a given basis: two bases give the 128 bits of a derived identifier.
uint64_t fnv1a(uint64_t h, std::string_view a, std::string_view b) {
  for (unsigned char c : a) h = (h ^ c) * 1099511628211ULL;
  h = (h ^ 0xFFU) * 1099511628211ULL;  // separator: ("ab", "c") and ("a", "bc") differ
  for (unsigned char c : b) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

std::string gpu_uuid_text(const uint8_t* bytes16) { return "GPU-" + uuid_text(bytes16); }

std::string uuid_text(const uint8_t* bytes16) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += kHex[bytes16[i] >> 4];
    s += kHex[bytes16[i] & 0x0F];
  }
  return s;
}

std::string random_uuid() {
  // std::random_device reads the kernel's random source (getrandom / /dev/urandom): two
  // processes, or two threads, never share a sequence.
  std::random_device rd;
  std::array<uint8_t, 16> b{};
  for (std::size_t i = 0; i < b.size(); i += 4) {
    const uint32_t v = rd();
    for (std::size_t k = 0; k < 4; ++k) b[i + k] = static_cast<uint8_t>(v >> (8 * k));
  }
  return format_uuid(b, 4);
}

std::string derived_uuid(std::string_view parent, std::string_view name) {
  std::array<uint8_t, 16> b{};
  put64(b, 0, fnv1a(1469598103934665603ULL, parent, name));
  put64(b, 8, fnv1a(0x84222325CBF29CE4ULL, parent, name));
  return format_uuid(b, 8);
}

bool is_uuid(std::string_view t) {
  if (t.size() != 36) return false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const char c = t[i];
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace jouleprof
