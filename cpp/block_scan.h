// The pieces of the GPT-2, cl100k and o200k patterns over 64 bytes at a time, as bit masks.
//
// The byte-at-a-time scanners decide one piece, then the next: every piece is a chain of
// dependent loads, compares and mispredicted branches. Over ASCII text the pattern's pieces can be
// decided for 64 bytes at once instead: the bytes' classes become 64-bit masks (bit k: byte p + k,
// four 16-byte SSE2 compares per class), and the positions where pieces start follow from the
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
// their two bytes decides (Latin-1's, Cyrillic's first 96 and, where case does not matter,
// U+0100..U+024F) count as letters, both bytes in the letter's class; the block stops before any
// other byte >= 0x80 (a letter, digit, space or mark of another script could change the piece)
// and before an apostrophe that could begin a contraction; those pieces, and the end of the text
// (`\s++$`), are left to the byte-at-a-time scanners. The callers check every piece against
// `regex` (tests/test_fast_paths.py).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace tokenforge {
namespace block_scan {

// What a block found: the piece starts at p[0..64) (bit 0: p, itself a piece start), how many
// leading positions have certain start bits (the pieces between two trusted starts can be
// emitted), and whether the block stopped within its first 16 bytes before a foreign byte (text
// of another script, mostly: the callers then scan the next 64 bytes the slow way).
struct BlockStarts {
  uint64_t starts;
  unsigned trusted;
  bool foreign_soon;
};

#ifdef __SSE2__
struct Classes {
  uint64_t upper, lower, digit, space, newline, high, apostrophe, contraction_letter, slash, blank;
  uint64_t foreign;  // the bytes >= 0x80 that are not part of a known two-byte letter
};

inline uint64_t mask_of(__m128i x) { return uint64_t(unsigned(_mm_movemask_epi8(x))); }

// Adds the two-byte letters at p[0..64) to c's letter classes (small ones to `lower` where case
// does not matter) and sets c.foreign to the other bytes >= 0x80. A letter is a lead byte followed
// by a continuation byte (0x80..0xBF) in the ranges below; a lead byte at p[63] is foreign (its
// second byte is outside the block).
//  - C3 xx: U+00C0..U+00FF, capitals below C3 9F and small letters from it, except C3 97 (×) and
//    C3 B7 (÷), which are symbols;
//  - D0 xx: U+0400..U+043F, capitals below D0 B0; D1 80..9F: U+0440..U+045F, small letters
//    (D1 A0..BF alternate between the cases and are left to the scanners);
//  - where case does not matter, C4..C9 xx and all of D1 xx: U+0100..U+024F and U+0440..U+047F,
//    all letters.
template <bool CaseMatters>
inline void add_two_byte_letters(const uint8_t* p, Classes& c) {
  uint64_t cont = 0, c3 = 0, d0 = 0, d1 = 0, c4_to_c9 = 0, symbol = 0, below_9f = 0, below_a0 = 0, below_b0 = 0;
  for (int part = 0; part < 4; ++part) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part));
    // Bytes in [0x80, b) for b >= 0x80: signed, those bytes are the only ones below b.
    auto below = [&](uint8_t b) { return mask_of(_mm_cmplt_epi8(v, _mm_set1_epi8(char(b)))); };
    auto equal = [&](uint8_t b) { return mask_of(_mm_cmpeq_epi8(v, _mm_set1_epi8(char(b)))); };
    unsigned shift = 16 * part;
    cont |= below(0xC0) << shift;
    c3 |= equal(0xC3) << shift;
    d0 |= equal(0xD0) << shift;
    d1 |= equal(0xD1) << shift;
    c4_to_c9 |= (below(0xCA) & ~below(0xC4)) << shift;
    symbol |= (equal(0x97) | equal(0xB7)) << shift;
    below_9f |= below(0x9F) << shift;
    below_a0 |= below(0xA0) << shift;
    below_b0 |= below(0xB0) << shift;
  }
  uint64_t latin1 = cont & ~symbol;  // the second bytes of C3's letters
  uint64_t known;
  if (CaseMatters) {
    uint64_t upper = (c3 & ((latin1 & below_9f) >> 1)) | (d0 & (below_b0 >> 1));
    uint64_t lower = (c3 & ((latin1 & ~below_9f) >> 1)) | (d0 & ((cont & ~below_b0) >> 1)) | (d1 & (below_a0 >> 1));
    upper |= upper << 1;
    lower |= lower << 1;
    c.upper |= upper;
    c.lower |= lower;
    known = upper | lower;
  } else {
    uint64_t letter = (c3 & (latin1 >> 1)) | ((c4_to_c9 | d0 | d1) & (cont >> 1));
    letter |= letter << 1;
    c.lower |= letter;
    known = letter;
  }
  c.foreign = c.high & ~known;
}

template <bool CaseMatters>
inline Classes classify(const uint8_t* p) {
  Classes c{};
  for (int part = 0; part < 4; ++part) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part));
    // The bytes in [lo, lo + count): shifted so that the range lands on -128.. and one signed
    // compare tests it (bytes >= 0x80 land on -128 + (0x80 - lo) .. and never in it for lo >= 9).
    auto range = [&](__m128i x, uint8_t lo, uint8_t count) {
      __m128i shifted = _mm_add_epi8(x, _mm_set1_epi8(char(0x80 - lo)));
      return mask_of(_mm_cmplt_epi8(shifted, _mm_set1_epi8(char(-128 + count))));
    };
    auto equal = [&](__m128i x, char b) { return mask_of(_mm_cmpeq_epi8(x, _mm_set1_epi8(b))); };
    unsigned shift = 16 * part;
    c.high |= mask_of(v) << shift;
    c.upper |= range(v, 'A', 26) << shift;
    c.lower |= range(v, 'a', 26) << shift;
    c.digit |= range(v, '0', 10) << shift;
    c.newline |= (equal(v, '\r') | equal(v, '\n')) << shift;
    c.space |= (range(v, '\t', 5) | equal(v, ' ')) << shift;  // White_Space in ASCII
    c.blank |= equal(v, ' ') << shift;
    c.apostrophe |= equal(v, '\'') << shift;
    if (CaseMatters) c.slash |= equal(v, '/') << shift;  // (only o200k's rules read it)
  }
  if (c.apostrophe) {  // (most blocks have none)
    for (int part = 0; part < 4; ++part) {
      __m128i folded = _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part)), _mm_set1_epi8(0x20));
      auto equal = [&](char b) { return mask_of(_mm_cmpeq_epi8(folded, _mm_set1_epi8(b))); };
      c.contraction_letter |= (equal('s') | equal('d') | equal('m') | equal('t') | equal('l') | equal('v') | equal('r'))
                              << (16 * part);
    }
  }
  c.foreign = c.high;
  if (c.high) add_two_byte_letters<CaseMatters>(p, c);
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
  return {starts, trusted, end < 16 && ((c.foreign >> end) & 1)};
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
template <bool O200k>
inline BlockStarts piece_starts(const uint8_t* p) {
  Classes c = classify<O200k>(p);
  unsigned end = block_end(c);
  uint64_t valid = bits_below(end);
  uint64_t letter = (c.upper | c.lower) & valid, digit = c.digit & valid, white = c.space & valid;
  uint64_t newline = c.newline & valid, blank = c.blank & valid;
  uint64_t other = ~(letter | digit | white | c.high) & valid;
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

  // A single O (not after a space, not taken) or a byte of S before letters is the word's prefix.
  uint64_t lone_other = other & ~(other << 1) & ~(blank << 1) & ~taken;
  uint64_t prefix = (separate | lone_other) & (letter >> 1);
  uint64_t starts = prefix;
  starts |= letter & ~(letter << 1) & ~(prefix << 1);
  if (O200k) starts |= c.upper & (c.lower << 1) & valid;  // "camelCase": a capital after a small letter

  // Digits: the run's start, then every third digit.
  uint64_t digit_starts = digit & ~(digit << 1);
  uint64_t four = digit & (digit << 1) & (digit << 2) & (digit << 3);
  for (uint64_t x = digit_starts; (x = (x << 3) & four);) digit_starts |= x;
  starts |= digit_starts;

  // Runs of O: at their start unless a space is before them.
  starts |= other & ~(other << 1) & ~(blank << 1) & ~taken;

  // Whitespace not taken by punctuation: the run's start, after its last CR/LF, its last byte in S.
  uint64_t ws = white & ~taken;
  uint64_t ws_starts = ws & ~(ws << 1);
  starts |= ws_starts;
  starts |= ws & separate & ~(ws >> 1);
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
inline BlockStarts gpt2_piece_starts(const uint8_t* p) {
  Classes c = classify<false>(p);
  unsigned end = block_end(c);
  uint64_t valid = bits_below(end);
  uint64_t letter = (c.upper | c.lower) & valid, digit = c.digit & valid, white = c.space & valid;
  uint64_t blank = c.blank & valid;
  uint64_t other = ~(letter | digit | white | c.high) & valid;
  uint64_t run_starts = (letter & ~(letter << 1)) | (digit & ~(digit << 1)) | (other & ~(other << 1));
  uint64_t ws_starts = white & ~(white << 1);
  uint64_t starts = (run_starts & ~(blank << 1)) | ws_starts | (white & ~(white >> 1)) | 1;
  return block_result(starts, trusted_positions(end, white, ws_starts), end, c);
}
inline BlockStarts cl100k_piece_starts(const uint8_t* p) { return piece_starts<false>(p); }
inline BlockStarts o200k_piece_starts(const uint8_t* p) { return piece_starts<true>(p); }
#else
// Without SSE2 the block path is not built; these only name the template arguments.
inline BlockStarts gpt2_piece_starts(const uint8_t*) { return {1, 0, false}; }
inline BlockStarts cl100k_piece_starts(const uint8_t*) { return {1, 0, false}; }
inline BlockStarts o200k_piece_starts(const uint8_t*) { return {1, 0, false}; }
#endif

}  // namespace block_scan
}  // namespace tokenforge
