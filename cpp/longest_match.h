// Greedy longest match over bytes (RWKV's "world" tokenizer): at each position, the longest
// vocabulary token the text's bytes start with. Every single byte must be a token.
//
// A trie walk asks one table per byte, each lookup waiting for the one before; with RWKV's 65k
// tokens that table is megabytes, beyond the few megabytes of fast memory, so the walk waited on
// memory at every byte (27 MB/s on English). Here every prefix of every token is a key of its own,
// the bytes themselves: the lookups for the prefixes of lengths 3..8 at a position do not depend on
// each other, so their slots are asked for together and wait on memory about once. Prefixes of one
// and two bytes are direct tables (256 and 65,536 entries); longer than eight bytes, the prefix's
// own bytes are hashed and compared.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tokenforge {

class LongestMatchModel {
 public:
  // tokens: (id, bytes), ids below 2^31, bytes non-empty, distinct and at most kMaxLength long (a
  // token costs a table entry per byte: a hostile file must not make one of megabytes), every single
  // byte among them. Returns nullptr and sets *error otherwise.
  static constexpr size_t kMaxLength = 1 << 16;
  static std::unique_ptr<LongestMatchModel> create(const std::vector<std::pair<uint32_t, std::string>>& tokens,
                                                   std::string* error);

  // Appends the ids of s[0..n).
  void encode(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const;

 private:
  // A prefix's entry: the token it is (id + 1; 0 if none) in the low 31 bits, and whether a longer
  // token starts with it in the top bit.
  static constexpr uint32_t kLonger = 0x80000000u;
  struct Short {  // a prefix of 3..8 bytes: its bytes little-endian, zero-padded
    uint64_t bytes = 0;
    uint32_t entry = 0;
    uint32_t length = 0;  // 0: an empty slot
  };
  struct Long {  // a prefix of more than 8 bytes: its hash, and where its bytes are (in arena_)
    uint64_t hash = 0;
    uint32_t entry = 0;
    uint32_t length = 0;  // 0: an empty slot
    uint32_t at = 0;
  };
  uint32_t find(const uint8_t* s, size_t length) const;  // a prefix's entry (0: not a prefix)
  uint32_t find_long(const uint8_t* s, size_t length) const;
  void add(const std::string& token, size_t length, uint32_t entry, uint32_t at);
  void compact();

  uint32_t one_[256] = {};
  std::vector<uint32_t> two_;  // 65,536 entries, by the first byte + 256 * the second
  std::vector<Short> short_;
  std::vector<Long> long_;
  std::string arena_;  // the bytes of the tokens longer than 8 bytes, each once
  size_t max_length_ = 0;
};

}  // namespace tokenforge
