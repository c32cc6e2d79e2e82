// Standalone tests of the C++ core (no Python): scanners, BPE, special tokens, robustness on
// arbitrary bytes. Built by CMake with -DTOKENFORGE_CORE_TESTS=ON, also under ASan and UBSan
// (-DTOKENFORGE_SANITIZE=ON); .ci/run runs both.
#include <algorithm>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "encoder.h"
#include "hash_maps.h"
#include "longest_match.h"
#include "tests/check.h"

using namespace tokenforge;


static std::vector<std::string> pieces(SplitPattern p, const std::string& text) {
  std::vector<std::string> out;
  auto s = reinterpret_cast<const uint8_t*>(text.data());
  for_each_piece(scanner_for(p), s, text.size(), [&](size_t b, size_t e) { out.push_back(text.substr(b, e - b)); });
  return out;
}

static void test_scanners() {
  using V = std::vector<std::string>;
  CHECK((pieces(SplitPattern::kGpt2, "Hello world's  end  ") == V{"Hello", " world", "'s", " ", " end", "  "}));
  CHECK((pieces(SplitPattern::kCl100k, "I'M 12345 ok\n\n  x") == V{"I", "'M", " ", "123", "45", " ok", "\n\n", " ", " x"}));
  CHECK((pieces(SplitPattern::kO200k, "HelloWorld don't /a\n/") == V{"Hello", "World", " don't", " /", "a", "\n", "/"}));
  CHECK((pieces(SplitPattern::kO200k, "x\n\n  ") == V{"x", "\n\n", "  "}));   // \s*[\r\n]+ before \s+(?!\S)
  CHECK((pieces(SplitPattern::kCl100k, "x\n\n  ") == V{"x", "\n\n  "}));       // \s++$ first
  CHECK(pieces(SplitPattern::kGpt2, "").empty());
}

// Every scanner must cover any byte string exactly, with no empty piece, whatever the bytes.
static void test_scanners_on_arbitrary_bytes() {
  std::mt19937 rng(42);
  for (int round = 0; round < 2000; ++round) {
    std::string text(rng() % 64, '\0');
    for (char& c : text) c = char(rng() % 4 == 0 ? rng() % 256 : " \t\n\ra'sZ9\xc3\xa9\xe4\xb8\xad\xf0\x9f"[rng() % 16]);
    for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kCl100k, SplitPattern::kO200k}) {
      std::string joined;
      for (const auto& piece : pieces(p, text)) {
        CHECK(!piece.empty());
        joined += piece;
      }
      CHECK(joined == text);
    }
  }
}

// The 64-byte mask path of the named patterns (block_scan.h) must cut long texts exactly where the
// byte-at-a-time scanner alone does, whatever the bytes (under ASan its 64-byte loads are checked).
static void test_block_scan_matches_scanner() {
  std::mt19937 rng(7);
  // (the last five bytes: "é" and "中", left out of the mostly-ASCII texts)
  const char alphabet[] = " \t\n\r\x0b\x0c" "a'sdlvZQqx9.,/!-\x1c\x00\x7f" "\xc3\xa9\xe4\xb8\xad";
  for (int round = 0; round < 3000; ++round) {
    std::string text(64 + rng() % 400, '\0');
    bool mostly_ascii = round % 3 != 0;
    for (char& ch : text) ch = alphabet[rng() % (mostly_ascii ? sizeof(alphabet) - 6 : sizeof(alphabet) - 1)];
    auto s = reinterpret_cast<const uint8_t*>(text.data());
    for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kCl100k, SplitPattern::kO200k}) {
      PieceScanner scan = scanner_for(p);
      std::vector<size_t> fast, slow;
      for_each_piece(scan, s, text.size(), [&](size_t, size_t e) { fast.push_back(e); });
      for (size_t i = 0; i < text.size(); i = scan(s, text.size(), i)) slow.push_back(scan(s, text.size(), i));
      CHECK(fast == slow);
    }
  }
}

static std::unique_ptr<Encoder> tiny_encoder() {
  std::vector<std::pair<uint32_t, std::string>> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(b, std::string(1, char(b)));
  tokens.emplace_back(256, "ab");
  tokens.emplace_back(257, "abab");
  tokens.emplace_back(258, "  ");
  std::string error;
  auto model = BytePairModel::create(tokens, {}, true, &error);
  CHECK(model != nullptr);
  std::vector<SpecialToken> specials = {{"<|e|>", 300}, {"<|e|><|e|>", 301}};
  auto decoder = tokens;
  for (const auto& s : specials) decoder.emplace_back(s.id, s.bytes);
  return std::make_unique<Encoder>(std::move(model), named_split_regex(SplitPattern::kGpt2), specials, decoder);
}

static void test_bpe_and_specials() {
  auto enc = tiny_encoder();
  auto encode = [&](const std::string& t, bool allow) {
    std::vector<uint32_t> out;
    std::vector<char> mask(2, allow ? 1 : 0);
    enc->encode(reinterpret_cast<const uint8_t*>(t.data()), t.size(), mask, out);
    return out;
  };
  CHECK((encode("ababab", false) == std::vector<uint32_t>{257, 256}));
  CHECK((encode("x<|e|><|e|>y", true) == std::vector<uint32_t>{'x', 301, 'y'}));
  // A long piece (heap path) gives the same as the same piece cut to short ones would by rule.
  std::string long_piece;
  for (int i = 0; i < 300; ++i) long_piece += "ab";
  auto ids = encode(long_piece, false);
  CHECK(ids.size() == 150);
  for (uint32_t id : ids) CHECK(id == 257);
  std::string spaces(1001, ' ');
  auto sp = encode(spaces, false);
  std::string decoded;
  size_t bad = 0;
  CHECK(enc->decode(sp.data(), sp.size(), decoded, &bad));
  CHECK(decoded == spaces);
  uint32_t unknown[] = {1, 9999};
  CHECK(!enc->decode(unknown, 2, decoded, &bad) && bad == 1);
}

// Whole characters (bpe.cc): the merge loops start a 2- or 3-byte character as its token only
// where that changes nothing. Vocabularies of byte strings cut anywhere from text of multi-byte
// characters (across characters too) in random rank order, so tokens joining part of a character
// to its neighbour rank below the character's own merges; pieces of every length (the scan and the
// heap) against the tutorials' loop written plainly, on raw bytes (under ASan: the bound tables'
// indices).
static std::vector<uint32_t> plain_bpe(const std::map<std::string, uint32_t>& ranks, const std::string& piece) {
  auto whole = ranks.find(piece);
  if (whole != ranks.end()) return {whole->second};
  std::vector<std::string> parts;
  for (char c : piece) parts.emplace_back(1, c);
  for (;;) {
    size_t best = 0;
    uint32_t best_rank = ~0u;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = ranks.find(parts[i] + parts[i + 1]);
      if (it != ranks.end() && it->second < best_rank) best_rank = it->second, best = i;
    }
    if (best_rank == ~0u) break;
    parts[best] += parts[best + 1];
    parts.erase(parts.begin() + long(best) + 1);
  }
  std::vector<uint32_t> ids;
  for (const auto& part : parts) ids.push_back(ranks.at(part));
  return ids;
}

static void test_whole_characters_match_plain_bpe() {
  const std::vector<std::string> chars = {"\xd0\xb0", "\xd0\x94", "\xd0\xb6", "\xce\xa9", "\xc3\xa9",
                                          "\xe4\xb8\xad", "\xe3\x83\xbc", "\xed\x95\x9c", " ", "b"};
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::string source;
    for (int i = 0; i < 200; ++i) source += chars[rng() % chars.size()];
    std::vector<std::pair<uint32_t, std::string>> tokens;
    std::map<std::string, uint32_t> ranks;
    for (int b = 0; b < 256; ++b) ranks[std::string(1, char(b))] = uint32_t(b);
    std::vector<std::string> cuts;
    for (int i = 0, count = 5 + int(rng() % 300); i < count; ++i)
      cuts.push_back(source.substr(rng() % (source.size() - 1), 2 + rng() % 5));
    std::shuffle(cuts.begin(), cuts.end(), rng);
    for (const auto& cut : cuts) ranks.emplace(cut, uint32_t(ranks.size()));
    for (const auto& [bytes, rank] : ranks) tokens.emplace_back(rank, bytes);
    std::string error;
    auto model = BytePairModel::create(tokens, {}, true, &error);
    CHECK(model != nullptr);
    for (int t = 0; t < 40; ++t) {
      std::string piece;
      for (int i = 0, n = 1 + int(rng() % 30); i < n; ++i) piece += chars[rng() % chars.size()];
      if (rng() % 4 == 0) piece.insert(rng() % (piece.size() + 1), 1, char(0x80 + rng() % 0x80));  // a stray byte
      std::vector<uint32_t> ids;
      model->encode_piece(reinterpret_cast<const uint8_t*>(piece.data()), piece.size(), ids);
      CHECK(ids == plain_bpe(ranks, piece));
    }
  }
}

static void test_bad_model() {
  std::string error;
  std::vector<std::pair<uint32_t, std::string>> tokens = {{0, "a"}};
  CHECK(BytePairModel::create(tokens, {}, true, &error) == nullptr);
  CHECK(error.find("byte") != std::string::npos);
  std::vector<std::pair<uint32_t, std::string>> all;
  for (int b = 0; b < 256; ++b) all.emplace_back(b == 10 ? 0xFFFFFFFFu : uint32_t(b), std::string(1, char(b)));
  CHECK(BytePairModel::create(all, {}, true, &error) == nullptr);  // 2^32 - 1 is the "no token" marker
  CHECK(error.find("reserved") != std::string::npos);
}

// Pieces of every length at the very end of an exactly sized heap buffer (so that AddressSanitizer
// sees any read past it: short pieces are read as two words when 16 bytes are readable), encoded by
// two models in turn in which the same pieces have different ids: the per-thread cache (hot tier
// and big tier) must answer for the model that asks, and every length must come out right.
static void test_piece_cache_and_buffer_ends() {
  auto make = [](bool permuted, std::vector<std::pair<uint32_t, std::string>> extra) {
    std::vector<std::pair<uint32_t, std::string>> tokens;
    for (int b = 0; b < 256; ++b) tokens.emplace_back(permuted ? 255 - b : b, std::string(1, char(b)));
    for (auto& t : extra) tokens.push_back(t);
    std::string error;
    auto model = BytePairModel::create(tokens, {}, true, &error);
    CHECK(model != nullptr);
    return std::make_unique<Encoder>(std::move(model), named_split_regex(SplitPattern::kGpt2),
                                     std::vector<SpecialToken>{}, tokens);
  };
  auto a = make(false, {{256, "ab"}, {257, "abab"}});
  auto b = make(true, {{300, "ab"}});
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 1; k <= 40; ++k) {
      std::string text;
      for (size_t i = 0; i < k; ++i) text += "ab";
      std::unique_ptr<uint8_t[]> exact(new uint8_t[text.size()]);
      std::memcpy(exact.get(), text.data(), text.size());
      std::vector<uint32_t> got_a, got_b, want_a, want_b;
      a->encode_ordinary(exact.get(), text.size(), got_a);
      b->encode_ordinary(exact.get(), text.size(), got_b);
      for (size_t i = 0; i < k / 2; ++i) want_a.push_back(257);  // "ab" merges first, then "abab"
      if (k % 2) want_a.push_back(256);
      want_b.assign(k, 300);
      CHECK(got_a == want_a);
      CHECK(got_b == want_b);
      std::string one = text.substr(0, 1);  // a one-byte piece at the end
      std::unique_ptr<uint8_t[]> single(new uint8_t[1]);
      single[0] = uint8_t(one[0]);
      std::vector<uint32_t> ids;
      b->encode_ordinary(single.get(), 1, ids);
      CHECK((ids == std::vector<uint32_t>{255 - uint32_t('a')}));
    }
  }
}

// Huge, sparse ids (a special token at 2^32 - 2) are decoded through the sparse table; memory does
// not grow with the largest id. Of two entries for one id the first wins, dense or sparse.
static void test_sparse_ids() {
  std::vector<std::pair<uint32_t, std::string>> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(b, std::string(1, char(b)));
  tokens.emplace_back(3000000000u, "ab");
  std::string error;
  auto model = BytePairModel::create(tokens, {}, true, &error);
  CHECK(model != nullptr);
  std::vector<SpecialToken> specials = {{"<|x|>", 4294967294u}, {"<|y|>", 5000}, {"<|z|>", 4294967294u}};
  auto decoder = tokens;
  for (const auto& s : specials) decoder.emplace_back(s.id, s.bytes);
  Encoder enc(std::move(model), named_split_regex(SplitPattern::kGpt2), specials, decoder);
  uint32_t ids[] = {'a', 3000000000u, 4294967294u, 5000, 300};
  std::string out;
  size_t bad = 0;
  CHECK(!enc.decode(ids, 5, out, &bad) && bad == 4);
  out.clear();
  CHECK(enc.decode(ids, 4, out, &bad) && out == "aab<|x|><|y|>");
  uint32_t missing[] = {2999999999u, 4294967293u, 4294967295u};
  for (uint32_t id : missing) CHECK(!enc.decode(&id, 1, out, &bad));
  std::vector<uint32_t> enc_out;
  std::string text = "abab";
  enc.encode_ordinary(reinterpret_cast<const uint8_t*>(text.data()), text.size(), enc_out);
  CHECK((enc_out == std::vector<uint32_t>{3000000000u, 3000000000u}));
}

// The split-pattern engine: each named pattern compiled and run by the lazy DFA, the Pike VM and the
// backward program gives the hand-written scanner's pieces on arbitrary bytes (invalid UTF-8
// included); custom patterns agree across the three engines.
static std::vector<std::pair<size_t, size_t>> spans_of(const SplitRegex& re, const std::string& text) {
  std::vector<std::pair<size_t, size_t>> out;
  re.for_each_match(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                    [&](size_t b, size_t e) { out.emplace_back(b, e); });
  return out;
}

static std::unique_ptr<SplitRegex> engine(const std::string& pattern, int mode) {
  std::string error;
  auto re = SplitRegex::compile(pattern, &error);
  if (!re) return nullptr;
  re->disable_scanner();
  if (mode == 1) re->set_use_dfa(false);
  if (mode == 2) re->set_force_backward(true);
  return re;
}

static void test_split_engine() {
  std::mt19937 rng(7);
  const char* alphabet[] = {"a", "B", " ", "\n", "\r", "'", "s", "1", "/", "\xc3\xa9", "\xe4\xb8\xad", "\xcc\x81",
                            "\xe3\x80\x80", "\xff", "\xc3", "\t", "!", "\xf0\x9f\x98\x80"};
  std::vector<std::string> texts;
  for (int k = 0; k < 400; ++k) {
    std::string t;
    int len = int(rng() % 30);
    for (int j = 0; j < len; ++j) t += alphabet[rng() % (sizeof(alphabet) / sizeof(*alphabet))];
    texts.push_back(t);
  }
  for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kCl100k, SplitPattern::kO200k}) {
    auto named = named_split_regex(p);
    CHECK(named && named->scanner() == scanner_for(p));
    for (int mode = 0; mode < 3; ++mode) {
      std::string error;
      std::string source = p == SplitPattern::kGpt2 ? "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
                                                    : "";
      if (source.empty()) continue;
      auto re = engine(source, mode);
      CHECK(re != nullptr);
      for (const auto& t : texts) CHECK(spans_of(*re, t) == spans_of(*named, t));
    }
  }
  for (const char* pattern : {"(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
                              "a*b|a|[^a]", "(a|aa)+b|.", "\\s++$|\\S+?\\s|x{2,3}+"}) {
    auto dfa = engine(pattern, 0), vm = engine(pattern, 1), back = engine(pattern, 2);
    CHECK(dfa && vm && back);
    if (!dfa || !vm || !back) continue;
    for (const auto& t : texts) {
      auto expected = spans_of(*back, t);
      CHECK(spans_of(*dfa, t) == expected);
      CHECK(spans_of(*vm, t) == expected);
    }
  }
  std::string error;
  CHECK(!SplitRegex::compile("(?<=a)b", &error) && !error.empty());
  CHECK(!SplitRegex::compile("a*", &error));
}

// The three hash maps against std::map, through growth from the initial 16 slots, with duplicate
// inserts (refused, the first value kept) and absent keys; short tokens also after finish() (the
// Bloom filter must not hide a key).
static void test_hash_maps() {
  std::mt19937 rng(7);
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i) {
    std::string k(1 + rng() % 40, '\0');
    for (char& c : k) c = char('a' + rng() % 3);  // a small alphabet: many duplicates and shared prefixes
    keys.push_back(k);
  }
  std::map<std::string, uint32_t> oracle;
  ShortTokenMap short_map;
  BytesMap bytes_map;
  PairMap pair_map;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> pair_oracle;
  for (uint32_t i = 0; i < keys.size(); ++i) {
    const std::string& k = keys[i];
    auto p = reinterpret_cast<const uint8_t*>(k.data());
    bool fresh = oracle.emplace(k, i).second;
    CHECK(bytes_map.insert(p, uint32_t(k.size()), i) == fresh);
    if (k.size() <= ShortKey::kMaxLen) CHECK(short_map.insert(short_key(p, k.size(), p + k.size()), i) == fresh);
    uint32_t l = rng() % 64, r = rng() % 64;
    bool fresh_pair = pair_oracle.emplace(std::make_pair(l, r), i).second;
    CHECK(pair_map.insert(l, r, {i, i + 1}) == fresh_pair);
  }
  CHECK(bytes_map.size() == oracle.size());
  CHECK(pair_map.size() == pair_oracle.size());
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) short_map.finish();
    for (const std::string& k : keys) {
      for (const std::string& probe : {k, k + "d"}) {  // present, absent
        auto p = reinterpret_cast<const uint8_t*>(probe.data());
        auto it = oracle.find(probe);
        uint32_t v = ~0u;
        CHECK(bytes_map.find(p, probe.size(), &v) == (it != oracle.end()));
        if (it != oracle.end()) CHECK(v == it->second);
        if (probe.size() <= ShortKey::kMaxLen) {
          v = ~0u;
          CHECK(short_map.find(short_key(p, probe.size(), p + probe.size()), &v) == (it != oracle.end()));
          if (it != oracle.end()) CHECK(v == it->second);
        }
      }
    }
  }
  for (uint32_t l = 0; l < 70; ++l)
    for (uint32_t r = 0; r < 70; ++r) {
      auto it = pair_oracle.find({l, r});
      const PairMap::Merge* m = pair_map.find(l, r);
      CHECK((m != nullptr) == (it != pair_oracle.end()));
      if (m && it != pair_oracle.end()) CHECK(m->rank == it->second && m->merged == it->second + 1);
    }
  BytesMap reserved;
  reserved.reserve(1000);
  CHECK(reserved.insert(reinterpret_cast<const uint8_t*>("abc"), 3, 5) && reserved.size() == 1);
  reserved.reserve(5000);  // keeps what is there
  uint32_t v = 0;
  CHECK(reserved.find(reinterpret_cast<const uint8_t*>("abc"), 3, &v) && v == 5 && reserved.size() == 1);
}

// Greedy longest match (cpp/longest_match.h) against the rule written plainly, on random bytes over
// a small alphabet and random vocabularies with tokens up to 20 bytes (past the 8-byte keys), and
// at the ends of buffers (ASan sees any read past them).
static void test_longest_match() {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::pair<uint32_t, std::string>> tokens;
    std::map<std::string, uint32_t> by_bytes;
    for (int b = 0; b < 256; ++b) by_bytes[std::string(1, char(b))] = uint32_t(b);
    const size_t extra = 1 + rng() % 60;
    for (size_t k = 0; k < extra; ++k) {
      std::string t(2 + rng() % 19, '\0');
      for (char& c : t) c = "ab\0\xe4"[rng() % 4];
      by_bytes.emplace(t, uint32_t(by_bytes.size()));
    }
    for (const auto& [t, id] : by_bytes) tokens.emplace_back(id, t);
    std::string error;
    auto model = LongestMatchModel::create(tokens, &error);
    CHECK(model != nullptr);
    if (!model) continue;
    size_t longest = 0;
    for (const auto& [t, id] : by_bytes) longest = std::max(longest, t.size());
    for (int text_round = 0; text_round < 5; ++text_round) {
      // tokens run together (long ones must appear), cut short somewhere, and stray bytes
      std::string joined;
      while (joined.size() < 80) {
        if (rng() % 4 == 0)
          joined += "ab\0\xe4" "c"[rng() % 5];
        else
          joined += tokens[256 + rng() % (tokens.size() - 256)].second.substr(0, 1 + rng() % 20);
      }
      const size_t n = rng() % joined.size();
      std::vector<uint8_t> text(joined.begin(), joined.begin() + long(n));  // its own allocation: ASan sees reads past it
      std::vector<uint32_t> got, want;
      model->encode(text.data(), n, got);
      for (size_t i = 0; i < n;) {
        for (size_t len = std::min(longest, n - i); len >= 1; --len) {
          auto it = by_bytes.find(std::string(reinterpret_cast<const char*>(text.data()) + i, len));
          if (it != by_bytes.end()) {
            want.push_back(it->second);
            i += len;
            break;
          }
        }
      }
      CHECK(got == want);
    }
  }
  std::string error;
  CHECK(LongestMatchModel::create({{0, "a"}}, &error) == nullptr && error.find("byte 0") != std::string::npos);
}

int main() {
  test_longest_match();
  test_hash_maps();
  test_split_engine();
  test_scanners();
  test_sparse_ids();
  test_scanners_on_arbitrary_bytes();
  test_block_scan_matches_scanner();
  test_bpe_and_specials();
  test_piece_cache_and_buffer_ends();
  test_whole_characters_match_plain_bpe();
  test_bad_model();
  return tokenforge_test::finish("core_test");
}
