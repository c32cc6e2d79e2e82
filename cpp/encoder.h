// The encoder: special tokens, then the split pattern, then BPE on each piece; and decoding.
// Immutable after construction, so one Encoder serves any number of threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpe.h"
#include "pretokenize.h"
#include "special.h"

namespace tokenforge {

class Encoder {
 public:
  // `scanner` may be null when the caller splits text itself (a custom pattern) and only uses
  // encode_piece; `decoder` maps every id (mergeable and special) to its bytes.
  Encoder(std::unique_ptr<BytePairModel> model, PieceScanner scanner, std::vector<SpecialToken> specials,
          std::vector<std::pair<uint32_t, std::string>> decoder);

  bool can_split() const { return scanner_ != nullptr; }
  const std::vector<SpecialToken>& specials() const { return specials_; }

  // Splits and encodes text with no special-token handling.
  void encode_ordinary(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const;
  // Special tokens selected by `allowed` become their ids; the text between them is encoded
  // ordinarily, each stretch on its own (so `$` in a pattern sees the stretch's end).
  void encode(const uint8_t* s, size_t n, const std::vector<char>& allowed, std::vector<uint32_t>& out) const;
  void encode_piece(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const {
    model_->encode_piece(s, n, out);
  }
  // Piece boundaries (byte offsets of each piece's end) of ordinary text.
  void split(const uint8_t* s, size_t n, std::vector<size_t>& ends) const;
  // The first special token selected by `mask` anywhere in the text.
  SpecialMatcher::Match find_special(const uint8_t* s, size_t n, const std::vector<char>& mask) const {
    return matcher_.find_next(s, n, 0, mask);
  }
  // Appends the bytes of ids to out. On an unknown id returns false and sets *bad to its index.
  bool decode(const uint32_t* ids, size_t n, std::string& out, size_t* bad) const;
  bool token_bytes(uint32_t id, const char** p, size_t* len) const;
  const BytePairModel& model() const { return *model_; }

 private:
  std::unique_ptr<BytePairModel> model_;
  PieceScanner scanner_;
  std::vector<SpecialToken> specials_;
  SpecialMatcher matcher_;
  std::string decode_arena_;
  std::vector<uint64_t> decode_offset_;  // id -> start in arena; end is the next entry
  std::vector<char> decode_present_;
};

}  // namespace tokenforge
