// SentencePiece-style models: the normalizer of a .model file (precompiled charsmap + whitespace
// rules), the unigram model (Viterbi, sampling, the training E-step) and sentencepiece's BPE over
// characters, with byte fallback. Exact to the `sentencepiece` package, id for id; the pure-Python
// oracle is src/tokenforge/spm/reference.py. No Python here; bindings/core.cpp wraps it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hash_maps.h"

namespace tokenforge {
namespace spm {

// sentencepiece's ModelProto.SentencePiece.Type.
enum PieceType : uint8_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
enum class Algorithm { kUnigram = 1, kBpe = 2 };

struct NormalizerSpec {
  std::string charsmap;  // precompiled charsmap blob; empty = identity
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
  bool treat_whitespace_as_suffix = false;
};

// A byte trie over the pieces as a double array (as sentencepiece's darts): the child of node by
// byte b is unit base(node) + b if that unit's check is node. Each unit also carries the id and
// score of the piece ending there (id -1: none), so a Viterbi step touches one 16-byte unit.
class PieceTrie {
 public:
  struct Key {
    std::string_view bytes;  // points into the caller's strings, which outlive build()
    int32_t id;
    float score;
  };
  // Duplicated keys: the first wins. Empty keys are ignored.
  void build(const std::vector<Key>& keys);
  int32_t child(int32_t node, uint8_t b) const {
    const size_t next = size_t(units_[size_t(node)].base) + b;
    return units_[next].check == node ? int32_t(next) : -1;
  }
  int32_t id(int32_t node) const { return units_[size_t(node)].id; }
  // Length of the longest key that is a prefix of s[0, n), 0 if none.
  size_t longest_prefix(const uint8_t* s, size_t n) const {
    size_t best = 0;
    int32_t node = 0;
    for (size_t k = 0; k < n; ++k) {
      node = child(node, s[k]);
      if (node < 0) break;
      if (id(node) >= 0) best = k + 1;
    }
    return best;
  }
  float score(int32_t node) const { return units_[size_t(node)].score; }

 private:
  struct Unit {
    int32_t base = 0;
    int32_t check = -1;
    int32_t id = -1;
    float score = 0;
  };
  std::vector<Unit> units_ = std::vector<Unit>(257);
};

// sentencepiece's Normalizer::Normalize: longest-prefix rules from a darts-clone double array,
// then the whitespace rules (see src/tokenforge/spm/normalizer.py for the narrated version).
class Normalizer {
 public:
  // Returns false (and sets *error) on a malformed charsmap. user_defined: pieces that are copied
  // as they are, never normalized (sentencepiece's user-defined symbols), longest first.
  bool init(const NormalizerSpec& spec, const std::vector<std::string>& user_defined, std::string* error);
  void normalize(const uint8_t* s, size_t n, std::string& out) const;

 private:
  // Length of input consumed; *rep/*rep_len the replacement.
  size_t step(const uint8_t* s, size_t n, const char** rep, size_t* rep_len) const;
  NormalizerSpec spec_;
  std::vector<uint32_t> units_;
  std::string strings_;
  PieceTrie user_;  // user-defined symbols
  bool has_user_ = false;
  bool plain_[128];  // ASCII bytes that no rule starts with: copied as they are
};

struct Piece {
  std::string bytes;
  float score = 0;
  uint8_t type = kNormal;
};

// Piece bytes -> id, for sentencepiece's BPE (which keeps a hash map of the pieces: a merge looks
// up the concatenation of two symbols; a trie makes those walks incremental but costs more to build
// than the rest of loading). A slot is 8 bytes (the id and 32 bits of the key's seeded hash), so
// 32k pieces take 512 KiB; where those bits agree, the key is checked against the piece's length
// and first 8 bytes, kept in two compact arrays (reading the piece itself missed the cache), and
// only a longer key compares the rest. Building computes every hash first and prefetches each
// key's slot a few keys ahead: inserting one key after the other waited on memory.
class PieceMap {
 public:
  // The pieces ids[0], ids[1], ... by their bytes; of equal bytes, the first wins. Returns false
  // when some bytes were equal.
  bool build(const std::vector<Piece>& pieces, const std::vector<uint32_t>& ids);
  // The id of the piece s[0, n), or -1. `pieces` is the vector given to build().
  int32_t find(const std::vector<Piece>& pieces, const uint8_t* s, size_t n) const {
    if (slots_.empty()) return -1;
    const uint64_t head = head_of(s, n);
    const uint64_t h = hash(head, s, n);
    const uint32_t tag = tag_of(h);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.tag == 0) return -1;
      if (slot.tag == tag && keys_[slot.id].len == n && keys_[slot.id].head == head &&
          (n <= 8 || std::memcmp(pieces[slot.id].bytes.data() + 8, s + 8, n - 8) == 0))
        return int32_t(slot.id);
    }
  }

 private:
  struct Slot {
    uint32_t tag = 0;  // 0: empty
    uint32_t id = 0;
  };
  static uint32_t tag_of(uint64_t h) { return uint32_t(h >> 32) | 1; }
  // The first min(n, 8) bytes of s, zero-padded.
  static uint64_t head_of(const uint8_t* s, size_t n) {
    uint64_t w = 0;
    if (n >= 8) {
      std::memcpy(&w, s, 8);
    } else if (n >= 4) {  // two overlapping 4-byte reads
      uint32_t lo, hi;
      std::memcpy(&lo, s, 4);
      std::memcpy(&hi, s + n - 4, 4);
      w = lo | uint64_t(hi) << (8 * (n - 4));
    } else if (n > 0) {
      w = s[0] | uint64_t(s[n / 2]) << (8 * (n / 2)) | uint64_t(s[n - 1]) << (8 * (n - 1));
    }
    return w;
  }
  // The seeded hash of s[0, n) whose head_of is `head`: one keyed multiply for up to 8 bytes (most
  // merge candidates), hash_bytes for longer keys.
  static uint64_t hash(uint64_t head, const uint8_t* s, size_t n) {
    if (n > 8) return hash_bytes(s, n);
    return hash_mum(head ^ kHashSecret.s0, uint64_t(n) ^ kHashSecret.s1);
  }
  struct Key {
    uint64_t head = 0;        // head_of the piece's bytes
    uint64_t len = SIZE_MAX;  // its length (ids not in the map: SIZE_MAX, no key has it)
  };
  std::vector<Slot> slots_;
  std::vector<Key> keys_;  // by id
};

// A span of normalized text and the id it became (the unknown id for unknown characters).
struct Span {
  uint32_t begin, end, id;
};

class Model {
 public:
  // pieces: shared, not copied (a parsed .model file keeps them to answer for their texts).
  // unreserved: if not null, the pieces other than unknown, control and byte ones by their bytes,
  // all different (a parsed .model file has made it to check that): a BPE model uses it as it is.
  static std::unique_ptr<Model> create(std::shared_ptr<const std::vector<Piece>> pieces, Algorithm algorithm,
                                       bool byte_fallback, const NormalizerSpec& normalizer, std::string* error,
                                       std::shared_ptr<const PieceMap> unreserved = nullptr);

  void normalize(const uint8_t* s, size_t n, std::string& out) const { normalizer_.normalize(s, n, out); }
  // Normalizes and encodes: the ids of sentencepiece's `encode`.
  void encode(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const;
  // Encodes normalized text (spans in normalized bytes), before byte fallback.
  void segment(const uint8_t* s, size_t n, std::vector<Span>& out) const;
  // Byte fallback, or one unknown per run of unknowns: sentencepiece's post-processing.
  void spans_to_ids(const uint8_t* s, const std::vector<Span>& spans, std::vector<uint32_t>& out) const;
  // Unigram only: one segmentation drawn with probability proportional to exp(alpha * score).
  void sample(const uint8_t* s, size_t n, double alpha, std::mt19937_64& rng, std::vector<Span>& out) const;

  // Training (unigram). For each word (normalized bytes) with its frequency: adds freq * the
  // expected count of each piece to counts (size = number of pieces); returns sum freq * log Z.
  double expected_counts(const std::vector<std::string>& words, const std::vector<double>& freqs,
                         std::vector<double>& counts) const;
  // freq-weighted Viterbi counts per piece, and the summed frequency of the words whose best
  // segmentation contains each piece (used to prune).
  void viterbi_counts(const std::vector<std::string>& words, const std::vector<double>& freqs,
                      std::vector<double>& counts, std::vector<double>& word_freq) const;

  // For each piece, the ids of its best segmentation into other pieces (empty if none): what
  // removing it would cost, for pruning.
  std::vector<std::vector<int32_t>> alternatives() const;

  size_t size() const { return pieces_->size(); }
  int32_t unk_id() const { return unk_id_; }

 private:
  struct Arc {
    uint32_t begin, end;
    int32_t id;
    float score;
  };
  void viterbi(const uint8_t* s, size_t n, std::vector<Span>& out) const;
  void bpe(const uint8_t* s, size_t n, std::vector<Span>& out) const;
  void bpe_word(const uint8_t* s, size_t n, std::vector<Span>& out) const;
  void lattice(const uint8_t* s, size_t n, std::vector<Arc>& arcs) const;  // arcs in (begin, end) order
  // Calls f(end, id, score) for every piece that starts at s[start], shortest first (a walk down
  // the trie); returns whether one of them is the single character of mblen bytes there (if not,
  // the caller adds an unknown arc over it).
  template <class F>
  bool for_each_piece_at(const uint8_t* s, size_t n, size_t start, size_t mblen, F&& f) const {
    bool single = false;
    int32_t node = 0;
    for (size_t k = start; k < n; ++k) {
      node = trie_.child(node, s[k]);
      if (node < 0) break;
      const int32_t id = trie_.id(node);
      if (id < 0) continue;
      f(k + 1, id, trie_.score(node));
      if (k + 1 - start == mblen) single = true;
    }
    return single;
  }
  // BPE: the id of the piece s[0, n) (normal or user-defined; the first of duplicates), or -1
  int32_t bpe_id(const uint8_t* s, size_t n) const { return bpe_pieces_->find(*pieces_, s, n); }
  float bpe_score(int32_t id) const { return bpe_scores_[size_t(id)]; }

  std::shared_ptr<const std::vector<Piece>> pieces_;
  Algorithm algorithm_ = Algorithm::kUnigram;
  Normalizer normalizer_;
  PieceTrie trie_;  // unigram: the Viterbi lattice walks it
  std::shared_ptr<const PieceMap> bpe_pieces_;  // BPE: the normal and user-defined pieces
  std::vector<float> bpe_scores_;                // BPE: their scores by id, as the trie would hold them
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  // BPE: the text is merged word by word (repeated words from a cache), a word ending before each
  // `▁` whose preceding character never precedes a `▁` in a piece (before_space_ lists those that
  // do: Mistral's and Llama's runs `▁▁` ... put `▁` there, Gemma 3's `>▁</` puts `>`): no merge can
  // make a symbol across such a place, so each side merges as if alone.
  bool words_independent_ = false;
  std::vector<std::string> before_space_;  // the characters (UTF-8) that precede a `▁` in a piece
  bool has_user_ = false;  // user-defined pieces: whole symbols in BPE (user_), bonus scores in unigram
  PieceTrie user_;
  uint64_t serial_ = 0;  // unique per model: keys the per-thread word caches (addresses are reused)
  int32_t byte_ids_[256];
  int32_t ascii_ids_[128];  // BPE: the piece of each ASCII character, or -1 (most first symbols)
  float min_score_ = 0, max_score_ = 0;
};

// Training seeds: every substring of 2..max_chars characters of each word (UTF-8) with no `▁`
// after its first character, counted (freq-weighted); of those counted at least min_count times,
// the top_k by count x length in characters, best first (ties: bytes ascending), with that score.
std::vector<std::pair<std::string, double>> count_substrings(const std::vector<std::string>& words,
                                                             const std::vector<double>& freqs, size_t max_chars,
                                                             double min_count, size_t top_k);

}  // namespace spm
}  // namespace tokenforge
