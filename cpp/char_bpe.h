// Character-level BPE (Sennrich et al. 2016): a word is split into characters, word markers are
// added, and ranked merges join adjacent symbols. Also the trainer shared with WordPiece.
//
// Markers: an end-of-word marker ("</w>") and an optional start-of-word marker. Attached (Sennrich's
// subword-nmt and Hugging Face's `end_of_word_suffix`): the marker is glued to the last (first)
// character, "e</w>" is one initial symbol. Separate (the tutorials' `</eow>`): the marker is a
// symbol of its own that merges like any other.
//
// Encoding is Hugging Face's `models.BPE` merge loop exactly: a heap of (rank, position), lowest
// rank first, leftmost on ties; an initial symbol that is not in the vocabulary becomes its byte
// tokens (byte_fallback) or the unknown token (one per character, or one per run with fuse_unk),
// which, as in Hugging Face's code, is added when the next known character (or the end) comes: after
// the byte tokens of characters in between.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hash_maps.h"

namespace tokenforge {

struct CharBpeConfig {
  std::string end_marker;    // "" = none
  std::string start_marker;  // "" = none
  bool attached = true;
  int64_t unk_id = -1;       // -1: no unknown token (an unknown character is an error, or dropped)
  // Hugging Face's models.BPE options (models/bpe.py runs Llama-2-style tokenizer.json files here):
  bool byte_fallback = false;  // an unknown character becomes its <0xNN> tokens, if all exist
  bool fuse_unk = false;       // a run of unknown characters becomes one unknown token
  bool drop_unknown = false;   // without an unknown token, an unknown character is dropped (not an error)
};

class CharBpeModel {
 public:
  // tokens: (id, text) for the vocabulary (special tokens excluded); merges: (left, right, merged)
  // ids in rank order.
  static std::unique_ptr<CharBpeModel> create(const std::vector<std::pair<uint32_t, std::string>>& tokens,
                                              const std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>& merges,
                                              const CharBpeConfig& config, std::string* error);

  // The same in two steps, for merges read by their tokens' texts (bindings: a tokenizer.json's
  // merges looked up in the model's own table): create() without merges, then add_merges() once.
  bool token_id(std::string_view text, uint32_t* id) const {
    return by_text_.find(reinterpret_cast<const uint8_t*>(text.data()), text.size(), id);
  }
  void add_merges(const uint32_t* rules, size_t count);  // (left, right, merged) triples in rank order

  // Appends the ids of word w[0..n). Returns false (and sets *bad to the byte offset of the
  // character) if a character is unknown and there is no unknown token.
  bool encode_word(const uint8_t* w, size_t n, std::vector<uint32_t>& out, size_t* bad) const;

 private:
  void merge(std::vector<uint32_t>& symbols) const;
  static constexpr size_t kShortWord = 24;  // up to this many symbols: the scan, not the heap
  std::string arena_;
  BytesMap by_text_;
  PairMap pairs_;
  CharBpeConfig config_;
  int64_t byte_ids_[256];  // byte_fallback: the id of "<0xNN>" per byte, -1 if none
  int64_t ascii_ids_[128];  // the id of each ASCII character's token, -1 if none
  int64_t start_id_ = -1, end_id_ = -1;  // separate markers
};

// ------------------------------------------------------------------------------------------------
// Training over a pre-token count: words as sequences of initial symbol ids with counts.
//
// Each step merges one pair everywhere (left to right, non-overlapping) and records it:
//  - kCount (BPE): the pair with the highest count;
//  - kWordPiece: the highest count / (count of left * count of right), exact in integers, ties by
//    the higher count.
// Remaining ties: the smaller (left text, right text), bytewise (= code point order). A merge's
// token is left + right, with `strip_prefix` ("##") removed from the right part when it starts with
// it. A pair whose joined text would contain a marker across the join is never merged (so a marker
// typed literally in the text never becomes a token). A merge whose text is already a token reuses
// that token's id. Stops after `max_new_tokens` new tokens, or when no pair reaches min_frequency.
struct TrainerConfig {
  enum Score { kCount = 0, kWordPiece = 1 } score = kCount;
  uint64_t min_frequency = 1;
  size_t max_new_tokens = 0;
  std::vector<std::string> markers;
  std::string strip_prefix;
};

struct TrainerResult {
  std::vector<std::string> new_tokens;  // ids continue after the initial symbols
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> merges;
};

TrainerResult train_pairs(std::vector<std::string> symbols, std::vector<std::vector<uint32_t>> words,
                          const std::vector<uint64_t>& counts, const TrainerConfig& config);

}  // namespace tokenforge
