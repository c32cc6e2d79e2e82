// The BPE merge loop: the second half of training, over a pre-token count (counter.h).
//
// Every unique piece becomes a *word*: its token ids (first the byte values) and its count. At every
// step the most frequent adjacent pair of tokens, counted over all words weighted by their counts,
// is merged into a new token; ties go to the lexicographically greater pair of byte strings,
// comparing (left bytes, right bytes) (the CS336 convention). Tokens are identified by their bytes,
// as in the pure-Python reference: a merge whose bytes already are a token reuses that token.
//
// The loop is incremental:
//  - pair counts live in one table; a merge updates only the pairs next to its occurrences;
//  - each pair keeps the list of words it (may) occur in, appended to as pairs appear, never
//    pruned; a stale entry is harmless (the word is scanned and has no occurrence);
//  - a max-heap of (count, pair) with lazy invalidation: a popped entry whose count is out of date
//    is pushed back with the current count. Counts of existing pairs only fall, and every pair
//    whose count rises is pushed again, so the first up-to-date entry popped is the true maximum.
#pragma once
#include <cstddef>
#include <cstdint>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "counter.h"
#include "hash_maps.h"

namespace tokenforge {

struct TrainedMerge {
  uint32_t left, right, merged;
  bool is_new;  // false when the merged bytes already were a token
};

class BpeTrainer {
 public:
  // Merging stops after `max_new_tokens` new tokens, or when the most frequent pair occurs fewer
  // than `min_frequency` times (or no pair is left).
  BpeTrainer(size_t max_new_tokens, uint64_t min_frequency);

  void add_word(const uint8_t* p, size_t n, uint64_t count);
  void add_words(const PieceCounts& counts);
  // Builds the pair table, the word lists and the heap; call once, after the words.
  void start();
  // Performs merges until `n` more new tokens exist or training is done; returns how many.
  size_t step(size_t n);
  bool done() const { return done_; }

  const std::vector<TrainedMerge>& merges() const { return merges_; }
  const std::vector<std::string>& tokens() const { return tokens_; }  // id -> bytes
  size_t num_new_tokens() const { return tokens_.size() - 256; }
  size_t num_words() const { return word_count_.size(); }
  size_t num_pairs() const { return pair_left_.size(); }
  size_t heap_size() const { return heap_.size(); }

 private:
  struct Entry {
    uint64_t count;
    uint32_t pair;
  };
  struct Less {
    const BpeTrainer* t;
    bool operator()(const Entry& x, const Entry& y) const;
  };

  uint32_t pair_index(uint32_t left, uint32_t right);  // creates the pair if new
  void merge(uint32_t pair);
  void apply(uint32_t word, uint32_t a, uint32_t b, uint32_t z);
  inline void dec(uint32_t l, uint32_t r, uint64_t c);
  inline void inc(uint32_t l, uint32_t r, uint64_t c, uint32_t word);

  size_t max_new_tokens_;
  uint64_t min_frequency_;
  bool started_ = false, done_ = false;

  // Words: ids back to back; each word has a start, a current length and a count.
  std::vector<uint32_t> ids_;
  std::vector<uint64_t> word_start_;
  std::vector<uint32_t> word_len_;
  std::vector<uint64_t> word_count_;
  std::vector<uint32_t> word_stamp_;  // the merge step that last visited the word

  // Pairs: index -> left, right, count, words.
  PairMap pair_map_;
  std::vector<uint32_t> pair_left_, pair_right_;
  std::vector<uint64_t> pair_count_;
  std::vector<std::vector<uint32_t>> pair_words_;
  std::vector<uint32_t> pair_stamp_;  // the merge step that last raised the pair's count
  std::vector<uint32_t> raised_;      // pairs raised during the current merge
  uint32_t stamp_ = 0;

  std::priority_queue<Entry, std::vector<Entry>, Less> heap_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, uint32_t> token_id_;
  std::vector<TrainedMerge> merges_;
};

}  // namespace tokenforge
