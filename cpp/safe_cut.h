// Safe cuts in UTF-8 bytes: where a text may be cut without changing how the named split patterns
// (GPT-2, cl100k, o200k) split it into pieces. The byte form of streaming.safe_cut (see its
// docstring for why each place is safe), for the dataset reader that never decodes text to str.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tokenforge {

// The largest safe cut c with start <= c < end (c >= 1, and the characters that make it safe lie
// in s[0, end)), or 0 if there is none. Scans backwards from end, so the cost is about the length
// of text after the cut; a caller that found nothing in [start, end) can start at end next time.
// The three places: "a| b" (ASCII letters around a space); "x\n|b" (a non-space, a newline, an
// ASCII letter); "L|P" (a letter or digit, \p{L} or \p{N}, then a mark of a fixed punctuation list,
// the apostrophe excluded). Special tokens are not considered (ordinary encoding).
size_t safe_cut_bytes(const uint8_t* s, size_t start, size_t end);

// The same in code points: the largest safe cut c with start <= c < end, cp(i) giving code point i
// (i < end). Batches cut their long texts there (streaming.cut_long_texts).
size_t safe_cut_code_points(uint32_t (*cp)(const void* text, size_t i), const void* text, size_t start, size_t end);

}  // namespace tokenforge
