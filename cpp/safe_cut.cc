#include "safe_cut.h"

#include <cstring>

#include "unicode.h"

namespace tokenforge {

namespace {

inline bool ascii_letter(uint8_t b) { return (b | 0x20) >= 'a' && (b | 0x20) <= 'z'; }

// The punctuation marks before which a cut is made (streaming._PUNCT).
bool is_cut_punct(uint32_t cp) {
  if (cp < 0x80) return cp != '\'' && std::strchr("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~", int(cp)) && cp;
  static const uint32_t kWide[] = {0xFF0C, 0x3002, 0x3001, 0xFF1B, 0xFF1A, 0xFF1F, 0xFF01, 0x300C, 0x300D,
                                   0x300E, 0x300F, 0xFF08, 0xFF09, 0x300A, 0x300B, 0x3008, 0x3009, 0x3010,
                                   0x3011, 0x3014, 0x3015, 0x2026, 0x2014, 0x30FB, 0x00B7, 0xFF5E};
  for (uint32_t w : kWide)
    if (cp == w) return true;
  return false;
}

// The start of the character that ends just before s[c] (c >= 1).
inline size_t previous_char(const uint8_t* s, size_t c) {
  size_t k = c - 1;
  for (int steps = 0; steps < 3 && k > 0 && (s[k] & 0xC0) == 0x80; ++steps) --k;
  return k;
}

}  // namespace

size_t safe_cut_code_points(uint32_t (*cp)(const void* text, size_t i), const void* text, size_t start, size_t end) {
  auto ascii_letter_cp = [](uint32_t c) { return c < 0x80 && ascii_letter(uint8_t(c)); };
  for (size_t c = end; c-- > start;) {
    if (c == 0) break;
    uint32_t b = cp(text, c);
    if (b == ' ') {  // "a| b"
      if (c + 1 < end && ascii_letter_cp(cp(text, c - 1)) && ascii_letter_cp(cp(text, c + 1))) return c;
      continue;
    }
    if (ascii_letter_cp(b) && c >= 2 && cp(text, c - 1) == '\n') {  // "x\n|b"
      uint32_t x = cp(text, c - 2);
      // (as safe_cut_bytes: a printable ASCII character, or a non-ASCII one that is no space, and
      // neither a surrogate nor U+FFFD, which that function never takes)
      if ((x > 0x20 && x < 0x7F) || (x >= 0x80 && (x < 0xD800 || x > 0xDFFF) && x != 0xFFFD && !(char_class(x) & kSpace)))
        return c;
      continue;
    }
    if (b < 0xD800 || b > 0xDFFF) {  // "L|P"
      if (!is_cut_punct(b)) continue;
      uint32_t before = cp(text, c - 1);
      if ((before < 0xD800 || before > 0xDFFF) && (char_class(before) & (kLetter | kNumber))) return c;
    }
  }
  return 0;
}

size_t safe_cut_bytes(const uint8_t* s, size_t start, size_t end) {
  for (size_t c = end; c-- > start;) {
    if (c == 0) break;
    uint8_t b = s[c];
    if (b == ' ') {  // "a| b"
      if (c + 1 < end && ascii_letter(s[c - 1]) && ascii_letter(s[c + 1])) return c;
      continue;
    }
    if (ascii_letter(b) && s[c - 1] == '\n' && c >= 2) {  // "x\n|b"
      uint8_t x = s[c - 2];
      if (x > 0x20 && x < 0x7F) return c;
      if (x >= 0x80) {
        size_t k = previous_char(s, c - 1);
        Char ch = decode_char(s, c - 1, k);
        if (ch.cp != 0xFFFD && k + ch.len == c - 1 && !(ch.cls & kSpace)) return c;
      }
      continue;
    }
    if ((b & 0xC0) == 0x80) continue;  // inside a character
    Char punct = decode_char(s, end, c);
    if (punct.cp == 0xFFFD || !is_cut_punct(punct.cp)) continue;  // "L|P"
    size_t k = previous_char(s, c);
    Char before = decode_char(s, c, k);
    if (before.cp != 0xFFFD && k + before.len == c && (before.cls & (kLetter | kNumber))) return c;
  }
  return 0;
}

}  // namespace tokenforge
