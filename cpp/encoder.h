// The encoder: special tokens, then the split pattern, then BPE on each piece; and decoding.
// Immutable after construction, so one Encoder serves any number of threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpe.h"
#include "split_regex.h"
#include "special.h"

namespace tokenforge {

class Encoder {
 public:
  // `split` may be null when the caller splits text itself (a pattern outside the engine's subset)
  // and only uses encode_piece; `decoder` maps every id (mergeable and special) to its bytes.
  Encoder(std::unique_ptr<BytePairModel> model, std::shared_ptr<const SplitRegex> split,
          std::vector<SpecialToken> specials, std::vector<std::pair<uint32_t, std::string>> decoder);

  bool can_split() const { return split_ != nullptr; }
  // Whether it splits with a named pattern (GPT-2, cl100k, o200k, or a pattern that means the
  // same): the patterns whose safe cuts (safe_cut.h) are proven.
  bool named_split() const;
  const std::vector<SpecialToken>& specials() const { return specials_; }

  // Splits and encodes text with no special-token handling.
  void encode_ordinary(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const;
  // Special tokens selected by `allowed` become their ids; the text between them is encoded
  // ordinarily, each stretch on its own (so `$` in a pattern sees the stretch's end).
  void encode(const uint8_t* s, size_t n, const std::vector<char>& allowed, std::vector<uint32_t>& out) const;
  void encode_piece(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const {
    model_->encode_piece(s, n, out);
  }
  // The ids of the pieces s[b..e) of text s[0..n) split elsewhere (a split sequence), in order.
  void encode_spans(const uint8_t* s, size_t n, const std::vector<std::pair<size_t, size_t>>& spans,
                    std::vector<uint32_t>& out) const;
  // The pieces of ordinary text as (begin, end) byte offsets.
  void split(const uint8_t* s, size_t n, std::vector<std::pair<size_t, size_t>>& spans) const;
  // The first special token selected by `mask` anywhere in the text.
  SpecialMatcher::Match find_special(const uint8_t* s, size_t n, const std::vector<char>& mask) const {
    return matcher_.find_next(s, n, 0, mask);
  }
  // Appends the bytes of ids to out. On an unknown id returns false and sets *bad to its index.
  bool decode(const uint32_t* ids, size_t n, std::string& out, size_t* bad) const;
  bool token_bytes(uint32_t id, const char** p, size_t* len) const;
  const BytePairModel& model() const { return *model_; }
  // The largest dense decoding table for num_tokens tokens (ids above it are looked up sparsely).
  static size_t dense_limit(size_t num_tokens);

 private:
  std::unique_ptr<BytePairModel> model_;
  std::shared_ptr<const SplitRegex> split_;
  std::vector<SpecialToken> specials_;
  SpecialMatcher matcher_;
  // Ids below dense_ids() index decode_offset_ directly (start in the arena; the end is the next
  // entry). The dense range is bounded by the number of tokens, not by the largest id, so a
  // vocabulary with a few huge ids (a special token at 4e9) costs memory for its tokens only;
  // ids above it are in decode_sparse_, sorted, found by binary search.
  struct SparseEntry {
    uint32_t id;
    uint64_t start, len;
  };
  size_t dense_ids() const { return decode_present_.size(); }
  std::string decode_arena_;
  std::vector<uint64_t> decode_offset_;
  std::vector<char> decode_present_;
  std::vector<SparseEntry> decode_sparse_;
};

}  // namespace tokenforge
