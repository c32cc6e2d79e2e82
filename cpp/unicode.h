// Unicode character classes for the split-pattern scanners, and a forgiving UTF-8 decoder.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tokenforge {

// Bit flags per code point; the values must match tools/gen_unicode_table.py.
enum CharClass : uint8_t {
  kLetter = 1,    // \p{L}
  kNumber = 2,    // \p{N}
  kSpace = 4,     // \s, the Unicode White_Space property
  kUpperish = 8,  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]  (o200k)
  kLowerish = 16, // [\p{Ll}\p{Lm}\p{Lo}\p{M}]        (o200k)
};

uint8_t char_class(uint32_t cp);

// General categories, in the order of tools/gen_unicode_table.py's CATEGORIES.
enum GeneralCategory : uint8_t {
  kLu, kLl, kLt, kLm, kLo, kMn, kMc, kMe, kNd, kNl, kNo, kPc, kPd, kPs, kPe,
  kPi, kPf, kPo, kSm, kSc, kSk, kSo, kZs, kZl, kZp, kCc, kCf, kCs, kCo, kCn, kNumCategories
};
constexpr uint8_t kWhiteSpaceKey = 32;

// A code point's key for the split-pattern engine's character sets: its general category, plus
// kWhiteSpaceKey when it has the White_Space property (so 64 possible keys).
uint8_t char_key(uint32_t cp);

// One decoded character: code point, class flags, and its length in bytes.
struct Char {
  uint32_t cp;
  uint8_t cls;
  uint8_t len;
};

// Classes of the ASCII range (the hot path), filled from the full table at start-up.
extern const uint8_t kAsciiClass[128];

// Decodes a multi-byte character (s[i] >= 0x80).
Char decode_multibyte(const uint8_t* s, size_t n, size_t i);

// Decodes the character at s[i] (i < n). Input from Python is valid UTF-8; anything else decodes
// byte by byte as U+FFFD so that no input can make a scanner read out of bounds or stall.
inline Char decode_char(const uint8_t* s, size_t n, size_t i) {
  uint8_t b0 = s[i];
  if (b0 < 0x80) return {b0, kAsciiClass[b0], 1};
  return decode_multibyte(s, n, i);
}

}  // namespace tokenforge
