// Finding special tokens in text: longest match first, restricted to a caller's subset.
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

// A byte trie over the special tokens. `mask` selects the tokens a query considers (one char per
// token, in the order given to the constructor; nonzero = considered).
class SpecialMatcher {
 public:
  explicit SpecialMatcher(const std::vector<SpecialToken>& tokens);

  struct Match {
    size_t pos = 0, len = 0;
    int index = -1;  // -1: none
  };

  // The longest considered token starting exactly at i.
  Match match_at(const uint8_t* s, size_t n, size_t i, const std::vector<char>& mask) const;
  // The first position >= from where a considered token starts, with the longest token there.
  Match find_next(const uint8_t* s, size_t n, size_t from, const std::vector<char>& mask) const;
  bool empty() const { return nodes_.size() == 1; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int>> children;  // sorted by byte
    int token = -1;
  };
  int child(int node, uint8_t b) const;
  std::vector<Node> nodes_;
  bool first_byte_[256] = {};
};

}  // namespace tokenforge
