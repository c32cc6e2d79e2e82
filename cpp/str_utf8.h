// UTF-8 from the code units of a Python str (CPython keeps a str as 1, 2 or 4 bytes per code
// point: Latin-1, UCS-2 or UCS-4). The binding converts strs itself instead of asking CPython,
// which would keep its converted copy inside the str for as long as the str lives.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace tokenforge {

namespace str_utf8_detail {

// One code point of at most 16 bits (kinds 1 and 2); false at a surrogate.
inline bool put16(uint32_t c, uint8_t*& w) {
  if (c < 0x80) {
    *w++ = uint8_t(c);
  } else if (c < 0x800) {
    w[0] = uint8_t(0xC0 | (c >> 6));
    w[1] = uint8_t(0x80 | (c & 0x3F));
    w += 2;
  } else {
    if (c >= 0xD800 && c < 0xE000) return false;
    w[0] = uint8_t(0xE0 | (c >> 12));
    w[1] = uint8_t(0x80 | ((c >> 6) & 0x3F));
    w[2] = uint8_t(0x80 | (c & 0x3F));
    w += 3;
  }
  return true;
}

// Any code point (kind 4); false at a surrogate or past U+10FFFF.
inline bool put32(uint32_t c, uint8_t*& w) {
  if (c < 0x10000) return put16(c, w);
  if (c > 0x10FFFF) return false;
  w[0] = uint8_t(0xF0 | (c >> 18));
  w[1] = uint8_t(0x80 | ((c >> 12) & 0x3F));
  w[2] = uint8_t(0x80 | ((c >> 6) & 0x3F));
  w[3] = uint8_t(0x80 | (c & 0x3F));
  w += 4;
  return true;
}

// Whether the 8 code units at s are ASCII; if so they are written to w as 8 bytes.
inline bool ascii8(const uint8_t* s, uint8_t* w) {
  uint64_t x;
  std::memcpy(&x, s, 8);
  if (x & 0x8080808080808080ull) return false;
  std::memcpy(w, &x, 8);
  return true;
}
inline bool ascii8(const uint16_t* s, uint8_t* w) {
#ifdef __SSE2__
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(v, _mm_set1_epi16(short(0xFF80))), _mm_setzero_si128())) != 0xFFFF)
    return false;
  _mm_storel_epi64(reinterpret_cast<__m128i*>(w), _mm_packus_epi16(v, v));
  return true;
#else
  uint64_t a, b;
  std::memcpy(&a, s, 8);
  std::memcpy(&b, s + 4, 8);
  if ((a | b) & 0xFF80FF80FF80FF80ull) return false;
  for (int k = 0; k < 8; ++k) w[k] = uint8_t(s[k]);
  return true;
#endif
}
inline bool ascii8(const uint32_t* s, uint8_t* w) {
#ifdef __SSE2__
  __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 4));
  __m128i high = _mm_and_si128(_mm_or_si128(a, b), _mm_set1_epi32(int(0xFFFFFF80)));
  if (_mm_movemask_epi8(_mm_cmpeq_epi32(high, _mm_setzero_si128())) != 0xFFFF) return false;
  __m128i words = _mm_packs_epi32(a, b);  // (values below 0x80: no saturation)
  _mm_storel_epi64(reinterpret_cast<__m128i*>(w), _mm_packus_epi16(words, words));
  return true;
#else
  uint32_t any = 0;
  for (int k = 0; k < 8; ++k) any |= s[k];
  if (any & ~0x7Fu) return false;
  for (int k = 0; k < 8; ++k) w[k] = uint8_t(s[k]);
  return true;
#endif
}

#ifdef __SSE2__
// Whether any of the 8 code units in the 16-bit lanes of v is a surrogate (U+D800..U+DFFF): u is
// one when u - 0xD800 (wrapping) is below 0x800.
inline bool any_surrogate8(__m128i v) {
  __m128i t = _mm_sub_epi16(v, _mm_set1_epi16(short(0xD800)));
  return _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(t, _mm_set1_epi16(short(0xF800))), _mm_setzero_si128())) != 0;
}
#endif

// (Not in the portable build, -U__SSE2__, which tests the one-code-point-at-a-time loop below.)
#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__)
#define TOKENFORGE_SIMD_BLOCKS 1
// Blocks of 8 code points below U+0800 (ASCII mixed with Latin, Greek, Cyrillic, Hebrew, Arabic
// letters: the words of most alphabets with their spaces) in one step (session 22): each code
// point is made into a 16-bit lane holding its UTF-8 (one byte, or the lead byte low and the
// continuation byte high), and a byte shuffle chosen by which lanes hold two bytes packs them
// together. kTwoByteShuffles.mask[m]: for the 8 lanes, byte 2k, then byte 2k + 1 if bit k of m
// is set; the unused tail zeroed (0x80 makes pshufb write a zero).
struct TwoByteShuffles {
  alignas(16) uint8_t mask[256][16];
  constexpr TwoByteShuffles() : mask() {
    for (int m = 0; m < 256; ++m) {
      int o = 0;
      for (int k = 0; k < 8; ++k) {
        mask[m][o++] = uint8_t(2 * k);
        if (m >> k & 1) mask[m][o++] = uint8_t(2 * k + 1);
      }
      while (o < 16) mask[m][o++] = 0x80;
    }
  }
};
inline constexpr TwoByteShuffles kTwoByteShuffles{};

// The 8 code points in the 16-bit lanes of v, if all are below U+0800: their UTF-8 written at w
// (16 bytes are written; the caller has room) and w moved past it. False, nothing written, else.
__attribute__((target("ssse3,popcnt"))) inline bool two_byte_lanes(__m128i v, uint8_t*& w) {
  if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(v, _mm_set1_epi16(short(0xF800))), _mm_setzero_si128())) != 0xFFFF)
    return false;
  __m128i two = _mm_cmpgt_epi16(v, _mm_set1_epi16(0x7F));  // (signed compare: every lane is below 0x800)
  __m128i lead = _mm_or_si128(_mm_srli_epi16(v, 6), _mm_set1_epi16(0xC0));
  __m128i cont = _mm_or_si128(_mm_and_si128(v, _mm_set1_epi16(0x3F)), _mm_set1_epi16(0x80));
  __m128i both = _mm_or_si128(lead, _mm_slli_epi16(cont, 8));
  __m128i lanes = _mm_or_si128(_mm_and_si128(two, both), _mm_andnot_si128(two, v));
  int m = _mm_movemask_epi8(_mm_packs_epi16(two, two)) & 0xFF;
  __m128i packed = _mm_shuffle_epi8(lanes, _mm_load_si128(reinterpret_cast<const __m128i*>(kTwoByteShuffles.mask[m])));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(w), packed);
  w += 8 + __builtin_popcount(unsigned(m));
  return true;
}
__attribute__((target("ssse3,popcnt"))) inline bool two_byte8(const uint16_t* s, uint8_t*& w) {
  return two_byte_lanes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)), w);
}
__attribute__((target("ssse3,popcnt"))) inline bool two_byte8(const uint8_t* s, uint8_t*& w) {
  __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s));
  return two_byte_lanes(_mm_unpacklo_epi8(bytes, _mm_setzero_si128()), w);
}
// Any 8 code points of the Basic Multilingual Plane but surrogates (Chinese, Japanese, Korean
// mixed with ASCII, the blocks two_byte8 refuses), 4 at a time: each code point's UTF-8 (1-3
// bytes) from the low byte up in a 32-bit lane, packed by a shuffle chosen by the lanes' lengths
// (2 bits each: kBmpShuffles.mask[index], kBmpShuffles.length[index] bytes). Writes 16 bytes for
// each 4; the caller has room for 28 from w.
struct BmpShuffles {
  alignas(16) uint8_t mask[256][16];
  uint8_t length[256];
  constexpr BmpShuffles() : mask(), length() {
    for (int m = 0; m < 256; ++m) {
      int o = 0;
      for (int k = 0; k < 4; ++k)
        for (int b = 0; b <= (m >> (2 * k) & 3) && b < 3; ++b) mask[m][o++] = uint8_t(4 * k + b);
      length[m] = uint8_t(o);
      while (o < 16) mask[m][o++] = 0x80;
    }
  }
};
inline constexpr BmpShuffles kBmpShuffles{};
inline constexpr uint8_t kSpreadBits[16] = {0, 1, 4, 5, 16, 17, 20, 21, 64, 65, 68, 69, 80, 81, 84, 85};  // bit k -> bit 2k

__attribute__((target("ssse3,popcnt"))) inline void bmp_lanes4(__m128i u, uint8_t*& w) {
  const __m128i x80 = _mm_set1_epi32(0x80), low6 = _mm_and_si128(u, _mm_set1_epi32(0x3F));
  const __m128i mid6 = _mm_and_si128(_mm_srli_epi32(u, 6), _mm_set1_epi32(0x3F));
  __m128i ge80 = _mm_cmpgt_epi32(u, _mm_set1_epi32(0x7F)), ge800 = _mm_cmpgt_epi32(u, _mm_set1_epi32(0x7FF));
  __m128i two = _mm_or_si128(_mm_or_si128(_mm_srli_epi32(u, 6), _mm_set1_epi32(0xC0)),
                             _mm_slli_epi32(_mm_or_si128(low6, x80), 8));
  __m128i three = _mm_or_si128(_mm_or_si128(_mm_srli_epi32(u, 12), _mm_set1_epi32(0xE0)),
                               _mm_or_si128(_mm_slli_epi32(_mm_or_si128(mid6, x80), 8),
                                            _mm_slli_epi32(_mm_or_si128(low6, x80), 16)));
  __m128i lanes = _mm_or_si128(_mm_andnot_si128(ge80, u), _mm_and_si128(ge80, _mm_or_si128(_mm_andnot_si128(ge800, two),
                                                                                           _mm_and_si128(ge800, three))));
  int index = kSpreadBits[_mm_movemask_ps(_mm_castsi128_ps(ge80))] + kSpreadBits[_mm_movemask_ps(_mm_castsi128_ps(ge800))];
  __m128i packed = _mm_shuffle_epi8(lanes, _mm_load_si128(reinterpret_cast<const __m128i*>(kBmpShuffles.mask[index])));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(w), packed);
  w += kBmpShuffles.length[index];
}
// The 8 code units at s if none is a surrogate (else false, nothing written); 28 bytes of room.
__attribute__((target("ssse3,popcnt"))) inline bool bmp8(const uint16_t* s, uint8_t*& w) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  if (any_surrogate8(v)) return false;
  bmp_lanes4(_mm_unpacklo_epi16(v, _mm_setzero_si128()), w);
  bmp_lanes4(_mm_unpackhi_epi16(v, _mm_setzero_si128()), w);
  return true;
}
inline bool has_ssse3() {
  static const bool yes = __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt");
  return yes;
}
#endif

// Blocks of 8 code units: an ASCII block is narrowed at once; where the processor has SSSE3 a
// block below U+0800 is converted in one step and any other block of the BMP without a surrogate
// in two (above); any other is converted one code point at a time, all 8, before the next block
// is tried (session 13: trying the fast path again after every code point that failed it made
// multilingual text convert at 5 ns per code point, three times slower than CPython's own
// encoder). The output has room for 2 (kind 1) or 3 (kind 2) bytes per code unit, so 16 bytes are
// always writable at a block of 8 units (before block i at most 2i / 3i bytes are written), and
// 28 when 8 more units follow the block.
template <class Unit, bool (*put)(uint32_t, uint8_t*&)>
size_t convert(const Unit* s, size_t n, uint8_t* out) {
  uint8_t* w = out;
  size_t i = 0;
#ifdef TOKENFORGE_SIMD_BLOCKS
  const bool simd_blocks = sizeof(Unit) <= 2 && has_ssse3();
#endif
  for (; i + 8 <= n; i += 8) {
    if (ascii8(s + i, w)) {
      w += 8;
      continue;
    }
#ifdef TOKENFORGE_SIMD_BLOCKS
    if constexpr (sizeof(Unit) <= 2) {
      if (simd_blocks && two_byte8(s + i, w)) continue;
    }
    if constexpr (sizeof(Unit) == 2) {  // (28 bytes of room: at least 8 more units after this block)
      if (simd_blocks && i + 16 <= n && bmp8(s + i, w)) continue;
    }
#endif
    for (size_t k = i; k < i + 8; ++k)
      if (!put(s[k], w)) return SIZE_MAX;
  }
  for (; i < n; ++i)
    if (!put(s[i], w)) return SIZE_MAX;
  return size_t(w - out);
}

}  // namespace str_utf8_detail

// Whether the n code units at `units` (kind 1, 2 or 4) hold a surrogate (U+D800..U+DFFF): a str
// that has no UTF-8. Eight units at a time: a unit u is a surrogate when u - 0xD800 (wrapping) is
// below 0x800.
inline bool has_surrogate(const void* units, int kind, size_t n) {
  if (kind == 1) return false;
  size_t i = 0;
  if (kind == 2) {
    const uint16_t* s = static_cast<const uint16_t*>(units);
#ifdef __SSE2__
    for (; i + 8 <= n; i += 8)
      if (str_utf8_detail::any_surrogate8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)))) return true;
#endif
    for (; i < n; ++i)
      if (uint16_t(s[i] - 0xD800) < 0x800) return true;
    return false;
  }
  const uint32_t* s = static_cast<const uint32_t*>(units);
#ifdef __SSE2__
  const __m128i base = _mm_set1_epi32(0xD800), high = _mm_set1_epi32(int(0xFFFFF800));
  for (; i + 4 <= n; i += 4) {
    __m128i t = _mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)), base);
    if (_mm_movemask_epi8(_mm_cmpeq_epi32(_mm_and_si128(t, high), _mm_setzero_si128())) != 0) return true;
  }
#endif
  for (; i < n; ++i)
    if (s[i] - 0xD800u < 0x800u) return true;
  return false;
}

// Writes the UTF-8 of the n code points at `units` (each `kind` bytes: 1, 2 or 4) to out, which
// has room for 2n bytes (kind 1), 3n (kind 2) or 4n (kind 4). Returns the number of bytes written,
// or SIZE_MAX at a surrogate (U+D800..U+DFFF has no UTF-8; the caller lets CPython raise its
// UnicodeEncodeError).
inline size_t utf8_from_ucs(const void* units, int kind, size_t n, uint8_t* out) {
  using namespace str_utf8_detail;
  if (kind == 1) return convert<uint8_t, put16>(static_cast<const uint8_t*>(units), n, out);
  if (kind == 2) return convert<uint16_t, put16>(static_cast<const uint16_t*>(units), n, out);
  return convert<uint32_t, put32>(static_cast<const uint32_t*>(units), n, out);
}

}  // namespace tokenforge
