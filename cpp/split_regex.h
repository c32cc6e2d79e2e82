// The split-pattern engine: any split regex of the supported subset, compiled once, matched with
// the leftmost-first semantics of the `regex` module and tiktoken, in time linear in the text.
//
// Supported (anything else is refused with a message, and the caller falls back to `regex`):
//   alternation, groups (?:...) (...) (?P<name>...), literals and escapes (\t \n \r \f \v \a \xhh
//   \x{h..} \uhhhh \Uhhhhhhhh, escaped punctuation), `.`, classes [...] with ranges, negation,
//   \p{..}/\P{..} general categories (short or long names, gc=..., \pL), \s \S \d \D; the
//   quantifiers * + ? {n} {n,} {,m} {n,m}, greedy, lazy (?) and possessive (+, on a single
//   character or class); ^ \A $ \Z; lookahead (?=X) (?!X) of one character class; (?i:...) and a
//   leading (?i) for ASCII letters. Refused: backreferences, lookbehind, atomic groups, \w \b,
//   scripts (\p{Han}), other flags, loops whose body can match the empty string, and patterns
//   that can match the empty string at all.
//
// How it runs (docs/design.md, "The split-pattern engine"): each piece is found by an anchored
// Pike VM (threads in priority order, so the first thread to match wins exactly as a backtracking
// engine's first success would). Possessive quantifiers on one class become "leave the loop only
// if the next character is not in the class", and lookaheads of one class a test of the next
// character, so neither needs backtracking. A Pike VM search costs O(text looked at x program),
// but consecutive searches may look at the same text again; when the work passes a budget linear
// in the text, the rest of the text is matched by a backward dynamic program that computes, for
// every position at once, where the highest-priority match starting there ends (O(text x program)).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pretokenize.h"

namespace tokenforge {

// A set of code points: bit `key` of a 64-bit mask, where key = general category + White_Space
// (unicode.h char_key), except on explicit ranges of code points that carry their own mask.
class CharSet {
 public:
  static CharSet of_keys(uint64_t mask);
  static CharSet of_range(uint32_t lo, uint32_t hi);
  CharSet unite(const CharSet& other) const;
  CharSet complement() const;
  void finish();  // fills the ASCII bitmap; call before contains()
  bool contains(uint32_t cp) const {
    if (cp < 128) return (ascii_[cp >> 6] >> (cp & 63)) & 1;
    return contains_slow(cp);
  }
  // A canonical text form: two sets with the same form contain the same code points.
  std::string canonical() const;
  // Bounds (>= 128) where the explicit ranges start or end (lo, hi + 1), for the DFA's alphabet.
  void range_bounds(std::vector<uint32_t>& out) const;
  // Whether a code point >= 128 whose key is `key` and that lies in the same ranges as `rep` is in.
  bool contains_key(uint32_t rep, uint8_t key) const {
    bool covered;
    return (mask_at(rep, &covered) >> key) & 1;
  }

 private:
  struct Range {
    uint32_t lo, hi;
    uint64_t mask;
  };
  uint64_t mask_at(uint32_t cp, bool* covered) const;
  bool contains_slow(uint32_t cp) const;
  uint64_t mask_ = 0;
  std::vector<Range> ranges_;  // sorted, disjoint
  uint64_t ascii_[2] = {0, 0};
  bool ranges_above_ascii_ = false;
};

class SplitRegex {
 public:
  // Compiles `pattern`; on a pattern outside the supported subset (or an invalid one) returns
  // nullptr and sets *error.
  static std::unique_ptr<SplitRegex> compile(const std::string& pattern, std::string* error);
  ~SplitRegex() { delete[] bmp_symbols_.load(); }

  // Calls f(begin, end) with the byte offsets of every match in s[0..n), in order (text between
  // matches is not part of any piece, as with regex.finditer).
  template <class F>
  void for_each_match(const uint8_t* s, size_t n, F&& f) const {
    if (scanner_) return for_each_piece(scanner_, s, n, f);
    Search search(*this, s, n);
    size_t b, e;
    while (search.next(&b, &e)) f(b, e);
  }

  // The hand-written scanner run for this pattern when it is one of the named patterns (or means
  // the same), else null.
  PieceScanner scanner() const { return scanner_; }
  // The compiled program as text; equal programs match alike (the named-pattern check uses it).
  const std::string& canonical() const { return canonical_; }
  size_t program_size() const { return prog_.size(); }

  // Test hooks: force the engine even for named patterns, and the dynamic program from the start.
  void disable_scanner() { scanner_ = nullptr; }
  void set_force_backward(bool on) { force_backward_ = on; }
  void set_use_dfa(bool on) { use_dfa_ = on; }
  // Work units (thread steps and program steps) spent by searches since the counter was last set
  // (one counter for the process, added to at the end of each search: a test hook).
  static std::atomic<uint64_t>& work_counter();

 private:
  struct Inst {
    enum Op : uint8_t { kSet, kSplit, kJmp, kMatch, kAssert } op;
    uint8_t test = 0;  // kAssert: an AssertKind
    uint32_t x = 0, y = 0;  // next (kSet, kJmp, kAssert); preferred and other branch (kSplit)
    uint32_t set = 0;       // kSet, and kAssert on the next character
  };
  enum AssertKind : uint8_t { kBeginText, kEndOrFinalNewline, kEndText, kNextNotIn, kNextIn };

 public:
  struct Dfa;  // the lazy DFA (split_regex.cc), one per pattern and thread

  // The matches of a pattern that has no scanner, one at a time: while (search.next(&b, &e)) ...
  // (for_each_match's loop, for a caller that keeps its own state across matches).
  class Search {
   public:
    Search(const SplitRegex& re, const uint8_t* s, size_t n);
    bool next(size_t* begin, size_t* end);

   private:
    size_t match_at(size_t i);      // Pike VM anchored at i; npos if no match
    size_t match_at_dfa(size_t i);  // the same with the lazy DFA; kGiveUp when its cache is full
    size_t skip_dead_starts(size_t i);  // the next position from i > 0 where a match may start
    void add_thread(std::vector<uint32_t>& list, uint32_t pc, size_t pos);
    void run_backward(size_t from);
    bool test(const Inst& in, size_t pos) const;
    const SplitRegex& re_;
    const uint8_t* s_;
    size_t n_, pos_ = 0;
    uint64_t work_ = 0, budget_;
    bool backward_ = false;
    Dfa* dfa_ = nullptr;  // null when the DFA gave up for this search
    std::vector<size_t> starts_, ends_;  // backward mode: character starts and the match end at each
    size_t k_ = 0;
  };

 private:
  friend class RegexParser;
  void build_alphabet();
  static Dfa& dfa_for(const SplitRegex& re);
  uint32_t symbol_of(const uint8_t* s, size_t n, size_t pos, size_t* len) const;
  uint32_t symbol_of_code_point(uint32_t cp) const;  // (not ASCII)
  // symbol_of's answers for the code points U+0080..U+FFFF (2- and 3-byte characters), made on
  // first use (any thread; the first table stored wins); null when a symbol needs more than 16 bits.
  const uint16_t* bmp_symbols() const;
  mutable std::atomic<uint16_t*> bmp_symbols_{nullptr};
  std::vector<Inst> prog_;
  std::vector<CharSet> sets_;
  std::vector<uint32_t> order_;  // every pc, each after the pcs it reaches without reading a character
  uint32_t start_ = 0;
  PieceScanner scanner_ = nullptr;
  std::string canonical_;
  bool force_backward_ = false;
  bool use_dfa_ = true;
  uint64_t serial_ = 0;  // tells this pattern's DFA apart in the per-thread caches
  // The DFA's alphabet: ASCII bytes, then (segment, key) for other code points, where segments
  // cut the code points at every explicit range bound; then end of text and a final newline.
  std::vector<uint32_t> segment_bounds_;
  uint32_t num_symbols_ = 0, eof_symbol_ = 0, final_newline_symbol_ = 0;
  std::vector<uint8_t> member_;  // [set * num_symbols_ + symbol]
};

// The named pattern run by `pattern`'s scanner (compiled once, shared).
std::shared_ptr<const SplitRegex> named_split_regex(SplitPattern pattern);

}  // namespace tokenforge
