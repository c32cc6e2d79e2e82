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

  // The calling thread's cache of piece -> ids, in two tiers. The hot tier is 131072 entries of 32
  // bytes (4 MiB): pieces of up to 16 bytes with up to 4 ids, whether tokens or merged (3 ids hold
  // most words of Cyrillic, Greek or accented Latin text; a fourth, packed into the top bytes of
  // the three, when all four are below 2^24: 18% of the pieces of Korean pages have four or more).
  // It had 32768 entries until session 15, when two threads taking turns on one core over the same
  // fresh slices measured 65536 at +1-5% on multilingual text (+9% on a second pass), English and
  // code unchanged; 131072 since session 27 (the same measure, 100,000-character slices: +0.3-3.6%
  // fresh, multilingual the most; 262144 and four times the victims gained nothing more). Its
  // entries carry an epoch that the cache gives to the model using it, so a switch to another
  // model invalidates them all without clearing (the table is cleared when the 16-bit epoch
  // wraps). It is direct-mapped (a second way tested on every hit cost more than the misses it
  // saved); an entry it evicts goes to 16384 victim entries (512 KiB), looked up by other bits of
  // its hash on a miss, and a victim found there swaps back. The big tier (bpe.cc), one for all
  // threads, holds merged pieces of up to 30 bytes and 6 ids, the thread's long tier longer ones.
  // cache() fetches the thread's cache and binds its hot tier to this model: call it once per
  // text, not per piece.
  struct HotEntry {
    uint64_t lo, hi;  // the key, as a ShortKey
    uint32_t tag;     // hot_tag(epoch, key length) [| kStretchTag] | count << 24; epoch 0: empty
    uint32_t ids[3];  // count 4: four 24-bit ids, the fourth in the top bytes (emit_ids)
  };
  static uint32_t hot_tag(uint16_t epoch, size_t len) { return epoch | uint32_t(len) << 16; }
  // The tag bit of a stretch of a cut piece (encode_cut), merged without the whole-piece lookup:
  // never mistaken for a piece of the same bytes.
  static constexpr uint32_t kStretchTag = uint32_t(1) << 23;
  // Whether hot or victim entry e holds key k for the tag hot_tag(epoch, k's length): the key, the
  // epoch and the length in one test (one branch, rarely mispredicted).
  static bool hot_matches(const HotEntry& e, const ShortKey& k, uint32_t tag) {
    return ((e.lo ^ k.lo) | (e.hi ^ k.hi) | ((e.tag ^ tag) & 0xFFFFFF)) == 0;
  }
  static constexpr size_t kHotEntries = 131072;
  static constexpr size_t kVictimEntries = 16384;
  struct CacheLine;
  struct LongLine;
  struct Tiers;  // the thread's long tier (bpe.cc; the big tier is the process's)
  struct Cache {
    uint64_t hot_model = 0;  // the serial of the model the current epoch belongs to
    uint16_t hot_epoch = 0;
    uint32_t unadded_marks = 0;  // pieces this thread marked merged, not yet counted (bpe.cc)
    // True while the thread encodes a text of a batch on several threads (BatchText).
    bool in_batch = false;
    // kHotEntries entries, then kVictimEntries entries the hot tier evicted (same epoch and
    // tags), zeroed, in one block of 2 MiB pages where the kernel gives them (huge_pages.h); in
    // the shared empty cache, a static block of zeros.
    HotEntry* hot;
    HotEntry* victims() const { return hot + kHotEntries; }
    std::unique_ptr<Tiers> tiers;  // null in the shared cache of threads that could not allocate one
    explicit Cache(bool allocate);
    ~Cache();
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;
  };
  Cache* cache() const;

  // While one lives (on: true), the calling thread encodes a text of a batch on several threads
  // (session 29). A piece a thread merges then enters the big tier at its first merge, not its
  // second: its next sighting is as often on another thread of the batch, whose hot tier has not
  // seen it, and that thread then finds it there instead of merging it again (the merges of pieces
  // the other thread had seen were most of the extra work of two threads: cachegrind, 8 MB of
  // English in batches of 1M characters, 520M instructions in the library on two threads against
  // 505M on one, 508M with this). One thread keeps the filter of pieces merged once (cached_merge).
  class BatchText {
   public:
    explicit BatchText(bool on);
    ~BatchText();
    BatchText(const BatchText&) = delete;
    BatchText& operator=(const BatchText&) = delete;

   private:
    Cache* cache_ = nullptr;
  };

  // Appends the ids of piece p[0..n), which lies in a buffer ending at `end` (a piece of up to 16
  // bytes is read as two words when 16 bytes are readable from p). In two steps, so that a loop
  // over pieces can prepare several pieces (key, hash, and a prefetch of the hot entry) before it
  // finishes them (hot tier, then the short tokens, the big tier, the merge loop): the hot entries'
  // memory accesses then overlap instead of stalling one piece at a time.
  struct PendingPiece {
    const uint8_t* p;
    size_t n;
    ShortKey k;
    uint64_t h;
  };
  void prepare_piece(const uint8_t* p, size_t n, const uint8_t* end, const Cache* cache, PendingPiece& q) const {
    q.p = p;
    q.n = n;
    if (n - 1 < ShortKey::kMaxLen) {  // 1 to 16 bytes (single bytes too: one path, no branch on n)
      q.k = short_key(p, n, end);
      q.h = hash_short(q.k);
      __builtin_prefetch(&cache->hot[hot_index(q.h)]);
      // The victim entry too, although only a piece the hot tier misses reads it (session 17:
      // the victim lookup was half of encode_short's samples; ab_builds.py 1.02-1.05 on English,
      // the ASCII and Latin lines, the multilingual corpus and code, cl100k and o200k).
      __builtin_prefetch(&cache->victims()[victim_index(q.h)]);
    }
  }
  void finish_piece(const PendingPiece& q, Cache* cache, std::vector<uint32_t>& out) const {
    size_t n = q.n;
    if (n - 1 < ShortKey::kMaxLen) {
      const HotEntry& e = cache->hot[hot_index(q.h)];
      if (hot_matches(e, q.k, hot_tag(cache->hot_epoch, n))) return emit_ids(e, out);
      return encode_short(q.p, q.k, q.h, cache, out);
    }
    if (n > 0) encode_long(q.p, n, cache, out);
  }
  void encode_piece(const uint8_t* p, size_t n, const uint8_t* end, Cache* cache, std::vector<uint32_t>& out) const {
    PendingPiece q;
    prepare_piece(p, n, end, cache, q);
    finish_piece(q, cache, out);
  }
  // The ids of a hot or victim entry: 1-3 as stored, or four of 24 bits with the fourth in the
  // top bytes (session 10: on a second pass over Korean pages 4% fewer instructions, about 6%
  // faster; the test on every hit costs nothing measurable on English).
  static void emit_ids(const HotEntry& e, std::vector<uint32_t>& out) {
    uint32_t count = e.tag >> 24;
    if (count == 4) {
      out.push_back(e.ids[0] & 0xFFFFFF);
      out.push_back(e.ids[1] & 0xFFFFFF);
      out.push_back(e.ids[2] & 0xFFFFFF);
      out.push_back(e.ids[0] >> 24 | (e.ids[1] >> 24) << 8 | (e.ids[2] >> 24) << 16);
      return;
    }
    out.push_back(e.ids[0]);
    if (count >= 2) {
      out.push_back(e.ids[1]);
      if (count == 3) out.push_back(e.ids[2]);
    }
  }
  static size_t hot_index(uint64_t h) { return (h >> 40) & (kHotEntries - 1); }  // other bits than the tables'
  static size_t victim_index(uint64_t h) { return (h >> 24) & (kVictimEntries - 1); }
  void encode_piece(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
    encode_piece(p, n, p + n, cache(), out);
  }

  // merge_long takes its radix queue for pieces of at least this many bytes (16,384; the tests set
  // less, to run it on pieces the reference merges quickly); returns the previous value.
  static size_t exchange_radix_heap_min(size_t bytes);

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
      if (len == 2) {  // the first merges of every piece: a direct table
        m->rank = m->merged = two_byte_token_[p[a] | (p[a + 1] << 8)];
        return m->rank != kNoToken;
      }
      if ((left | right) < kLowIds) {  // two frequent tokens: a direct table too
        uint32_t joined = low_pairs_[left * kLowIds + right];
        if (joined < kLowElsewhere) {
          m->rank = m->merged = joined;
          return true;
        }
        if (joined == kLowNone) return false;
        // (a joined token whose id does not fit in 16 bits: the lookup below)
      }
      bool found = len <= ShortKey::kMaxLen ? short_tokens_.find(short_key_unchecked(p + a, len), &m->rank)
                                            : long_tokens_.find(p + a, len, &m->rank);
      if (!found) return false;
      m->merged = m->rank;
      return true;
    }
    if ((left | right) < kLowIds) {  // two frequent tokens (low_merges_)
      uint32_t packed = low_merges_[left * kLowIds + right];
      if (packed < kLowMergeElsewhere) {
        m->rank = packed >> 16;
        m->merged = packed & 0xFFFF;
        return true;
      }
      if (packed == kLowMergeNone) return false;
      // (a rank or an id that does not fit in 16 bits: the pair table below)
    }
    const PairMap::Merge* found = pairs_.find(left, right);
    if (!found) return false;
    *m = *found;
    return true;
  }
  void encode_short(const uint8_t* p, const ShortKey& k, uint64_t h, Cache* cache, std::vector<uint32_t>& out) const;
  void encode_long(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const;
  void cached_merge(const uint8_t* p, size_t n, const ShortKey& k, uint64_t h, Cache* cache,
                    std::vector<uint32_t>& out, bool may_be_long_token) const;
  void merge(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;
  void merge_short(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;
  void merge_long(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;
  // The first part of p[i..n) the merge loops start from, its id in *id: a whole 2- or 3-byte
  // character when it may start as one token (below), else one byte. Returns its length.
  size_t first_part(const uint8_t* p, size_t i, size_t n, uint32_t* id) const {
    *id = byte_id_[p[i]];
    return p[i] < 0xC0 ? 1 : whole_character(p, i, n, id);
  }
  size_t whole_character(const uint8_t* p, size_t i, size_t n, uint32_t* id) const;  // (first_part's slow half)
  bool encode_cut(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const;
  bool encode_byte_cut(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const;
  void encode_stretch(const uint8_t* s, size_t len, const uint8_t* end, Cache* cache, std::vector<uint32_t>& out) const;
  void merge_in_stretches(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const;
  void find_joined_bytes(const std::vector<std::pair<uint32_t, std::string>>& tokens);
  void mark_joined_bytes(uint8_t a, uint8_t b) {
    size_t bit = size_t(a) << 8 | b;
    joined_bytes_[bit >> 6] |= uint64_t(1) << (bit & 63);
  }
  // Whether some merge may join byte a to the byte b after it (encode_byte_cut).
  bool bytes_may_join(uint8_t a, uint8_t b) const {
    size_t bit = size_t(a) << 8 | b;
    return joined_bytes_[bit >> 6] >> (bit & 63) & 1;
  }
  void find_joined_characters(const std::vector<std::pair<uint32_t, std::string>>& tokens);
  // Whether a 3-byte character (by its payload bits) and what follows or precedes it may lie side
  // by side in a token: a one-bit-per-key filter, so "maybe" when they never do is possible, "no"
  // when they do is not. The keys: two characters (joined_key), a character and the byte after it
  // (before_byte_key), a byte and the character after it (after_byte_key).
  static uint64_t joined_key(uint32_t left, uint32_t right) { return uint64_t(left) << 16 | right; }
  static uint64_t before_byte_key(uint32_t left, uint8_t next) { return uint64_t(1) << 32 | left << 8 | next; }
  static uint64_t after_byte_key(uint8_t prev, uint32_t right) { return uint64_t(2) << 32 | uint32_t(prev) << 16 | right; }
  void add_joined(uint64_t key) {
    uint64_t bit = (key * 0x9E3779B97F4A7C15ull) >> joined_shift_;
    joined_bits_[bit >> 6] |= uint64_t(1) << (bit & 63);
  }
  bool maybe_joined(uint64_t key) const {
    uint64_t bit = (key * 0x9E3779B97F4A7C15ull) >> joined_shift_;
    return joined_bits_[bit >> 6] >> (bit & 63) & 1;
  }
  void find_whole_characters(const std::vector<std::pair<uint32_t, std::string>>& tokens);
  void find_whole_characters_of_pairs(const std::vector<std::pair<uint32_t, std::string>>& tokens,
                                      const std::vector<MergeRule>& merges);
  // The two rules' shared steps: empty tables, and condition (c) for one token or merge of rank
  // `rank` that joins `part` (part_len bytes) to a neighbour ending in byte `prev` / starting with
  // byte `next`; parts that are not a character's first (last) byte or two change nothing.
  void clear_whole_characters();
  void lower_left_bound(uint8_t prev, const uint8_t* part, size_t part_len, uint32_t rank);
  void lower_right_bound(const uint8_t* part, size_t part_len, uint8_t next, uint32_t rank);

  std::string arena_;           // the bytes of the long tokens, back to back; long_tokens_ points into it
  ShortTokenMap short_tokens_;  // tokens of up to 16 bytes, bytes inline
  BytesMap long_tokens_;        // the longer ones
  PairMap pairs_;
  static constexpr uint32_t kNoToken = ~0u;
  std::vector<uint32_t> two_byte_token_;  // [b0 | b1 << 8]: the id of the token b0 b1, or kNoToken
  // The rank rule's merges of two tokens whose ids (ranks: the most frequent merges) are below
  // kLowIds: [left * kLowIds + right] -> the id of their bytes joined, kLowNone when they are not a
  // token, kLowElsewhere when its id needs more than 16 bits (then the token table answers);
  // 512 KiB, about half the merge loop's lookups of 3 bytes or more on text (build_low_pairs).
  static constexpr uint32_t kLowIds = 512;
  static constexpr uint16_t kLowNone = 0xFFFF, kLowElsewhere = 0xFFFE;
  std::vector<uint16_t> low_pairs_;
  // The pairs rule's table of the same pairs: the listed merge of (left, right) as rank << 16 |
  // merged id, kLowMergeNone when none, kLowMergeElsewhere when its rank or id needs more than 16
  // bits (then the pair table answers); 1 MiB, filled from the merges in priority order (the
  // first of a repeated pair).
  static constexpr uint32_t kLowMergeNone = 0xFFFFFFFF, kLowMergeElsewhere = 0xFFFFFFFE;
  std::vector<uint32_t> low_merges_;
  void build_low_pairs(const std::vector<std::pair<uint32_t, std::string>>& tokens);
  uint32_t byte_id_[256];
  // Whole characters (session 10, docs/design.md): characters whose bytes always become their own
  // token before any of their bytes merges with a neighbour's, so the merge loops may start from
  // that token. char2_/char3_: by the payload bits of a 2- / 3-byte sequence, the token and the
  // highest rank its own merges take (kNoToken: never whole). left_bound_[prev * 64 + lead - 0xC0]:
  // the lowest rank of a token ending in byte prev and a character's first byte (or its first two);
  // right_bound2_/3_[(last - 0x80) * 256 + next]: of a token starting with a 2- / 3-byte
  // character's last byte (or last two) and byte next. A character is whole where its own merges'
  // ranks are below the bounds of its neighbours. For the pairs rule the same tables hold the
  // listed merges' ranks (find_whole_characters_of_pairs).
  struct CharToken {
    uint32_t id, own_rank;
  };
  std::vector<CharToken> char2_, char3_;
  std::vector<uint32_t> left_bound_, right_bound2_, right_bound3_;
  // Cuts (session 12): 3-byte characters found beside another one, or beside a byte, in some token
  // (encode_cut).
  std::vector<uint64_t> joined_bits_;
  unsigned joined_shift_ = 64;
  // Byte cuts (session 25): a bit per pair of bytes (a << 8 | b) some merge may join; empty when
  // unknown (a merge rule of an id that is no token), and then no piece is cut (encode_byte_cut).
  std::vector<uint64_t> joined_bytes_;
  bool whole_piece_lookup_ = true;
  bool rank_rule_ = true;
  uint64_t serial_;  // tells this model's entries apart in the per-thread cache
};

}  // namespace tokenforge
