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

  // Appends the ids of piece p[0..n) to out. Short pieces go through a small per-thread cache
  // of recent results (frequent words stay in L2 instead of a miss in the big table each time).
  void encode_piece(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;

  bool lookup(const uint8_t* p, size_t n, uint32_t* id) const { return by_bytes_.find(p, n, id); }

 private:
  // The merge of adjacent parts p[a..b) (id left) and p[b..c) (id right), if any.
  bool find_merge(const uint8_t* p, size_t a, size_t c, uint32_t left, uint32_t right, PairMap::Merge* m) const {
    if (rank_rule_) {
      if (!by_bytes_.find(p + a, c - a, &m->rank)) return false;
      m->merged = m->rank;
      return true;
    }
    const PairMap::Merge* found = pairs_.find(left, right);
    if (!found) return false;
    *m = *found;
    return true;
  }
  void encode_uncached(const uint8_t* p, size_t n, uint64_t hash, std::vector<uint32_t>& out) const;
  void merge_short(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;
  void merge_long(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;

  std::string arena_;  // all token bytes, back to back; by_bytes_ points into it
  BytesMap by_bytes_;
  PairMap pairs_;
  uint32_t byte_id_[256];
  bool whole_piece_lookup_ = true;
  bool rank_rule_ = true;
  uint64_t serial_;  // tells this model's entries apart in the per-thread cache
};

}  // namespace tokenforge
