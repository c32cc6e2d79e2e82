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

namespace tokenforge {

// Writes the UTF-8 of the n code points at `units` (each `kind` bytes: 1, 2 or 4) to out, which
// has room for 2n bytes (kind 1), 3n (kind 2) or 4n (kind 4). Returns the number of bytes written,
// or SIZE_MAX at a surrogate (U+D800..U+DFFF has no UTF-8; the caller lets CPython raise its
// UnicodeEncodeError).
inline size_t utf8_from_ucs(const void* units, int kind, size_t n, uint8_t* out) {
  uint8_t* w = out;
  auto put = [&](uint32_t c) {
    if (c < 0x80) {
      *w++ = uint8_t(c);
    } else if (c < 0x800) {
      *w++ = uint8_t(0xC0 | (c >> 6));
      *w++ = uint8_t(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      *w++ = uint8_t(0xE0 | (c >> 12));
      *w++ = uint8_t(0x80 | ((c >> 6) & 0x3F));
      *w++ = uint8_t(0x80 | (c & 0x3F));
    } else {
      *w++ = uint8_t(0xF0 | (c >> 18));
      *w++ = uint8_t(0x80 | ((c >> 12) & 0x3F));
      *w++ = uint8_t(0x80 | ((c >> 6) & 0x3F));
      *w++ = uint8_t(0x80 | (c & 0x3F));
    }
  };
  auto surrogate = [](uint32_t c) { return c >= 0xD800 && c < 0xE000; };
  size_t i = 0;
  if (kind == 1) {
    const uint8_t* s = static_cast<const uint8_t*>(units);
    while (i < n) {
      uint64_t x;
      if (i + 8 <= n && (std::memcpy(&x, s + i, 8), (x & 0x8080808080808080ull) == 0)) {  // 8 ASCII at once
        std::memcpy(w, &x, 8);
        w += 8;
        i += 8;
        continue;
      }
      put(s[i++]);
    }
  } else if (kind == 2) {
    const uint16_t* s = static_cast<const uint16_t*>(units);
    while (i < n) {
#ifdef __SSE2__
      if (i + 8 <= n) {  // 8 ASCII code units at once, narrowed to bytes
        __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        __m128i high = _mm_and_si128(v, _mm_set1_epi16(short(0xFF80)));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(high, _mm_setzero_si128())) == 0xFFFF) {
          _mm_storel_epi64(reinterpret_cast<__m128i*>(w), _mm_packus_epi16(v, v));
          w += 8;
          i += 8;
          continue;
        }
      }
#endif
      uint32_t c = s[i++];
      if (surrogate(c)) return SIZE_MAX;
      put(c);
    }
  } else {
    const uint32_t* s = static_cast<const uint32_t*>(units);
    for (; i < n; ++i) {
      if (surrogate(s[i]) || s[i] > 0x10FFFF) return SIZE_MAX;
      put(s[i]);
    }
  }
  return size_t(w - out);
}

}  // namespace tokenforge
