#include "unicode.h"

#include <array>
#include <cstring>
#include <utility>

#include "unicode_table.h"  // generated at build time

namespace tokenforge {

const uint16_t* const kClassStage1 = unicode_data::kStage1;
const uint8_t* const kClassStage2 = unicode_data::kStage2;

uint8_t char_class(uint32_t cp) {
  if (cp >= 0x110000) return 0;
  return unicode_data::kStage2[unicode_data::kStage1[cp >> 8] * 256 + (cp & 0xFF)];
}

uint8_t char_key(uint32_t cp) {
  if (cp >= 0x110000) return kCn;
  return unicode_data::kKeyStage2[unicode_data::kKeyStage1[cp >> 8] * 256 + (cp & 0xFF)];
}

namespace {
template <size_t... I>
constexpr std::array<uint8_t, 128> ascii_classes(std::index_sequence<I...>) {
  return {unicode_data::kStage2[unicode_data::kStage1[0] * 256 + I]...};
}
constexpr auto kAsciiArray = ascii_classes(std::make_index_sequence<128>{});

inline bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

constexpr std::array<uint8_t, 0x800> two_byte_classes() {
  std::array<uint8_t, 0x800> t{};
  for (uint32_t cp = 0; cp < 0x800; ++cp) t[cp] = unicode_data::kStage2[unicode_data::kStage1[cp >> 8] * 256 + (cp & 0xFF)];
  return t;
}
}  // namespace

const std::array<uint8_t, 0x800> kTwoByteClass = two_byte_classes();

const uint8_t kAsciiClass[128] = {
#define TF_ROW(k) kAsciiArray[k], kAsciiArray[k + 1], kAsciiArray[k + 2], kAsciiArray[k + 3], \
    kAsciiArray[k + 4], kAsciiArray[k + 5], kAsciiArray[k + 6], kAsciiArray[k + 7]
    TF_ROW(0),  TF_ROW(8),  TF_ROW(16), TF_ROW(24), TF_ROW(32), TF_ROW(40),  TF_ROW(48),  TF_ROW(56),
    TF_ROW(64), TF_ROW(72), TF_ROW(80), TF_ROW(88), TF_ROW(96), TF_ROW(104), TF_ROW(112), TF_ROW(120),
#undef TF_ROW
};

Char decode_multibyte(const uint8_t* s, size_t n, size_t i) {
  uint8_t b0 = s[i];
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

size_t utf8_valid_prefix(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {  // eight ASCII bytes at a time
      uint64_t word;
      std::memcpy(&word, s + i, 8);
      if (!(word & 0x8080808080808080ull)) {
        i += 8;
        continue;
      }
    }
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len = utf8_sequence(s, n, i);
    if (!len) return i;
    i += len;
  }
  return n;
}

}  // namespace tokenforge
