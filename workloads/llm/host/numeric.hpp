// Host-side rounding to bf16 / fp16 (round to nearest even), as the GPU's conversions do.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "model_config.hpp"

namespace jouleprof::llm {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u = float_bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

inline uint16_t float_to_f16_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u));
  if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (absx < 0x38800000u) {                                              // subnormal or zero in fp16
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);           // < 2^-25: zero
    const int e = static_cast<int>(absx >> 23);                           // 102..112
    const uint32_t mant = (absx & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - e;  // 14..24
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = absx - 0x38000000u;  // rebias exponent 127 -> 15
  r = (r + 0xFFFu + ((r >> 13) & 1u)) >> 13;
  return static_cast<uint16_t>(sign | r);
}

inline float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return bits_float(sign | 0x7F800000u | (m << 13));
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

/// Rounds a float to what the dtype stores.
inline float round_to(DType d, float f) {
  switch (d) {
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(f));
    case DType::f16: return f16_bits_to_float(float_to_f16_bits(f));
    case DType::f32: return f;
  }
  return f;
}

}  // namespace jouleprof::llm
