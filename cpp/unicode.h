// Unicode character classes for the split-pattern scanners, and a forgiving UTF-8 decoder.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

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

// Whether the character that ends at s[end] (it begins at or after s[start]; end > start) is one
// of `chars` (each one character's UTF-8): the sentencepiece-style word cuts before a "\u2581"
// (unigram.cc's BPE words, the Llama-2-style tokenizer.json binding) ask it of the character before.
inline bool char_before_is_one_of(const uint8_t* s, size_t start, size_t end, const std::vector<std::string>& chars) {
  size_t from = end - 1;
  while (from > start && (s[from] & 0xC0) == 0x80) --from;  // back to the character's first byte
  const size_t len = end - from;
  for (const std::string& c : chars)
    if (c.size() == len && std::memcmp(c.data(), s + from, len) == 0) return true;
  return false;
}

// Strict UTF-8, as Python's codec: no overlong forms, no surrogates, nothing above U+10FFFF, no
// truncated sequence. The length of the valid sequence at s[i] (s[i] >= 0x80, i < n), or 0.
inline size_t utf8_sequence(const uint8_t* s, size_t n, size_t i) {
  auto is_cont = [](uint8_t b) { return (b & 0xC0) == 0x80; };
  uint8_t b0 = s[i];
  size_t left = n - i;
  if (b0 >= 0xC2 && b0 <= 0xDF) return left >= 2 && is_cont(s[i + 1]) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (left < 3) return 0;
    uint8_t b1 = s[i + 1];
    uint8_t lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;  // no overlongs, no surrogates
    return b1 >= lo && b1 <= hi && is_cont(s[i + 2]) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (left < 4) return 0;
    uint8_t b1 = s[i + 1];
    uint8_t lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;  // U+10000..U+10FFFF
    return b1 >= lo && b1 <= hi && is_cont(s[i + 2]) && is_cont(s[i + 3]) ? 4 : 0;
  }
  return 0;
}

// The length of the longest prefix of s[0, n) that is strict UTF-8 and ends at a character
// boundary: n when all of it is.
size_t utf8_valid_prefix(const uint8_t* s, size_t n);

// The two-stage table of char_class (the generated unicode_table.h), for the inline decoder below.
extern const uint16_t* const kClassStage1;
extern const uint8_t* const kClassStage2;
// char_class of every code point below U+0800 (the two-byte sequences: Latin, Greek, Cyrillic,
// Hebrew, Arabic, ...), one load instead of the two stages' two dependent loads.
extern const std::array<uint8_t, 0x800> kTwoByteClass;
inline uint8_t char_class_bmp(uint32_t cp) { return kClassStage2[kClassStage1[cp >> 8] * 256 + (cp & 0xFF)]; }

// Decodes a multi-byte character (s[i] >= 0x80), or one byte of U+FFFD if it is not valid.
Char decode_multibyte(const uint8_t* s, size_t n, size_t i);

// Decodes the character at s[i] (i < n). Input from Python is valid UTF-8; anything else decodes
// byte by byte as U+FFFD so that no input can make a scanner read out of bounds or stall. ASCII
// and the valid two- and three-byte sequences (every script of the BMP) are decoded inline; four-
// byte sequences and errors in decode_multibyte.
inline Char decode_char(const uint8_t* s, size_t n, size_t i) {
  uint8_t b0 = s[i];
  if (b0 < 0x80) return {b0, kAsciiClass[b0], 1};
  if (b0 >= 0xC2 && b0 < 0xE0 && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
    uint32_t cp = ((b0 & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);  // < 0x800
    return {cp, kTwoByteClass[cp], 2};
  }
  if (b0 >= 0xE0 && b0 < 0xF0 && i + 2 < n && (s[i + 1] & 0xC0) == 0x80 && (s[i + 2] & 0xC0) == 0x80) {
    uint32_t cp = ((b0 & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
    if (cp >= 0x800) return {cp, char_class_bmp(cp), 3};
  }
  return decode_multibyte(s, n, i);
}

}  // namespace tokenforge
