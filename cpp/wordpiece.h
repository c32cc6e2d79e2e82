// WordPiece (BERT) encoding of one word: greedy longest-match-first, as a walk down a byte trie.
//
// At the start of a word the longest vocabulary token that is a prefix of the word is taken; after
// that, the longest continuation token (one written with the prefix, "##" in BERT, matched without
// it). If at some point no token matches, or the word has more than `max_chars` characters, the
// whole word becomes the unknown token. This is Hugging Face's `models.WordPiece` exactly: its
// loop tries ever shorter substrings; the trie finds the same longest match in one pass.
//
// Vocabulary tokens are whole UTF-8 strings, so a match always ends on a character boundary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tokenforge {

class WordPieceModel {
 public:
  // tokens: (id, text) of the tokens that text may match (the caller leaves special tokens out);
  // unk_id is the unknown token's id. Returns nullptr and sets *error on an empty token.
  static std::unique_ptr<WordPieceModel> create(const std::vector<std::pair<uint32_t, std::string>>& tokens,
                                                const std::string& prefix, uint32_t unk_id, size_t max_chars,
                                                std::string* error);

  // Appends the ids of word w[0..n) (no whitespace inside; empty -> nothing).
  void encode_word(const uint8_t* w, size_t n, std::vector<uint32_t>& out) const;

 private:
  struct Node {
    int64_t token = -1;  // id of the token ending here, or -1
  };
  uint32_t child(uint32_t node, uint8_t b) const;  // 0 = none (the root is never a child)

  // Edges (node, byte) -> child in one open-addressing table.
  struct Edge {
    uint64_t key = ~0ull;
    uint32_t child = 0;
  };
  std::vector<Edge> edges_;

  std::vector<Node> nodes_;
  uint32_t root_ = 0, cont_root_ = 1;
  uint32_t unk_id_ = 0;
  size_t max_chars_ = 100;
};

}  // namespace tokenforge
