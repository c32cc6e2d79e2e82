// The pieces of the GPT-2, cl100k and o200k patterns over 64 bytes at a time, as bit masks.
//
// The byte-at-a-time scanners decide one piece, then the next: every piece is a chain of
// dependent loads, compares and mispredicted branches. Over ASCII text the pattern's pieces can be
// decided for 64 bytes at once instead: the bytes' classes become 64-bit masks (bit k: byte p + k:
// four 16-byte SSE2 compares per class, or one 64-byte AVX-512BW compare where the processor has
// it, chosen at run time), and the positions where pieces start follow from the
// classes of each byte and its neighbours, with shifts and ands. The pieces are then read off the
// mask of starts with a count of trailing zeros per piece.
//
// Where pieces start, over ASCII without a contraction (derived from the patterns' branches in
// order; L letters, D digits, W whitespace, N = CR or LF, S = W without N, O anything else):
//  - a letter run starts a piece, unless the byte before it is its prefix: a byte of S, or an O
//    that is a piece of its own (not inside a run of O, not after a space: ` ?[^\s\p{L}\p{N}]++`
//    takes the space and the whole run). o200k also starts a piece at a capital after a small
//    letter (its words are capitals then small letters).
//  - digits start a piece at the start of their run and every three digits.
//  - a run of O starts a piece, unless a space is before it (the space starts it); the CR/LF
//    bytes right after the run belong to its piece (o200k: CR, LF and '/').
//  - a run of whitespace (without those) starts a piece; within it, a piece starts after its last
//    CR/LF (`\s*[\r\n]`) and at its last byte if that is in S (`\s+(?!\S)` leaves it to the next
//    piece: a word's prefix, a space before punctuation, or `\s` alone).
// These rules need the bytes around a position and the runs through it; so only starts whose
// runs end inside the 64 bytes are trusted. Letters of two bytes whose class a range test of
// their two bytes decides (Latin-1's, Cyrillic's first 96, Latin Extended-A's and, where case
// does not matter, U+0100..U+024F) count as letters, both bytes in the letter's class, and so do
// the three-byte letters without case of CJK ideographs, Hangul syllables and kana
// (add_three_byte_letters). The commonest punctuation of two and three bytes (« » ’ “ ” — • …,
// add_punctuation) counts as O and the no-break space as S, one character of several bytes:
// where the rules above take a single O or S, or a run's last byte, they take the whole
// character. The block stops before any other byte >= 0x80 (a letter, digit, space or mark of
// another script could change the piece) and before an apostrophe that could begin a
// contraction; those pieces, and the end of the text (`\s++$`), are left to the byte-at-a-time
// scanners. The callers check every piece against `regex`
// (tests/test_fast_paths.py).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#ifdef __SSE2__
#include <immintrin.h>
#endif

namespace tokenforge {
namespace block_scan {

// What a block found: the piece starts at p[0..64) (bit 0: p, itself a piece start), how many
// leading positions have certain start bits (the pieces between two trusted starts can be
// emitted), and whether the block stopped within its first 16 bytes before a foreign byte (text
// of another script, mostly: the callers then scan the next 64 bytes the slow way; not at the
// commonest CJK punctuation, between letters the blocks know).
struct BlockStarts {
  uint64_t starts;
  unsigned trusted;
  bool foreign_soon;
};

#ifdef __SSE2__
struct Classes {
  uint64_t upper, lower, digit, space, newline, high, apostrophe, contraction_letter, slash, blank;
  uint64_t caseless;  // where case matters: letters of neither case (the three-byte letters below)
  uint64_t foreign;   // the bytes >= 0x80 that are not part of a known letter or punctuation mark
  uint64_t wide_other;  // the bytes of the known punctuation of 2 and 3 bytes (add_punctuation)
  uint64_t wide_cont;   // the bytes after the first of those and of the no-break space
  uint64_t cjk_punctuation;  // the first bytes of the commonest CJK punctuation marks (below)
};

// The 64 bytes at p as masks (bit k: byte p + k), by one of two instruction sets with the same
// answers: SSE2 (four 16-byte compares and a movemask each; every x86-64 has it) and AVX-512BW
// (one 64-byte compare straight into a mask; chosen at run time where the processor has it).
struct Sse2Block {
  __m128i v[4];
  explicit Sse2Block(const uint8_t* p) {
    for (int part = 0; part < 4; ++part) v[part] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part));
  }
  template <class Test>
  uint64_t mask(Test test) const {
    uint64_t m = 0;
    for (int part = 0; part < 4; ++part) m |= uint64_t(unsigned(_mm_movemask_epi8(test(v[part])))) << (16 * part);
    return m;
  }
  uint64_t high() const { return mask([](__m128i x) { return x; }); }
  uint64_t equal(uint8_t b) const {
    return mask([b](__m128i x) { return _mm_cmpeq_epi8(x, _mm_set1_epi8(char(b))); });
  }
  // The bytes in [lo, lo + count) for lo >= 9: shifted so that the range lands on -128.., one
  // signed compare (bytes >= 0x80 land above it).
  uint64_t in_range(uint8_t lo, uint8_t count) const {
    return mask([lo, count](__m128i x) {
      __m128i shifted = _mm_add_epi8(x, _mm_set1_epi8(char(0x80 - lo)));
      return _mm_cmplt_epi8(shifted, _mm_set1_epi8(char(-128 + count)));
    });
  }
  // The bytes in [0x80, b) for b >= 0x80 (signed, those are the only bytes below b).
  uint64_t high_below(uint8_t b) const {
    return mask([b](__m128i x) { return _mm_cmplt_epi8(x, _mm_set1_epi8(char(b))); });
  }
  // The bytes equal to b (a small letter) when ORed with 0x20 (its capital too).
  uint64_t folded_equal(uint8_t b) const {
    return mask([b](__m128i x) { return _mm_cmpeq_epi8(_mm_or_si128(x, _mm_set1_epi8(0x20)), _mm_set1_epi8(char(b))); });
  }
  // The odd bytes.
  uint64_t odd() const {
    return mask([](__m128i x) { return _mm_cmpeq_epi8(_mm_and_si128(x, _mm_set1_epi8(1)), _mm_set1_epi8(1)); });
  }
};

#define TOKENFORGE_AVX512 __attribute__((target("avx512f,avx512bw")))
struct Avx512Block {
  __m512i v;
  TOKENFORGE_AVX512 explicit Avx512Block(const uint8_t* p) : v(_mm512_loadu_si512(p)) {}
  TOKENFORGE_AVX512 uint64_t high() const { return _mm512_movepi8_mask(v); }
  TOKENFORGE_AVX512 uint64_t equal(uint8_t b) const { return _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(char(b))); }
  TOKENFORGE_AVX512 uint64_t in_range(uint8_t lo, uint8_t count) const {
    return _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(char(lo))), _mm512_set1_epi8(char(count)));
  }
  TOKENFORGE_AVX512 uint64_t high_below(uint8_t b) const { return _mm512_cmplt_epi8_mask(v, _mm512_set1_epi8(char(b))); }
  TOKENFORGE_AVX512 uint64_t folded_equal(uint8_t b) const {
    return _mm512_cmpeq_epi8_mask(_mm512_or_si512(v, _mm512_set1_epi8(0x20)), _mm512_set1_epi8(char(b)));
  }
  TOKENFORGE_AVX512 uint64_t odd() const { return _mm512_test_epi8_mask(v, _mm512_set1_epi8(1)); }
};

// Adds the two-byte letters of block b to c's letter classes (small ones to `lower` where case
// does not matter) and sets c.foreign to the other bytes >= 0x80. A letter is a lead byte followed
// by a continuation byte (0x80..0xBF) in the ranges below; a lead byte at p[63] is foreign (its
// second byte is outside the block).
//  - C3 xx: U+00C0..U+00FF, capitals below C3 9F and small letters from it, except C3 97 (×) and
//    C3 B7 (÷), which are symbols;
//  - D0 xx: U+0400..U+043F, capitals below D0 B0; D1 80..9F: U+0440..U+045F, small letters
//    (D1 A0..BF alternate between the cases and are left to the scanners);
//  - where case matters, C4 xx and C5 xx: Latin Extended-A, U+0100..U+017F (Polish, Czech, Turkish,
//    Hungarian...), all letters; their cases alternate with the code point's parity: capitals at
//    the even second bytes of C4 80..B7 and C5 8A..B8, at the odd ones of C4 B9..BF, C5 81..88 and
//    C5 B9..BE, the rest small (C4 B8 ĸ, C5 89 ŉ and C5 BF ſ among them; checked against every
//    code point by tests/test_fast_paths.py);
//  - where case does not matter, C4..C9 xx and all of D1 xx: U+0100..U+024F and U+0440..U+047F,
//    all letters.
// Returns the mask of their bytes.
template <bool CaseMatters, class Block>
inline uint64_t add_two_byte_letters(const Block& b, uint64_t cont, Classes& c) {
  uint64_t c3 = b.equal(0xC3), d0 = b.equal(0xD0), d1 = b.equal(0xD1);
  uint64_t latin1 = cont & ~(b.equal(0x97) | b.equal(0xB7));  // the second bytes of C3's letters
  uint64_t known;
  if (CaseMatters) {
    uint64_t below_9f = b.high_below(0x9F), below_a0 = b.high_below(0xA0), below_b0 = b.high_below(0xB0);
    uint64_t upper = (c3 & ((latin1 & below_9f) >> 1)) | (d0 & (below_b0 >> 1));
    uint64_t lower = (c3 & ((latin1 & ~below_9f) >> 1)) | (d0 & ((cont & ~below_b0) >> 1)) | (d1 & (below_a0 >> 1));
    uint64_t c4 = b.equal(0xC4), c5 = b.equal(0xC5);
    if (c4 | c5) {
      uint64_t odd = b.odd() >> 1;  // (from here on, masks at the lead byte)
      uint64_t even_capitals = (c4 & (b.in_range(0x80, 0x38) >> 1)) | (c5 & (b.in_range(0x8A, 0x2F) >> 1));
      uint64_t odd_capitals = (c4 & (b.in_range(0xB9, 7) >> 1)) | (c5 & ((b.in_range(0x81, 8) | b.in_range(0xB9, 6)) >> 1));
      uint64_t extended = (c4 | c5) & (cont >> 1);
      uint64_t capitals = (even_capitals & ~odd) | (odd_capitals & odd);
      upper |= capitals;
      lower |= extended & ~capitals;
    }
    upper |= upper << 1;
    lower |= lower << 1;
    c.upper |= upper;
    c.lower |= lower;
    known = upper | lower;
  } else {
    uint64_t c4_to_c9 = b.high_below(0xCA) & ~b.high_below(0xC4);
    uint64_t letter = (c3 & (latin1 >> 1)) | ((c4_to_c9 | d0 | d1) & (cont >> 1));
    letter |= letter << 1;
    c.lower |= letter;
    known = letter;
  }
  return known;
}

// Adds the three-byte letters of block b whose class their bytes' ranges decide, all of general
// category Lo or Lm (letters without case), and returns the mask of their bytes:
//  - E4 B8..BF xx, E5..E9 xx xx: the CJK ideographs U+4E00..U+9FFF;
//  - EA B0..BF xx, EB..EC xx xx, ED 80..9D xx: the Hangul syllables U+AC00..U+D77F;
//  - E3 81 81..BF, E3 82 80..96 / 9D..9F / A1..BF, E3 83 80..BA / BC..BF: the kana U+3041..U+30FF
//    without U+3097..U+309C (unassigned, two combining marks, two modifier symbols), U+30A0 (a
//    dash) and U+30FB (a dot), which are not letters.
// Where case matters (o200k), a letter without case joins a word of either case, so the patterns'
// case rules would need the whole word; a three-byte letter with a cased letter right before or
// after it is left to the scanners instead. (A character's third byte at p[62..63] is outside
// the block: its letter is not known.)
template <bool CaseMatters, class Block>
inline uint64_t add_three_byte_letters(const Block& b, uint64_t cont, Classes& c) {
  uint64_t e3 = b.equal(0xE3), e4 = b.equal(0xE4), ea = b.equal(0xEA), ed = b.equal(0xED);
  uint64_t e5_e9 = b.in_range(0xE5, 5), eb_ec = b.in_range(0xEB, 2);
  uint64_t second = (e4 & (b.in_range(0xB8, 8) >> 1)) | (e5_e9 & (cont >> 1)) |  // (at the lead byte: the
                    (ea & (b.in_range(0xB0, 16) >> 1)) | (eb_ec & (cont >> 1)) |  //  second byte is right)
                    (ed & (b.in_range(0x80, 0x1E) >> 1));
  uint64_t lead = second & (cont >> 2);
  if (e3) {
    uint64_t third81 = cont & ~b.equal(0x80);
    uint64_t third82 = b.in_range(0x80, 0x17) | b.in_range(0x9D, 3) | b.in_range(0xA1, 0x1F);
    uint64_t third83 = cont & ~b.equal(0xBB);
    uint64_t kana = (b.equal(0x81) & (third81 >> 1)) | (b.equal(0x82) & (third82 >> 1)) | (b.equal(0x83) & (third83 >> 1));
    lead |= e3 & (kana >> 1);
  }
  if (CaseMatters) {
    uint64_t cased = c.upper | c.lower;
    lead &= ~((cased << 1) | (cased >> 3));
  }
  // The punctuation of Chinese and Japanese text: 、。「」『』 (E3 80 81..82, 8C..8F) and the full-width
  // ！（），：；？ (EF BC 81, 88..89, 8C, 9A..9B, 9F). They stop a block like any foreign byte, but
  // a block that stops at one is not followed by 64 bytes the slow way (block_result): the text
  // around them is mostly letters the blocks know.
  uint64_t e3_80 = e3 & (b.equal(0x80) >> 1), ef_bc = b.equal(0xEF) & (b.equal(0xBC) >> 1);
  if (e3_80 | ef_bc) {
    uint64_t after_e3_80 = b.in_range(0x81, 2) | b.in_range(0x8C, 4);
    uint64_t after_ef_bc = b.equal(0x81) | b.in_range(0x88, 2) | b.equal(0x8C) | b.in_range(0x9A, 2) | b.equal(0x9F);
    c.cjk_punctuation = (e3_80 & (after_e3_80 >> 2)) | (ef_bc & (after_ef_bc >> 2));
  }
  uint64_t letter = lead | (lead << 1) | (lead << 2);
  if (CaseMatters)
    c.caseless |= letter;
  else
    c.lower |= letter;
  return letter;
}

// Adds the two- and three-byte punctuation and symbols commonest in Latin-script and typographic
// text, all of class O (neither letter, digit nor whitespace), to c.wide_other (all their bytes)
// and c.wide_cont (all but their first), and returns the mask of their bytes:
//  - C2 A1..A9, AB..B1, B4, B6..B8, BB, BF: ¡ ¢ £ ¤ ¥ ¦ § ¨ © « ¬ (soft hyphen) ® ¯ ° ± ´ ¶ · ¸ » ¿
//    (not C2 A0, the no-break space, which is whitespace, nor ª ² ³ µ ¹ º ¼ ½ ¾: letters and digits);
//  - C3 97 and C3 B7: × and ÷;
//  - E2 80 90..A7: U+2010..U+2027, the dashes, quotation marks, † ‡ • ‣ ․ ‥ … ‧; E2 80 B0..BE:
//    U+2030..U+203E, ‰ ‱ ′ ″ ‴ ‵ ‶ ‷ ‸ ‹ › ※ ‼ ‽ ‾ (not U+2028..U+202F: line and paragraph
//    separators, format characters and a no-break space).
// A character that does not end inside the block is not added (it stays foreign).
template <class Block>
inline uint64_t add_punctuation(const Block& b, Classes& c) {
  uint64_t c2_second = b.in_range(0xA1, 9) | b.in_range(0xAB, 7) | b.equal(0xB4) | b.in_range(0xB6, 3) | b.equal(0xBB) |
                       b.equal(0xBF);
  uint64_t lead2 = (b.equal(0xC2) & (c2_second >> 1)) | (b.equal(0xC3) & ((b.equal(0x97) | b.equal(0xB7)) >> 1));
  uint64_t lead3 = b.equal(0xE2) & (b.equal(0x80) >> 1) & ((b.in_range(0x90, 0x18) | b.in_range(0xB0, 0x0F)) >> 2);
  uint64_t cont = (lead2 << 1) | (lead3 << 1) | (lead3 << 2);
  c.wide_cont |= cont;
  c.wide_other = lead2 | lead3 | cont;
  return c.wide_other;
}

// Adds the no-break space C2 A0 (French typography, text taken from HTML), whitespace of two
// bytes, to c.space and c.wide_cont, and returns the mask of its bytes.
template <class Block>
inline uint64_t add_no_break_space(const Block& b, Classes& c) {
  uint64_t lead = b.equal(0xC2) & (b.equal(0xA0) >> 1);
  c.space |= lead | (lead << 1);
  c.wide_cont |= lead << 1;
  return lead | (lead << 1);
}

// The first byte of the character whose last byte is at each bit of `ends` (characters of up to
// three bytes; cont: the bytes after the first of the multi-byte ones the blocks know; with none,
// `ends` itself).
inline uint64_t first_bytes(uint64_t ends, uint64_t cont) {
  uint64_t one_back = (ends & cont) >> 1;
  return (ends & ~cont) | (one_back & ~cont) | ((one_back & cont) >> 1);
}

template <bool CaseMatters, class Block>
inline Classes classify(const uint8_t* p) {
  Block b(p);
  Classes c{};
  c.high = b.high();
  c.upper = b.in_range('A', 26);
  c.lower = b.in_range('a', 26);
  c.digit = b.in_range('0', 10);
  c.newline = b.equal('\r') | b.equal('\n');
  c.blank = b.equal(' ');
  c.space = b.in_range('\t', 5) | c.blank;  // White_Space in ASCII
  c.apostrophe = b.equal('\'');
  if (CaseMatters) c.slash = b.equal('/');  // (only o200k's rules read it)
  if (c.apostrophe)  // (most blocks have none)
    for (char letter : {'s', 'd', 'm', 't', 'l', 'v', 'r'}) c.contraction_letter |= b.folded_equal(uint8_t(letter));
  c.foreign = c.high;
  if (c.high) {
    uint64_t cont = b.high_below(0xC0);
    c.foreign &= ~add_two_byte_letters<CaseMatters>(b, cont, c);
    if (c.foreign & ~cont) c.foreign &= ~add_three_byte_letters<CaseMatters>(b, cont, c);
    if (c.foreign) c.foreign &= ~add_punctuation(b, c);
    if (c.foreign) c.foreign &= ~add_no_break_space(b, c);
  }
  return c;
}

// Fills each run of `m` from the set bits of `seeds` to the run's end (any number of seeds).
inline uint64_t fill_right(uint64_t seeds, uint64_t m) {
  uint64_t x = seeds & m, t = m;
  for (int step = 1; step < 64; step *= 2) {
    x |= (x << step) & t;
    t &= t << step;
  }
  return x;
}

// The bits below `end` (all 64 when end is 64).
inline uint64_t bits_below(unsigned end) { return end == 64 ? ~uint64_t(0) : (uint64_t(1) << end) - 1; }

// Where a block stops: before a foreign byte and before an apostrophe that may start a
// contraction (64: it does not). A non-ASCII byte after an apostrophe stops it too: U+017F (ſ)
// folds to 's', so `'ſ` is a contraction of the patterns that ignore case.
inline unsigned block_end(const Classes& c) {
  uint64_t stop = c.foreign | (c.apostrophe & ((c.contraction_letter | c.high) >> 1));
  return stop ? unsigned(__builtin_ctzll(stop)) : 64;
}

inline BlockStarts block_result(uint64_t starts, unsigned trusted, unsigned end, const Classes& c) {
  return {starts, trusted, end < 16 && ((c.foreign & ~c.cjk_punctuation) >> end) & 1};
}

// How many leading positions have certain start bits, for a block that stops at `end`: those
// before the last valid byte (a start there may depend on the byte after it), and up to the start
// of a whitespace run that reaches it (the run's end, and so the pieces inside it, are not known).
inline unsigned trusted_positions(unsigned end, uint64_t ws, uint64_t ws_starts) {
  unsigned limit = end == 0 ? 0 : end - 1;
  if (end > 0 && ((ws >> (end - 1)) & 1))
    limit = std::min(limit, 64u - unsigned(__builtin_clzll(ws_starts & bits_below(end))));
  return limit;
}

// The pieces of the cl100k (O200k false) or o200k pattern at p[0..64). 64 bytes must be readable
// at p.
template <bool O200k, class Block>
inline BlockStarts piece_starts(const uint8_t* p) {
  Classes c = classify<O200k, Block>(p);
  unsigned end = block_end(c);
  uint64_t valid = bits_below(end);
  uint64_t letter = (c.upper | c.lower | c.caseless) & valid, digit = c.digit & valid, white = c.space & valid;
  uint64_t newline = c.newline & valid, blank = c.blank & valid;
  uint64_t other = ~(letter | digit | white | (c.high & ~c.wide_other)) & valid;
  uint64_t separate = white & ~newline;  // S
  // The byte before p counts as none of the classes: p is known to start a piece.

  // After a run of O, its piece takes the CR/LF bytes (o200k: and '/') that follow.
  uint64_t trailing = O200k ? ((newline | c.slash) & valid) : newline;
  uint64_t taken = fill_right(trailing & (other << 1) & ~other, trailing);
  // o200k: a '/' taken this way may be followed by other punctuation that starts a new piece;
  // rare enough to leave to the scanners.
  if (O200k && (taken & c.slash)) {
    unsigned at = unsigned(__builtin_ctzll(taken & c.slash));
    if (at < end) {
      end = at;
      valid = bits_below(end);
    }
  }

  // A single O (not after a space, not taken) or S before letters is the word's prefix. A
  // character of two or three bytes counts as one: the prefix is then the whole character, from
  // its first byte (a piece start) to its last (prefix_end, the byte before the letters).
  uint64_t cont = c.wide_cont & valid;
  uint64_t first_other = other & ~(other << 1) & ~(blank << 1) & ~taken;  // an O run's first byte
  uint64_t lone = first_other;  // its first character
  if (cont) lone = fill_right(first_other, first_other | cont);
  uint64_t prefix_end = (separate | lone) & (letter >> 1);
  uint64_t starts = first_bytes(prefix_end, cont);
  starts |= letter & ~(letter << 1) & ~(prefix_end << 1);
  if (O200k) starts |= c.upper & (c.lower << 1) & valid;  // "camelCase": a capital after a small letter

  // Digits: the run's start, then every third digit.
  uint64_t digit_starts = digit & ~(digit << 1);
  uint64_t four = digit & (digit << 1) & (digit << 2) & (digit << 3);
  for (uint64_t x = digit_starts; (x = (x << 3) & four);) digit_starts |= x;
  starts |= digit_starts;

  // Runs of O: at their start unless a space is before them.
  starts |= first_other;

  // Whitespace not taken by punctuation: the run's start, after its last CR/LF, its last byte in S.
  uint64_t ws = white & ~taken;
  uint64_t ws_starts = ws & ~(ws << 1);
  starts |= ws_starts;
  starts |= first_bytes(ws & separate & ~(ws >> 1), cont);  // (the first byte of the last character)
  // After a CR/LF, a run of S that reaches the end of the whitespace run starts a piece.
  for (uint64_t seeds = separate & ws & ((newline & ws) << 1); seeds; seeds &= seeds - 1) {
    unsigned k = unsigned(__builtin_ctzll(seeds));
    unsigned after = k + unsigned(__builtin_ctzll(~((separate & ws) >> k)));
    if (after >= 64 || !((newline >> after) & 1)) starts |= uint64_t(1) << k;
  }
  starts |= 1;
  return block_result(starts, trusted_positions(end, ws, ws_starts), end, c);
}

// GPT-2's pattern (r50k, p50k and the many byte-level BPE models that kept it):
//   '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
// Over ASCII without a contraction: a run of letters, of digits or of O starts a piece, or the
// space before it does (its only prefix); a run of whitespace starts a piece, and so does its
// last byte (`\s+(?!\S)` leaves it to the next piece, which it joins if it is a space).
template <class Block>
inline BlockStarts gpt2_starts(const uint8_t* p) {
  Classes c = classify<false, Block>(p);
  unsigned end = block_end(c);
  uint64_t valid = bits_below(end);
  uint64_t letter = (c.upper | c.lower) & valid, digit = c.digit & valid, white = c.space & valid;
  uint64_t blank = c.blank & valid;
  uint64_t other = ~(letter | digit | white | (c.high & ~c.wide_other)) & valid;
  uint64_t run_starts = (letter & ~(letter << 1)) | (digit & ~(digit << 1)) | (other & ~(other << 1));
  uint64_t ws_starts = white & ~(white << 1);
  uint64_t last_white = first_bytes(white & ~(white >> 1), c.wide_cont & valid);  // (its last character's first byte)
  uint64_t starts = (run_starts & ~(blank << 1)) | ws_starts | last_white | 1;
  return block_result(starts, trusted_positions(end, white, ws_starts), end, c);
}
inline BlockStarts gpt2_piece_starts(const uint8_t* p) { return gpt2_starts<Sse2Block>(p); }
inline BlockStarts cl100k_piece_starts(const uint8_t* p) { return piece_starts<false, Sse2Block>(p); }
inline BlockStarts o200k_piece_starts(const uint8_t* p) { return piece_starts<true, Sse2Block>(p); }
// The same with AVX-512BW, for processors where wide_blocks(). `flatten` inlines everything they
// call, so the AVX-512 instructions stay inside them (the rest of the library runs anywhere).
// Measured (session 15, one process switching between the two per call, best of 7, cached
// text): cl100k / o200k English +6-14% / +3-8%, code +6-14% / +4-10%, multilingual +2-6% / +2-4%.
TOKENFORGE_AVX512 __attribute__((flatten)) inline BlockStarts gpt2_piece_starts_wide(const uint8_t* p) { return gpt2_starts<Avx512Block>(p); }
TOKENFORGE_AVX512 __attribute__((flatten)) inline BlockStarts cl100k_piece_starts_wide(const uint8_t* p) { return piece_starts<false, Avx512Block>(p); }
TOKENFORGE_AVX512 __attribute__((flatten)) inline BlockStarts o200k_piece_starts_wide(const uint8_t* p) { return piece_starts<true, Avx512Block>(p); }
// The bytes of p[0..64) that belong to the letters the blocks know, of any case (bit k: p[k]; the
// ASCII letters and the two- and three-byte ones above): the byte-at-a-time scanners skip long
// runs of letters of other scripts with it.
template <class Block>
inline uint64_t letter_bytes(const uint8_t* p) {
  Classes c = classify<false, Block>(p);
  return c.upper | c.lower;
}
inline uint64_t letter_bytes_sse2(const uint8_t* p) { return letter_bytes<Sse2Block>(p); }
TOKENFORGE_AVX512 __attribute__((flatten)) inline uint64_t letter_bytes_wide(const uint8_t* p) { return letter_bytes<Avx512Block>(p); }
// The same for the three-byte letters without case (none next to a letter with case).
template <class Block>
inline uint64_t caseless_bytes(const uint8_t* p) {
  return classify<true, Block>(p).caseless;
}
inline uint64_t caseless_bytes_sse2(const uint8_t* p) { return caseless_bytes<Sse2Block>(p); }
TOKENFORGE_AVX512 __attribute__((flatten)) inline uint64_t caseless_bytes_wide(const uint8_t* p) { return caseless_bytes<Avx512Block>(p); }
// Whether the blocks are classified with AVX-512BW: where the processor and its operating system
// run it, unless TOKENFORGE_DISABLE_AVX512 is set (to 1) in the environment when first asked (the
// tests check the SSE2 path that way; a result never depends on it).
inline bool wide_blocks() {
  static const bool wide = [] {
    const char* off = std::getenv("TOKENFORGE_DISABLE_AVX512");
    if (off != nullptr && off[0] == '1') return false;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  }();
  return wide;
}
#else
// Without SSE2 the block path is not built; these only name the template arguments.
inline BlockStarts gpt2_piece_starts(const uint8_t*) { return {1, 0, false}; }
inline BlockStarts cl100k_piece_starts(const uint8_t*) { return {1, 0, false}; }
inline BlockStarts o200k_piece_starts(const uint8_t*) { return {1, 0, false}; }
inline BlockStarts gpt2_piece_starts_wide(const uint8_t*) { return {1, 0, false}; }
inline BlockStarts cl100k_piece_starts_wide(const uint8_t*) { return {1, 0, false}; }
inline BlockStarts o200k_piece_starts_wide(const uint8_t*) { return {1, 0, false}; }
inline uint64_t letter_bytes_sse2(const uint8_t*) { return 0; }
inline uint64_t letter_bytes_wide(const uint8_t*) { return 0; }
inline uint64_t caseless_bytes_sse2(const uint8_t*) { return 0; }
inline uint64_t caseless_bytes_wide(const uint8_t*) { return 0; }
inline bool wide_blocks() { return false; }
#endif

}  // namespace block_scan
}  // namespace tokenforge
