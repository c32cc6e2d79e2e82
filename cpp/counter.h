// Counting pre-tokens: the first half of training. Text is split on special tokens, then into
// pieces by a named split pattern's scanner (pretokenize.h), and every unique piece is counted in a
// flat hash table with 64-bit counts. Memory grows with the number of unique pieces, not with the
// amount of text: callers feed text in bounded chunks cut where no piece can straddle the cut.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "split_regex.h"
#include "special.h"

namespace tokenforge {

// The pre-token count: unique pieces -> counts. Open addressing; keys live back to back in an arena.
class PieceCounts {
 public:
  void add(const uint8_t* p, size_t n, uint64_t count);
  void add_all(const PieceCounts& other);
  size_t size() const { return size_; }
  void clear();

  // Calls f(bytes, length, count) for every unique piece, in table order.
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (!s.count) continue;
      const uint8_t* p;
      size_t n;
      key_of(s.ref, &p, &n);
      f(p, n, s.count);
    }
  }

 private:
  // 16 bytes per slot, at most 70% full: about 30 bytes per unique piece plus its bytes.
  struct Slot {
    uint64_t count = 0;  // 0: empty slot
    uint64_t ref = 0;    // arena offset, length and hash tag (see counter.cc)
  };
  void key_of(uint64_t ref, const uint8_t** p, size_t* n) const;
  void insert_new(uint64_t hash, const uint8_t* p, size_t n, uint64_t count);
  void grow();

  std::vector<Slot> slots_;
  std::string arena_;
  size_t size_ = 0;
};

// Splits text into pieces and counts them into a PieceCounts, with native threads.
class PieceCounter {
 public:
  // `split` may be null for a counter that only sums tables and finds cuts.
  PieceCounter(std::shared_ptr<const SplitRegex> split, std::vector<SpecialToken> specials);
  PieceCounter(SplitPattern pattern, std::vector<SpecialToken> specials)
      : PieceCounter(named_split_regex(pattern), std::move(specials)) {}

  // Counts s[0..n) as one stretch of text, with up to `threads` threads. The result is the same
  // as counting serially: the text is divided only at safe cuts (see next_cut).
  void count(const uint8_t* s, size_t n, size_t threads);
  // Counts each text on its own (pieces never cross from one text to the next).
  void count_each(const std::vector<std::pair<const uint8_t*, size_t>>& texts, size_t threads);
  // Adds a piece that the caller has split itself (custom patterns, counts given by the user).
  void add_piece(const uint8_t* p, size_t n, uint64_t count) { counts_.add(p, n, count); }

  // The largest / smallest c in (0, n) at which text may be cut without changing its pieces, or 0
  // if there is none: a cut by the rules of cut_at, else the end of a special token.
  size_t last_cut(const uint8_t* s, size_t n) const;
  size_t first_cut(const uint8_t* s, size_t n) const;

  PieceCounts& counts() { return counts_; }
  bool is_special(const uint8_t* p, size_t n) const;

 private:
  // Whether c is a safe cut: in GPT-2, cl100k and o200k a piece ends at c and the next starts there,
  // whatever text comes before or after, and the pieces before c do not depend on what follows it.
  //  - After a newline that follows a character other than whitespace and precedes a letter or a
  //    digit (any script): "x\nA", "。\n中", ".\n1". The newline run is that one character, so
  //    `\s++$`, `\s*[\r\n]` and `\s` all give "\n" (or punctuation + "\n"); no branch takes a newline
  //    into a letter or digit run; o200k's `[\r\n/]*` stops at a letter or digit.
  //  - Before a space between two ASCII letters: "a| b": the letter run ends at the space, and every
  //    pattern starts the next piece with " b...".
  // The newline rule is off when a special token contains a newline, the space rule when one
  // contains a space (a cut could then split a special token).
  bool cut_at(const uint8_t* s, size_t n, size_t c) const;
  // The smallest safe cut c >= from, or n.
  size_t next_cut(const uint8_t* s, size_t n, size_t from) const;
  void count_serial(const uint8_t* s, size_t n, PieceCounts& out) const;

  std::shared_ptr<const SplitRegex> split_;
  std::vector<SpecialToken> specials_;
  SpecialMatcher matcher_;
  std::vector<char> all_;
  bool newline_cuts_ = true;
  bool space_cuts_ = true;
  PieceCounts counts_;
};

}  // namespace tokenforge
