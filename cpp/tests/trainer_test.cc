// Standalone tests of training in the C++ core (no Python): UTF-8 validation, the pre-token counter
// (threads and cuts must not change the counts), and the merge loop against a brute-force trainer on
// random tie-heavy corpora. Built with -DTOKENFORGE_CORE_TESTS=ON, also under ASan and UBSan.
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "counter.h"
#include "trainer.h"
#include "unicode.h"
#include "tests/check.h"

using namespace tokenforge;


static const uint8_t* u8(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

static std::map<std::string, uint64_t> table(const PieceCounts& c) {
  std::map<std::string, uint64_t> out;
  c.for_each([&](const uint8_t* p, size_t n, uint64_t k) { out[std::string(reinterpret_cast<const char*>(p), n)] += k; });
  return out;
}

static void test_utf8() {
  auto valid = [](const std::string& s) { return utf8_valid_prefix(u8(s), s.size()); };
  CHECK(valid("plain ascii text, longer than eight bytes") == 41);
  CHECK(valid("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80") == 15);
  CHECK(valid("ab\xff") == 2);
  CHECK(valid("ab\xc3") == 2);                 // cut by the end
  CHECK(valid("abcdefgh\xc0\xaf") == 8);       // overlong
  CHECK(valid("\xed\xa0\x80") == 0);           // surrogate
  CHECK(valid("x\xf4\x90\x80\x80") == 1);      // beyond U+10FFFF
  CHECK(valid("x\xe0\x80\x80") == 1);          // overlong 3-byte
}

static void test_counter_small() {
  PieceCounter c(SplitPattern::kCl100k, {{"<|endoftext|>", 0}});
  std::string text = "hello world hello<|endoftext|> world\nAnd so on";
  c.count(u8(text), text.size(), 1);
  auto t = table(c.counts());
  std::map<std::string, uint64_t> want{{"hello", 1}, {" world", 2}, {" hello", 1}, {"\n", 1}, {"And", 1}, {" so", 1}, {" on", 1}};
  CHECK(t == want);
}

// Counting with threads, or in chunks cut at last_cut / first_cut, gives the serial counts.
static void test_counter_cuts_and_threads() {
  std::mt19937 rng(7);
  const char* words[] = {"the", " cat", "  ", "\n", "\n\n", "x.", " \n", "Z", "42", "<|eot|>", "\r\n", "é", " 😀",
                         "'s", "\t", "中文", "。", "Мир", "\u00a0", "\u3000", "/", " a", "b ", "'", "\u0301", "7"};
  for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kCl100k, SplitPattern::kO200k}) {
    std::string text;
    while (text.size() < (3u << 20)) text += words[rng() % (sizeof(words) / sizeof(words[0]))];
    PieceCounter serial(p, {{"<|eot|>", 0}});
    serial.count(u8(text), text.size(), 1);
    PieceCounter threaded(p, {{"<|eot|>", 0}});
    threaded.count(u8(text), text.size(), 3);
    CHECK(table(serial.counts()) == table(threaded.counts()));
    // chunked like the Python reader: count up to the last cut, carry the rest
    PieceCounter chunked(p, {{"<|eot|>", 0}});
    size_t pos = 0;
    while (pos < text.size()) {
      size_t rest = text.size() - pos;
      size_t len = std::min<size_t>(rest, 1 + rng() % 5000);
      size_t cut = len;
      if (len < rest) {
        cut = chunked.last_cut(u8(text) + pos, len);
        if (cut == 0) {  // no cut in the window: read on to the first cut (never force one)
          size_t f = chunked.first_cut(u8(text) + pos, rest);
          cut = f ? f : rest;
        }
      }
      chunked.count(u8(text) + pos, cut, 1);
      pos += cut;
    }
    CHECK(table(serial.counts()) == table(chunked.counts()));
  }
}

// Arbitrary bytes (invalid UTF-8 included) never crash the counter or the trainer.
static void test_arbitrary_bytes() {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    std::string s(1 + rng() % 3000, '\0');
    for (char& ch : s) ch = char(rng() % 4 == 0 ? rng() % 256 : " a\n\xc3\xa9"[rng() % 5]);
    PieceCounter c(SplitPattern(round % 3), {{"\xc3\xa9\xc3", 0}});
    c.count(u8(s), s.size(), 2);
    (void)c.last_cut(u8(s), s.size());
    BpeTrainer t(100, 1);
    t.add_words(c.counts());
    while (!t.done()) t.step(7);
    CHECK(t.tokens().size() <= 356);
  }
}

// The brute-force trainer: recount every pair each step; ties to the greater (left, right) bytes.
static std::vector<std::pair<std::string, std::string>> brute_force(const std::map<std::string, uint64_t>& counts, size_t merges) {
  std::vector<std::pair<std::vector<std::string>, uint64_t>> words;
  for (const auto& [w, c] : counts) {
    std::vector<std::string> parts;
    for (char ch : w) parts.emplace_back(1, ch);
    words.emplace_back(parts, c);
  }
  std::vector<std::pair<std::string, std::string>> out;
  while (out.size() < merges) {
    std::map<std::pair<std::string, std::string>, uint64_t> stats;
    for (const auto& [parts, c] : words)
      for (size_t i = 0; i + 1 < parts.size(); ++i) stats[{parts[i], parts[i + 1]}] += c;
    if (stats.empty()) break;
    auto best = stats.begin();
    for (auto it = stats.begin(); it != stats.end(); ++it)
      if (it->second > best->second || (it->second == best->second && it->first > best->first)) best = it;
    auto [a, b] = best->first;
    out.push_back(best->first);
    for (auto& [parts, c] : words) {
      std::vector<std::string> merged;
      for (size_t i = 0; i < parts.size(); ++i) {
        if (i + 1 < parts.size() && parts[i] == a && parts[i + 1] == b) {
          merged.push_back(a + b);
          ++i;
        } else {
          merged.push_back(parts[i]);
        }
      }
      parts = merged;
    }
  }
  return out;
}

static void test_trainer_against_brute_force() {
  {
    BpeTrainer t(2, 1);
    t.add_word(u8(std::string("hug")), 3, 10);
    t.add_word(u8(std::string("pug")), 3, 5);
    t.add_word(u8(std::string("hugs")), 4, 5);
    t.step(100);
    CHECK(t.merges().size() == 2);
    CHECK(t.tokens()[256] == "ug" && t.tokens()[257] == "hug");
  }
  std::mt19937 rng(3);
  const std::string alphabets[] = {"ab", "abc", "a\xc3\xa9", std::string("\x00\xff", 2)};
  for (int round = 0; round < 400; ++round) {
    const std::string& al = alphabets[round % 4];
    std::map<std::string, uint64_t> counts;
    for (int w = 1 + rng() % 12; w > 0; --w) {
      std::string word(1 + rng() % 9, ' ');
      for (char& ch : word) ch = al[rng() % al.size()];
      counts[word] += 1 + rng() % 3;
    }
    size_t merges = 1 + rng() % 30;
    BpeTrainer t(merges, 1);
    for (const auto& [w, c] : counts) t.add_word(u8(w), w.size(), c);
    while (!t.done()) t.step(1 + rng() % 4);
    std::vector<std::pair<std::string, std::string>> got;
    for (const auto& m : t.merges()) got.emplace_back(t.tokens()[m.left], t.tokens()[m.right]);
    CHECK(got == brute_force(counts, got.size()));
    CHECK(got.size() == merges || brute_force(counts, got.size() + 1).size() == got.size());
  }
}

int main() {
  test_utf8();
  test_counter_small();
  test_counter_cuts_and_threads();
  test_arbitrary_bytes();
  test_trainer_against_brute_force();
  return tokenforge_test::finish("trainer_test");
}
