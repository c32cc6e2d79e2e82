// Byte-pair encoding of one piece: the model side of the pipeline.
//
// A piece starts as one token per byte; the adjacent pair with the lowest merge rank is merged
// (the leftmost one on ties) until no adjacent pair is mergeable. Two merge rules exist:
//  - kRanks (tiktoken): a pair is mergeable when its concatenation is a token; the rank is that
//    token's id. A piece that is itself a token is emitted whole without merging.
//  - kPairs (Hugging Face / merges.txt): only the listed merges apply, ranked by list position;
//    the whole-piece shortcut is optional (HF's `ignore_merges`).
// tiktoken's rule looks up the concatenated bytes (they are contiguous in the piece), so it needs
// no pair table; the pair rule uses a table (left id, right id) -> (rank, merged id).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hash_maps.h"

namespace tokenforge {

struct MergeRule {
  uint32_t left, right, merged;
};

class BytePairModel {
 public:
  // tokens: (id, bytes) for every mergeable token. With empty `merges` the kRanks rule applies
  // (rank = id); otherwise `merges` lists the mergeable pairs in priority order (kPairs).
  // Every single byte must be a token. On bad input returns nullptr and sets *error.
  static std::unique_ptr<BytePairModel> create(const std::vector<std::pair<uint32_t, std::string>>& tokens,
                                               const std::vector<MergeRule>& merges,
                                               bool whole_piece_lookup, std::string* error);

  // The calling thread's cache of piece -> ids (bpe.cc). Fetch it once per text, not per piece.
  struct Cache;
  static Cache* thread_cache();

  // Appends the ids of piece p[0..n), which lies in a buffer ending at `end` (a piece of up to 16
  // bytes is read as two words when 16 bytes are readable from p). A piece that is a token is
  // found by one lookup in the table of short tokens; other pieces go through `cache`, then the
  // merge loop.
  void encode_piece(const uint8_t* p, size_t n, const uint8_t* end, Cache* cache, std::vector<uint32_t>& out) const {
    if (n == 1) {
      out.push_back(byte_id_[p[0]]);
      return;
    }
    if (n == 0) return;
    if (n <= ShortKey::kMaxLen) {
      ShortKey k = short_key(p, n, end);
      uint64_t h = hash_short(k);
      uint32_t id;
      if (whole_piece_lookup_ && short_tokens_.find(k, h, &id)) {
        out.push_back(id);
        return;
      }
      return encode_short_miss(p, k, h, cache, out);
    }
    encode_long(p, n, cache, out);
  }
  void encode_piece(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
    encode_piece(p, n, p + n, thread_cache(), out);
  }

  bool lookup(const uint8_t* p, size_t n, uint32_t* id) const {
    if (n == 0) return false;
    if (n <= ShortKey::kMaxLen) return short_tokens_.find(short_key(p, n, p + n), id);
    return long_tokens_.find(p, n, id);
  }

 private:
  // The merge of adjacent parts p[a..c) = (id left) + (id right), if any. For the rank rule, 16
  // bytes must be readable from p + a (the merge loops work on a padded copy of the piece).
  bool find_merge(const uint8_t* p, size_t a, size_t c, uint32_t left, uint32_t right, PairMap::Merge* m) const {
    if (rank_rule_) {
      size_t len = c - a;
      bool found = len <= ShortKey::kMaxLen ? short_tokens_.find(short_key_unchecked(p + a, len), &m->rank)
                                            : long_tokens_.find(p + a, len, &m->rank);
      if (!found) return false;
      m->merged = m->rank;
      return true;
    }
    const PairMap::Merge* found = pairs_.find(left, right);
    if (!found) return false;
    *m = *found;
    return true;
  }
  void encode_short_miss(const uint8_t* p, const ShortKey& k, uint64_t h, Cache* cache,
                         std::vector<uint32_t>& out) const;
  void encode_long(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const;
  void merge(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;
  void merge_short(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;
  void merge_long(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;

  std::string arena_;           // the bytes of the long tokens, back to back; long_tokens_ points into it
  ShortTokenMap short_tokens_;  // tokens of up to 16 bytes, bytes inline
  BytesMap long_tokens_;        // the longer ones
  PairMap pairs_;
  uint32_t byte_id_[256];
  bool whole_piece_lookup_ = true;
  bool rank_rule_ = true;
  uint64_t serial_;  // tells this model's entries apart in the per-thread cache
};

}  // namespace tokenforge
