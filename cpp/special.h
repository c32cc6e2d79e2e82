// Finding special tokens in text: the leftmost token, the longest one there, restricted to a
// caller's subset.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tokenforge {

struct SpecialToken {
  std::string bytes;
  uint32_t id;
};

// An Aho-Corasick automaton over the special tokens' bytes. One pass over the text finds, at each
// end position, the tokens ending there (via dictionary links), so the cost of a search does not
// grow with the number of special tokens or the length of the longest one, except that after a
// match the scan continues only while a longer token starting at or before it is still possible.
// `mask` selects the tokens a query considers (one char per token, in the order given to the
// constructor; nonzero = considered).
class SpecialMatcher {
 public:
  explicit SpecialMatcher(const std::vector<SpecialToken>& tokens);

  struct Match {
    size_t pos = 0, len = 0;
    int index = -1;  // -1: none
  };

  // The first position >= from where a considered token starts, with the longest token there.
  Match find_next(const uint8_t* s, size_t n, size_t from, const std::vector<char>& mask) const;
  bool empty() const { return nodes_.size() == 1; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int>> children;  // sorted by byte
    int token = -1;   // the token ending here
    int fail = 0;     // the longest proper suffix that is a prefix of some token
    int output = -1;  // the longest proper suffix that is a token (dictionary link)
    uint32_t depth = 0;
  };
  int child(int node, uint8_t b) const;
  int step(int node, uint8_t b) const;
  // The first position >= j where a token can start (n if none).
  size_t skip_to_start(const uint8_t* s, size_t n, size_t j) const;
  std::vector<Node> nodes_;
  bool first_byte_[256] = {};
  // The distinct first bytes when there are at most kFewStarts of them (the usual case: every
  // special token starts with '<'): the skip then compares 16 bytes at a time (or uses memchr
  // for one byte) instead of looking each byte up in first_byte_.
  static constexpr size_t kFewStarts = 4;
  uint8_t starts_[kFewStarts] = {};
  size_t num_starts_ = 0;
  // The distinct first two bytes of the tokens when there are at most kFewStarts of them (a token
  // of one byte gives its byte and any second): GPT-NeoX's runs of spaces start "  ", its other
  // tokens "<|" or "||", so the skip stops at a double space, not at every space (the one-byte
  // filter stopped at every word: a sixth of encoding its text). pair_any_[k]: any second byte.
  uint8_t pair_first_[kFewStarts] = {}, pair_second_[kFewStarts] = {};
  bool pair_any_[kFewStarts] = {};
  size_t num_pairs_ = 0;  // 0 (or more than kFewStarts): not used
};

}  // namespace tokenforge
