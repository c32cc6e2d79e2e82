#include "unicode.h"

#include "unicode_table.h"  // generated at build time

namespace tokenforge {

uint8_t char_class(uint32_t cp) {
  if (cp >= 0x110000) return 0;
  return unicode_data::kStage2[unicode_data::kStage1[cp >> 8] * 256 + (cp & 0xFF)];
}

namespace {
// Classes of the ASCII range, computed once from the full table.
struct AsciiTable {
  uint8_t cls[128];
  AsciiTable() {
    for (uint32_t c = 0; c < 128; ++c) cls[c] = char_class(c);
  }
};
const AsciiTable kAscii;

inline bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }
}  // namespace

Char decode_char(const uint8_t* s, size_t n, size_t i) {
  uint8_t b0 = s[i];
  if (b0 < 0x80) return {b0, kAscii.cls[b0], 1};
  uint32_t cp;
  uint8_t len;
  if (b0 >= 0xC2 && b0 < 0xE0 && i + 1 < n && is_cont(s[i + 1])) {
    cp = ((b0 & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
    len = 2;
  } else if (b0 >= 0xE0 && b0 < 0xF0 && i + 2 < n && is_cont(s[i + 1]) && is_cont(s[i + 2])) {
    cp = ((b0 & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
    len = 3;
    if (cp < 0x800) return {0xFFFD, 0, 1};
  } else if (b0 >= 0xF0 && b0 < 0xF5 && i + 3 < n && is_cont(s[i + 1]) && is_cont(s[i + 2]) &&
             is_cont(s[i + 3])) {
    cp = ((b0 & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) |
         (s[i + 3] & 0x3Fu);
    len = 4;
    if (cp < 0x10000 || cp >= 0x110000) return {0xFFFD, 0, 1};
  } else {
    return {0xFFFD, 0, 1};
  }
  return {cp, char_class(cp), len};
}

}  // namespace tokenforge
