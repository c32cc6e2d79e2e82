#include "trainer.h"

#include <algorithm>
#include <utility>

namespace tokenforge {

BpeTrainer::BpeTrainer(size_t max_new_tokens, uint64_t min_frequency)
    : max_new_tokens_(max_new_tokens),
      min_frequency_(min_frequency < 1 ? 1 : min_frequency),
      heap_(Less{this}) {
  // Merging usually stops long before a huge max_new_tokens (no pair left): reserve a bounded amount.
  tokens_.reserve(256 + std::min<size_t>(max_new_tokens, size_t(1) << 16));
  for (int b = 0; b < 256; ++b) {
    tokens_.emplace_back(1, char(b));
    token_id_.emplace(tokens_.back(), uint32_t(b));
  }
}

bool BpeTrainer::Less::operator()(const Entry& x, const Entry& y) const {
  if (x.count != y.count) return x.count < y.count;
  const std::string& xl = t->tokens_[t->pair_left_[x.pair]];
  const std::string& yl = t->tokens_[t->pair_left_[y.pair]];
  int c = xl.compare(yl);  // std::char_traits<char>::compare orders bytes as unsigned char
  if (c != 0) return c < 0;
  return t->tokens_[t->pair_right_[x.pair]].compare(t->tokens_[t->pair_right_[y.pair]]) < 0;
}

void BpeTrainer::add_word(const uint8_t* p, size_t n, uint64_t count) {
  if (n < 2 || count == 0) return;  // a single byte has no pair: it can never take part in a merge
  word_start_.push_back(ids_.size());
  word_len_.push_back(uint32_t(n));
  word_count_.push_back(count);
  for (size_t i = 0; i < n; ++i) ids_.push_back(p[i]);
}

void BpeTrainer::add_words(const PieceCounts& counts) {
  ids_.reserve(ids_.size() + counts.size() * 8);
  counts.for_each([&](const uint8_t* p, size_t n, uint64_t c) { add_word(p, n, c); });
}

uint32_t BpeTrainer::pair_index(uint32_t left, uint32_t right) {
  if (const PairMap::Merge* m = pair_map_.find(left, right)) return m->rank;
  uint32_t idx = uint32_t(pair_left_.size());
  pair_map_.insert(left, right, {idx, 0});
  pair_left_.push_back(left);
  pair_right_.push_back(right);
  pair_count_.push_back(0);
  pair_words_.emplace_back();
  pair_stamp_.push_back(0);
  return idx;
}

void BpeTrainer::start() {
  if (started_) return;
  started_ = true;
  word_stamp_.assign(word_count_.size(), 0);
  for (uint32_t w = 0; w < word_count_.size(); ++w) {
    const uint32_t* ids = &ids_[word_start_[w]];
    for (uint32_t i = 0; i + 1 < word_len_[w]; ++i) {
      uint32_t p = pair_index(ids[i], ids[i + 1]);
      pair_count_[p] += word_count_[w];
      auto& words = pair_words_[p];
      if (words.empty() || words.back() != w) words.push_back(w);
    }
  }
  std::vector<Entry> entries;
  entries.reserve(pair_count_.size());
  for (uint32_t p = 0; p < pair_count_.size(); ++p) entries.push_back({pair_count_[p], p});
  heap_ = std::priority_queue<Entry, std::vector<Entry>, Less>(Less{this}, std::move(entries));
}

size_t BpeTrainer::step(size_t n) {
  start();
  size_t made = 0;
  while (made < n && !done_) {
    if (num_new_tokens() >= max_new_tokens_ || heap_.empty()) {
      done_ = true;
      break;
    }
    Entry top = heap_.top();
    heap_.pop();
    uint64_t current = pair_count_[top.pair];
    if (current != top.count) {  // out of date: counts only fall, so push the current one back
      if (current > 0) heap_.push({current, top.pair});
      continue;
    }
    if (current < min_frequency_) {
      done_ = true;
      break;
    }
    size_t before = tokens_.size();
    merge(top.pair);
    made += tokens_.size() - before;
  }
  return made;
}

inline void BpeTrainer::dec(uint32_t l, uint32_t r, uint64_t c) {
  pair_count_[pair_map_.find(l, r)->rank] -= c;  // every existing pair is in the table
}

inline void BpeTrainer::inc(uint32_t l, uint32_t r, uint64_t c, uint32_t word) {
  uint32_t p = pair_index(l, r);
  pair_count_[p] += c;
  auto& words = pair_words_[p];
  if (words.empty() || words.back() != word) words.push_back(word);
  if (pair_stamp_[p] != stamp_) {
    pair_stamp_[p] = stamp_;
    raised_.push_back(p);
  }
}

void BpeTrainer::merge(uint32_t pair) {
  ++stamp_;
  uint32_t a = pair_left_[pair], b = pair_right_[pair];
  std::string bytes = tokens_[a] + tokens_[b];
  uint32_t z;
  auto found = token_id_.find(bytes);
  bool is_new = found == token_id_.end();
  if (is_new) {
    z = uint32_t(tokens_.size());
    token_id_.emplace(bytes, z);
    tokens_.push_back(std::move(bytes));
  } else {
    z = found->second;
  }
  merges_.push_back({a, b, z, is_new});

  std::vector<uint32_t> words;
  words.swap(pair_words_[pair]);  // the pair is gone after this merge: free its list
  raised_.clear();
  for (uint32_t w : words) {
    if (word_stamp_[w] == stamp_) continue;
    word_stamp_[w] = stamp_;
    apply(w, a, b, z);
  }
  for (uint32_t p : raised_)
    if (pair_count_[p] > 0) heap_.push({pair_count_[p], p});
}

// Merges every occurrence of (a, b) in the word, left to right, into z, compacting the word in place,
// and updates the counts of exactly the pairs that change: the old pairs that touch an occurrence
// fall, the new pairs that touch a z rise.
void BpeTrainer::apply(uint32_t w, uint32_t a, uint32_t b, uint32_t z) {
  uint32_t* ids = &ids_[word_start_[w]];
  const size_t n = word_len_[w];
  const uint64_t c = word_count_[w];
  size_t i = 0, k = 0;
  size_t last_end = 0;     // the position just after the previous occurrence (0: none yet)
  uint32_t prev_old = 0;   // the original ids[i - 1] (the output may have overwritten it)
  bool prev_new = false;   // the last token written is a z made by this merge
  while (i < n) {
    uint32_t x = ids[i];
    if (i + 1 < n && x == a && ids[i + 1] == b) {
      dec(a, b, c);
      if (i > 0 && last_end != i) dec(prev_old, a, c);
      if (i + 2 < n) dec(b, ids[i + 2], c);
      if (k > 0) inc(ids[k - 1], z, c, w);
      ids[k++] = z;
      prev_new = true;
      prev_old = b;
      last_end = i + 2;
      i += 2;
    } else {
      if (prev_new) inc(z, x, c, w);
      prev_new = false;
      ids[k++] = x;
      prev_old = x;
      ++i;
    }
  }
  word_len_[w] = uint32_t(k);
}

}  // namespace tokenforge
