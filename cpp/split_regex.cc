#include "split_regex.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <atomic>
#include <map>
#include <mutex>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "per_thread.h"
#include "unicode.h"

namespace tokenforge {

namespace {
constexpr size_t npos = ~size_t(0);
constexpr size_t kGiveUp = npos - 1;
constexpr uint32_t kUnbounded = ~0u;
constexpr size_t kMaxProgram = 20000;    // instructions; larger patterns fall back to `regex`
constexpr uint32_t kMaxRepeat = 1000;    // the largest counted repetition bound compiled

uint64_t key_bit(int key) { return uint64_t(1) << key; }

// All keys of a set of general categories, with and without White_Space.
uint64_t keys_of_categories(uint32_t categories) {
  uint64_t m = 0;
  for (int c = 0; c < kNumCategories; ++c)
    if (categories & (1u << c)) m |= key_bit(c) | key_bit(c + kWhiteSpaceKey);
  return m;
}

uint64_t white_space_keys() {
  uint64_t m = 0;
  for (int c = 0; c < kNumCategories; ++c) m |= key_bit(c + kWhiteSpaceKey);
  return m;
}

// One character of UTF-8 at s[i] as the engine sees it (invalid bytes: U+FFFD, one byte).
inline void decode(const uint8_t* s, size_t n, size_t i, uint32_t* cp, size_t* len) {
  if (s[i] < 0x80) {
    *cp = s[i];
    *len = 1;
    return;
  }
  Char c = decode_multibyte(s, n, i);
  *cp = c.cp;
  *len = c.len;
}
}  // namespace

// ------------------------------------------------------------------------------------------------
// CharSet

CharSet CharSet::of_keys(uint64_t mask) {
  CharSet c;
  c.mask_ = mask;
  return c;
}

CharSet CharSet::of_range(uint32_t lo, uint32_t hi) {
  CharSet c;
  c.ranges_.push_back({lo, hi, ~uint64_t(0)});
  return c;
}

uint64_t CharSet::mask_at(uint32_t cp, bool* covered) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), cp, [](uint32_t x, const Range& r) { return x < r.lo; });
  if (it != ranges_.begin() && std::prev(it)->hi >= cp) {
    *covered = true;
    return std::prev(it)->mask;
  }
  *covered = false;
  return mask_;
}

CharSet CharSet::unite(const CharSet& other) const {
  // Cut the code points at every range boundary of either set; on each piece the union's mask is
  // the OR of the two masks that apply there.
  std::vector<uint32_t> cuts;
  for (const CharSet* s : {this, &other})
    for (const Range& r : s->ranges_) {
      cuts.push_back(r.lo);
      cuts.push_back(r.hi + 1);
    }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  CharSet out;
  out.mask_ = mask_ | other.mask_;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    uint32_t lo = cuts[k], hi = cuts[k + 1] - 1;
    bool in_a, in_b;
    uint64_t m = mask_at(lo, &in_a) | other.mask_at(lo, &in_b);
    if (!in_a && !in_b) continue;
    if (m == out.mask_) continue;  // the default already says so
    if (!out.ranges_.empty() && out.ranges_.back().hi + 1 == lo && out.ranges_.back().mask == m)
      out.ranges_.back().hi = hi;
    else
      out.ranges_.push_back({lo, hi, m});
  }
  return out;
}

CharSet CharSet::complement() const {
  CharSet out;
  out.mask_ = ~mask_;
  for (const Range& r : ranges_) out.ranges_.push_back({r.lo, r.hi, ~r.mask});
  return out;
}

bool CharSet::contains_slow(uint32_t cp) const {
  uint64_t m = mask_;
  if (ranges_above_ascii_) {
    bool covered;
    m = mask_at(cp, &covered);
  }
  return (m >> char_key(cp)) & 1;
}

void CharSet::finish() {
  ranges_above_ascii_ = !ranges_.empty() && ranges_.back().hi >= 128;
  ascii_[0] = ascii_[1] = 0;
  for (uint32_t cp = 0; cp < 128; ++cp) {
    bool covered;
    if ((mask_at(cp, &covered) >> char_key(cp)) & 1) ascii_[cp >> 6] |= uint64_t(1) << (cp & 63);
  }
}

void CharSet::range_bounds(std::vector<uint32_t>& out) const {
  for (const Range& r : ranges_) {
    if (r.lo >= 128) out.push_back(r.lo);
    if (r.hi + 1 >= 128 && r.hi + 1 < 0x110000) out.push_back(r.hi + 1);
  }
}

std::string CharSet::canonical() const {
  // Ranges whose mask is all ones or all zeros are plain code point ranges; others are rare.
  std::string out = std::to_string(mask_);
  for (const Range& r : ranges_) out += ";" + std::to_string(r.lo) + "-" + std::to_string(r.hi) + ":" + std::to_string(r.mask);
  return out;
}

// ------------------------------------------------------------------------------------------------
// Parsing: pattern text -> syntax tree

namespace {

struct Node {
  enum Kind { kSet, kConcat, kAlt, kRepeat, kAssert, kEmpty } kind;
  explicit Node(Kind k) : kind(k) {}
  std::vector<int> kids;
  int set = -1;  // kSet; kAssert on the next character
  uint32_t min = 0, max = 0;
  enum Mode { kGreedy, kLazy, kPossessive } mode = kGreedy;
  uint8_t test = 0;  // kAssert
};

struct Unsupported {
  std::string why;
};

}  // namespace

class RegexParser {
 public:
  explicit RegexParser(const std::string& p) : p_(p) {}

  std::unique_ptr<SplitRegex> parse_and_compile() {
    std::unique_ptr<SplitRegex> re(new SplitRegex());
    if (p_.compare(0, 4, "(?i)") == 0) {
      ignore_case_ = true;
      i_ = 4;
    }
    int root = parse_alt();
    if (i_ < p_.size()) fail(p_[i_] == ')' ? "unbalanced parenthesis" : "unexpected character");
    if (nullable(root)) fail("the pattern can match the empty string");
    re->sets_ = sets_;
    for (CharSet& s : re->sets_) s.finish();
    re_ = re.get();
    uint32_t match = emit({SplitRegex::Inst::kMatch});
    re->start_ = compile(root, match);
    if (re->prog_.size() > kMaxProgram) fail("the pattern is too large");
    order(*re);
    canonical(*re);
    re->build_alphabet();
    return re;
  }

  [[noreturn]] static void fail(const std::string& why) { throw Unsupported{why}; }

 private:
  // -- syntax ---------------------------------------------------------------------------------
  bool at_end() const { return i_ >= p_.size(); }
  char peek() const { return at_end() ? '\0' : p_[i_]; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  bool eat(const char* s) {
    size_t len = std::strlen(s);
    if (p_.compare(i_, len, s) != 0) return false;
    i_ += len;
    return true;
  }

  int node(Node n) {
    nodes_.push_back(std::move(n));
    return int(nodes_.size() - 1);
  }
  int set_node(const CharSet& s) {
    sets_.push_back(s);
    Node n(Node::kSet);
    n.set = int(sets_.size() - 1);
    return node(n);
  }

  int parse_alt() {
    std::vector<int> alts{parse_concat()};
    while (eat('|')) alts.push_back(parse_concat());
    if (alts.size() == 1) return alts[0];
    Node n(Node::kAlt);
    n.kids = alts;
    return node(n);
  }

  int parse_concat() {
    std::vector<int> items;
    while (!at_end() && peek() != '|' && peek() != ')') items.push_back(parse_repeat());
    if (items.empty()) return node(Node(Node::kEmpty));
    if (items.size() == 1) return items[0];
    Node n(Node::kConcat);
    n.kids = items;
    return node(n);
  }

  // {n}, {n,}, {,m}, {n,m} at i_; false (and i_ unchanged) if the text is not a quantifier.
  bool parse_braces(uint32_t* lo, uint32_t* hi) {
    size_t j = i_;
    if (j >= p_.size() || p_[j] != '{') return false;
    ++j;
    auto number = [&](uint32_t* v) {
      size_t start = j;
      uint64_t x = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
        x = std::min<uint64_t>(x * 10 + uint64_t(p_[j] - '0'), uint64_t(kUnbounded) - 1);
        ++j;
      }
      *v = uint32_t(x);
      return j > start;
    };
    bool has_lo = number(lo);
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(hi)) *hi = kUnbounded;
      if (!has_lo) *lo = 0;
    } else {
      if (!has_lo) return false;
      *hi = *lo;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    if (!has_lo && *hi == kUnbounded) return false;  // "{,}" is literal text
    i_ = j + 1;
    return true;
  }

  bool at_quantifier() {
    char c = peek();
    if (c == '*' || c == '+' || c == '?') return true;
    uint32_t lo, hi;
    size_t save = i_;
    bool q = parse_braces(&lo, &hi);
    i_ = save;
    return q;
  }

  int parse_repeat() {
    if (at_quantifier()) fail("nothing to repeat");
    int atom = parse_atom();
    if (!at_quantifier()) return atom;
    Node n(Node::kRepeat);
    char c = peek();
    if (c == '*') ++i_, n.min = 0, n.max = kUnbounded;
    else if (c == '+') ++i_, n.min = 1, n.max = kUnbounded;
    else if (c == '?') ++i_, n.min = 0, n.max = 1;
    else parse_braces(&n.min, &n.max);
    if (n.max != kUnbounded && n.min > n.max) fail("min repeat greater than max repeat");
    if (n.min > kMaxRepeat || (n.max != kUnbounded && n.max > kMaxRepeat)) fail("a repetition bound is too large");
    if (eat('?')) n.mode = Node::kLazy;
    else if (eat('+')) n.mode = Node::kPossessive;
    if (at_quantifier()) fail("multiple repeat");
    if (nodes_[atom].kind == Node::kAssert) fail("a repeated assertion");
    if (n.mode == Node::kPossessive && nodes_[atom].kind != Node::kSet)
      fail("a possessive quantifier on more than one character class");
    if (n.max > 1 && nullable(atom)) fail("a repeated group that can match the empty string");
    n.kids = {atom};
    return node(n);
  }

  int parse_group() {  // after '('
    bool saved = ignore_case_;
    int result;
    if (eat("?:")) {
      result = parse_alt();
    } else if (eat("?=") || eat("?!")) {
      bool negative = p_[i_ - 1] == '!';
      int inner = parse_alt();
      if (nodes_[inner].kind != Node::kSet) fail("a lookahead of more than one character class");
      Node n(Node::kAssert);
      n.test = negative ? SplitRegex::kNextNotIn : SplitRegex::kNextIn;
      n.set = nodes_[inner].set;
      result = node(n);
    } else if (eat("?P<") || (p_.compare(i_, 2, "?<") == 0 && p_.compare(i_, 3, "?<=") != 0 &&
                              p_.compare(i_, 3, "?<!") != 0 && eat("?<"))) {
      size_t close = p_.find('>', i_);
      if (close == std::string::npos) fail("unterminated group name");
      for (size_t k = i_; k < close; ++k) {
        char c = p_[k];
        if (!(c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) fail("bad group name");
      }
      if (close == i_ || (p_[i_] >= '0' && p_[i_] <= '9')) fail("bad group name");
      i_ = close + 1;
      result = parse_alt();
    } else if (peek() == '?') {
      ++i_;
      // Scoped flags: (?i:...), (?-i:...), (?i-i:...) and nothing else.
      bool on = true, any = false, value = ignore_case_;
      while (!at_end() && peek() != ':') {
        char c = p_[i_++];
        if (c == ')') fail("inline flags after the start of the pattern");
        if (c == '-' && on) on = false;
        else if (c == 'i') value = on, any = true;
        else fail(std::string("the group or flag (?") + c + " is not supported");
      }
      if (!any || !eat(':')) fail("unsupported group");
      ignore_case_ = value;
      result = parse_alt();
    } else {
      result = parse_alt();
    }
    if (!eat(')')) fail("missing )");
    ignore_case_ = saved;
    return result;
  }

  int parse_atom() {
    char c = p_[i_];
    switch (c) {
      case '(':
        ++i_;
        return parse_group();
      case '[':
        ++i_;
        return set_node(parse_class());
      case '.':
        ++i_;
        return set_node(CharSet::of_range('\n', '\n').complement());
      case '^': {
        ++i_;
        Node n(Node::kAssert);
        n.test = SplitRegex::kBeginText;
        return node(n);
      }
      case '$': {
        ++i_;
        Node n(Node::kAssert);
        n.test = SplitRegex::kEndOrFinalNewline;
        return node(n);
      }
      case '\\': {
        ++i_;
        if (eat('A')) {
          Node n(Node::kAssert);
          n.test = SplitRegex::kBeginText;
          return node(n);
        }
        if (eat('Z') || eat('z')) {  // (both the end of the text to the `regex` module)
          Node n(Node::kAssert);
          n.test = SplitRegex::kEndText;
          return node(n);
        }
        return set_node(parse_escape(/*in_class=*/false));
      }
      default:
        return set_node(literal(next_char()));
    }
  }

  uint32_t next_char() {  // one UTF-8 character of the pattern
    uint32_t cp;
    size_t len;
    decode(reinterpret_cast<const uint8_t*>(p_.data()), p_.size(), i_, &cp, &len);
    if (cp == 0xFFFD && len == 1 && uint8_t(p_[i_]) >= 0x80) fail("the pattern is not valid UTF-8");
    i_ += len;
    return cp;
  }

  // A literal character, with its case variants under (?i): ASCII letters only (the variants are
  // those the `regex` module matches, checked by the tests: i also matches U+0130, I U+0131,
  // k/K U+212A KELVIN SIGN, s/S U+017F LONG S).
  CharSet literal(uint32_t cp) {
    CharSet s = CharSet::of_range(cp, cp);
    if (!ignore_case_) return s;
    if (cp >= 128) {
      uint8_t key = char_key(cp) & ~kWhiteSpaceKey;
      // Caseless categories only (digits, punctuation, spaces, CJK...): no case variants to add.
      bool caseless = key == kLo || key == kNd || (key >= kPc && key <= kPo) || key == kZs || key == kCc;
      if (!caseless) fail("case-insensitive matching of non-ASCII letters");
      return s;
    }
    uint32_t lower = cp | 0x20;
    if (!((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))) return s;
    s = s.unite(CharSet::of_range(lower, lower)).unite(CharSet::of_range(lower - 32, lower - 32));
    uint32_t extra = 0;
    if (cp == 'i') extra = 0x130;
    if (cp == 'I') extra = 0x131;
    if (lower == 'k') extra = 0x212A;
    if (lower == 's') extra = 0x17F;
    if (extra) s = s.unite(CharSet::of_range(extra, extra));
    return s;
  }

  uint32_t hex(size_t digits) {
    if (i_ + digits > p_.size()) fail("incomplete escape");
    uint32_t v = 0;
    for (size_t k = 0; k < digits; ++k) {
      char c = p_[i_++];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail("bad hex escape");
      v = v * 16 + uint32_t(d);
    }
    if (v >= 0x110000) fail("bad escape: code point out of range");
    return v;
  }

  // After a backslash. Returns the set; *single is the character when the escape is one.
  CharSet parse_escape(bool in_class, uint32_t* single = nullptr) {
    if (at_end()) fail("bad escape (end of pattern)");
    char c = p_[i_++];
    auto one = [&](uint32_t cp) {
      if (single) *single = cp;
      return literal(cp);
    };
    switch (c) {
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case 'a': return one('\a');
      case 'b':
        if (in_class) return one('\b');
        fail("word boundaries (\\b) are not supported");
      case 'x':
        if (eat('{')) {
          size_t close = p_.find('}', i_);
          if (close == std::string::npos || close == i_ || close - i_ > 8) fail("bad escape \\x{...}");
          uint32_t v = hex(close - i_);
          ++i_;
          return one(v);
        }
        return one(hex(2));
      case 'u': return one(hex(4));
      case 'U': return one(hex(8));
      case 'd': return CharSet::of_keys(keys_of_categories(1u << kNd));
      case 'D': return CharSet::of_keys(keys_of_categories(1u << kNd)).complement();
      case 's': return CharSet::of_keys(white_space_keys());
      case 'S': return CharSet::of_keys(white_space_keys()).complement();
      case 'p':
      case 'P': {
        CharSet s = property();
        return c == 'P' ? s.complement() : s;
      }
      default:
        break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      fail(std::string("the escape \\") + c + " is not supported");
    --i_;
    return one(next_char());  // escaped punctuation or any other character: itself
  }

  // \p{Name}, \p{^Name}, \p{gc=Name}, \pL: general categories and White_Space.
  CharSet property() {
    std::string name;
    if (eat('{')) {
      size_t close = p_.find('}', i_);
      if (close == std::string::npos) fail("unterminated \\p{");
      name = p_.substr(i_, close - i_);
      i_ = close + 1;
    } else {
      if (at_end()) fail("bad \\p");
      name = std::string(1, p_[i_++]);
    }
    if (ignore_case_) fail("case-insensitive character properties");
    bool negate = false;
    if (!name.empty() && name[0] == '^') negate = true, name = name.substr(1);
    // Loose matching, as the regex module does: case, spaces, '-' and '_' do not matter.
    std::string key;
    for (char ch : name)
      if (ch != ' ' && ch != '_' && ch != '-') key += char(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    for (const char* prefix : {"generalcategory=", "gc="})
      if (key.compare(0, std::strlen(prefix), prefix) == 0) key = key.substr(std::strlen(prefix));
    struct Name {
      const char* a;
      const char* b;
      uint32_t categories;
    };
    auto bit = [](int c) { return 1u << c; };
    const uint32_t L = bit(kLu) | bit(kLl) | bit(kLt) | bit(kLm) | bit(kLo);
    const uint32_t M = bit(kMn) | bit(kMc) | bit(kMe);
    const uint32_t N = bit(kNd) | bit(kNl) | bit(kNo);
    const uint32_t P = bit(kPc) | bit(kPd) | bit(kPs) | bit(kPe) | bit(kPi) | bit(kPf) | bit(kPo);
    const uint32_t S = bit(kSm) | bit(kSc) | bit(kSk) | bit(kSo);
    const uint32_t Z = bit(kZs) | bit(kZl) | bit(kZp);
    const uint32_t C = bit(kCc) | bit(kCf) | bit(kCs) | bit(kCo) | bit(kCn);
    const Name names[] = {
        {"l", "letter", L}, {"lu", "uppercaseletter", bit(kLu)}, {"ll", "lowercaseletter", bit(kLl)},
        {"lt", "titlecaseletter", bit(kLt)}, {"lm", "modifierletter", bit(kLm)}, {"lo", "otherletter", bit(kLo)},
        {"lc", "casedletter", bit(kLu) | bit(kLl) | bit(kLt)}, {"l&", "l&", bit(kLu) | bit(kLl) | bit(kLt)},
        {"m", "mark", M}, {"combiningmark", "combiningmark", M}, {"mn", "nonspacingmark", bit(kMn)},
        {"mc", "spacingmark", bit(kMc)}, {"me", "enclosingmark", bit(kMe)},
        {"n", "number", N}, {"nd", "decimalnumber", bit(kNd)}, {"nl", "letternumber", bit(kNl)},
        {"no", "othernumber", bit(kNo)},
        {"p", "punctuation", P}, {"pc", "connectorpunctuation", bit(kPc)}, {"pd", "dashpunctuation", bit(kPd)},
        {"ps", "openpunctuation", bit(kPs)}, {"pe", "closepunctuation", bit(kPe)},
        {"pi", "initialpunctuation", bit(kPi)}, {"pf", "finalpunctuation", bit(kPf)},
        {"po", "otherpunctuation", bit(kPo)},
        {"s", "symbol", S}, {"sm", "mathsymbol", bit(kSm)}, {"sc", "currencysymbol", bit(kSc)},
        {"sk", "modifiersymbol", bit(kSk)}, {"so", "othersymbol", bit(kSo)},
        {"z", "separator", Z}, {"zs", "spaceseparator", bit(kZs)}, {"zl", "lineseparator", bit(kZl)},
        {"zp", "paragraphseparator", bit(kZp)},
        {"c", "other", C}, {"cc", "control", bit(kCc)}, {"cf", "format", bit(kCf)}, {"cs", "surrogate", bit(kCs)},
        {"co", "privateuse", bit(kCo)}, {"cn", "unassigned", bit(kCn)},
    };
    CharSet result;
    bool found = false;
    for (const Name& n : names)
      if (key == n.a || key == n.b) result = CharSet::of_keys(keys_of_categories(n.categories)), found = true;
    if (key == "whitespace" || key == "wspace" || key == "space") result = CharSet::of_keys(white_space_keys()), found = true;
    if (!found) fail("the property \\p{" + name + "} is not supported");
    return negate ? result.complement() : result;
  }

  // After '['.
  CharSet parse_class() {
    bool negate = eat('^');
    CharSet s;
    bool first = true;
    while (true) {
      if (at_end()) fail("unterminated character set");
      char c = p_[i_];
      if (c == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (c == '[') fail("a '[' inside a character set (nested sets, POSIX classes)");
      if ((c == '&' || c == '|' || c == '~') && i_ + 1 < p_.size() && p_[i_ + 1] == c)
        fail("set operations inside a character set");
      if (c == '-' && i_ + 1 < p_.size() && p_[i_ + 1] == '-') fail("set operations inside a character set");
      uint32_t lo = kUnbounded;
      CharSet item = class_item(&lo);
      bool range = peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']';
      if (range && lo == kUnbounded) fail("a range whose start is a class");
      if (range) {
        ++i_;
        uint32_t hi = kUnbounded;
        class_item(&hi);
        if (hi == kUnbounded) fail("a range whose end is a class");
        if (hi < lo) fail("bad character range");
        if (ignore_case_ && (lo >= 128 || hi >= 128)) fail("case-insensitive matching of non-ASCII ranges");
        item = CharSet::of_range(lo, hi);
        if (ignore_case_)
          for (uint32_t cp = lo; cp <= hi; ++cp) item = item.unite(literal(cp));
      }
      s = s.unite(item);
    }
    return negate ? s.complement() : s;
  }

  CharSet class_item(uint32_t* single) {
    if (eat('\\')) return parse_escape(/*in_class=*/true, single);
    uint32_t cp = next_char();
    *single = cp;
    return literal(cp);
  }

  bool nullable(int id) const {
    const Node& n = nodes_[id];
    switch (n.kind) {
      case Node::kSet: return false;
      case Node::kAssert:
      case Node::kEmpty: return true;
      case Node::kConcat:
        for (int k : n.kids)
          if (!nullable(k)) return false;
        return true;
      case Node::kAlt:
        for (int k : n.kids)
          if (nullable(k)) return true;
        return false;
      case Node::kRepeat: return n.min == 0 || nullable(n.kids[0]);
    }
    return true;
  }

  // -- compiling: tree -> program, back to front (each node is given where to continue) --------
  using Inst = SplitRegex::Inst;
  uint32_t emit(Inst in) {
    if (re_->prog_.size() > kMaxProgram) fail("the pattern is too large");
    re_->prog_.push_back(in);
    return uint32_t(re_->prog_.size() - 1);
  }
  uint32_t split(uint32_t first, uint32_t second) {
    Inst in{Inst::kSplit};
    in.x = first, in.y = second;
    return emit(in);
  }

  uint32_t compile(int id, uint32_t next) {
    const Node& n = nodes_[id];
    switch (n.kind) {
      case Node::kEmpty: return next;
      case Node::kSet: {
        Inst in{Inst::kSet};
        in.set = uint32_t(n.set), in.x = next;
        return emit(in);
      }
      case Node::kAssert: {
        Inst in{Inst::kAssert};
        in.test = n.test, in.set = uint32_t(std::max(n.set, 0)), in.x = next;
        return emit(in);
      }
      case Node::kConcat: {
        for (size_t k = n.kids.size(); k-- > 0;) next = compile(n.kids[k], next);
        return next;
      }
      case Node::kAlt: {
        std::vector<uint32_t> entries;
        for (int k : n.kids) entries.push_back(compile(k, next));
        uint32_t cur = entries.back();
        for (size_t k = entries.size() - 1; k-- > 0;) cur = split(entries[k], cur);
        return cur;
      }
      case Node::kRepeat: {
        int body = n.kids[0];
        // Leaving an optional part: under a possessive quantifier only when the next character
        // cannot continue the run (the body is one class), which is what possession means there.
        auto leave = [&]() -> uint32_t {
          if (n.mode != Node::kPossessive) return next;
          Inst in{Inst::kAssert};
          in.test = SplitRegex::kNextNotIn, in.set = uint32_t(nodes_[body].set), in.x = next;
          return emit(in);
        };
        auto choice = [&](uint32_t take, uint32_t skip) {
          return n.mode == Node::kLazy ? split(skip, take) : split(take, skip);
        };
        uint32_t tail;
        if (n.max == kUnbounded) {
          uint32_t loop = emit(Inst{Inst::kSplit});  // filled below
          uint32_t take = compile(body, loop);
          uint32_t skip = leave();
          Inst& in = re_->prog_[loop];
          in = Inst{Inst::kSplit};
          if (n.mode == Node::kLazy) in.x = skip, in.y = take;
          else in.x = take, in.y = skip;
          tail = loop;
        } else {
          tail = next;
          for (uint32_t k = n.min; k < n.max; ++k) {
            uint32_t take = compile(body, tail);
            tail = choice(take, leave());
          }
        }
        for (uint32_t k = 0; k < n.min; ++k) tail = compile(body, tail);
        return tail;
      }
    }
    return next;
  }

  // Every pc after those it reaches without reading a character (for the backward program).
  static void order(SplitRegex& re) {
    size_t m = re.prog_.size();
    std::vector<uint8_t> state(m, 0);  // 0 new, 1 on the stack, 2 done
    std::vector<std::pair<uint32_t, int>> stack;
    for (uint32_t root = 0; root < m; ++root) {
      if (state[root]) continue;
      stack.push_back({root, 0});
      state[root] = 1;
      while (!stack.empty()) {
        auto& [pc, k] = stack.back();
        const Inst& in = re.prog_[pc];
        uint32_t succ[2];
        int count = 0;
        if (in.op == Inst::kSplit) succ[0] = in.x, succ[1] = in.y, count = 2;
        else if (in.op == Inst::kJmp || in.op == Inst::kAssert) succ[0] = in.x, count = 1;
        if (k < count) {
          uint32_t s = succ[k++];
          if (state[s] == 1) fail("a loop that reads no character");
          if (state[s] == 0) {
            state[s] = 1;
            stack.push_back({s, 0});
          }
          continue;
        }
        state[pc] = 2;
        re.order_.push_back(pc);
        stack.pop_back();
      }
    }
  }

  // The program as text, with pcs renumbered by first visit from the start, so the same pattern
  // written differently (groups, names of categories, order of class items) gives the same text.
  static void canonical(SplitRegex& re) {
    std::vector<int64_t> number(re.prog_.size(), -1);
    std::vector<uint32_t> visit{re.start_};
    std::vector<uint32_t> seq;
    number[re.start_] = 0;
    for (size_t k = 0; k < visit.size(); ++k) {
      const Inst& in = re.prog_[visit[k]];
      std::vector<uint32_t> succ;
      if (in.op == Inst::kSplit) succ = {in.x, in.y};
      else if (in.op != Inst::kMatch) succ = {in.x};
      for (uint32_t s : succ)
        if (number[s] < 0) {
          number[s] = int64_t(visit.size());
          visit.push_back(s);
        }
    }
    std::string out;
    for (uint32_t pc : visit) {
      const Inst& in = re.prog_[pc];
      out += std::to_string(int(in.op)) + "," + std::to_string(int(in.test)) + ",";
      if (in.op != Inst::kMatch) out += std::to_string(number[in.x]);
      if (in.op == Inst::kSplit) out += "," + std::to_string(number[in.y]);
      if (in.op == Inst::kSet || (in.op == Inst::kAssert && in.test >= SplitRegex::kNextNotIn))
        out += "," + re.sets_[in.set].canonical();
      out += "\n";
    }
    re.canonical_ = out;
  }

  const std::string& p_;
  size_t i_ = 0;
  bool ignore_case_ = false;
  std::vector<Node> nodes_;
  std::vector<CharSet> sets_;
  SplitRegex* re_ = nullptr;
};

// ------------------------------------------------------------------------------------------------
// Compiling, and the named patterns' scanners

namespace {
// The named patterns (tokenforge/patterns.py) and other spellings known to mean the same, with the
// scanner that runs them.
struct Named {
  const char* pattern;
  SplitPattern scanner;
};
const Named kNamed[] = {
    {R"('(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s)", SplitPattern::kGpt2},
    // GPT-2's original release (and Hugging Face's ByteLevel pre-tokenizer): the same pieces.
    {R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", SplitPattern::kGpt2},
    {R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s)",
     SplitPattern::kCl100k},
    {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     SplitPattern::kO200k},
};

std::unique_ptr<SplitRegex> compile_engine(const std::string& pattern, std::string* error) {
  try {
    return RegexParser(pattern).parse_and_compile();
  } catch (const Unsupported& u) {
    *error = u.why;
    return nullptr;
  }
}

const std::vector<std::pair<std::string, SplitPattern>>& named_programs() {
  static const auto* programs = [] {
    auto* v = new std::vector<std::pair<std::string, SplitPattern>>();
    for (const Named& n : kNamed) {
      std::string error;
      auto re = compile_engine(n.pattern, &error);
      if (re) v->emplace_back(re->canonical(), n.scanner);
    }
    return v;
  }();
  return *programs;
}
}  // namespace

std::unique_ptr<SplitRegex> SplitRegex::compile(const std::string& pattern, std::string* error) {
  static std::atomic<uint64_t> next_serial{1};
  auto re = compile_engine(pattern, error);
  if (!re) return nullptr;
  re->serial_ = next_serial.fetch_add(1);
  for (const auto& [program, scanner] : named_programs())
    if (program == re->canonical_) re->scanner_ = scanner_for(scanner);
  return re;
}

std::shared_ptr<const SplitRegex> named_split_regex(SplitPattern pattern) {
  static std::shared_ptr<const SplitRegex> compiled[3];
  static std::once_flag once;
  std::call_once(once, [] {
    for (const Named& n : kNamed) {
      std::string error;
      int k = int(n.scanner);
      if (!compiled[k]) compiled[k] = SplitRegex::compile(n.pattern, &error);
    }
  });
  return compiled[int(pattern)];
}

std::atomic<uint64_t>& SplitRegex::work_counter() {
  static std::atomic<uint64_t> work{0};
  return work;
}

// ------------------------------------------------------------------------------------------------
// Matching

namespace {
// Per-thread buffers of the Pike VM, reused across searches.
struct VmScratch {
  std::vector<uint32_t> clist, nlist, stack;
  std::vector<uint64_t> mark;
  uint64_t generation = 0;
};
VmScratch& scratch() {
  static PerThread<VmScratch> per_thread;  // (per_thread.h: not a thread_local)
  return per_thread.get();
}
}  // namespace

// ------------------------------------------------------------------------------------------------
// The lazy DFA: the Pike VM's thread lists, made once and remembered
//
// A DFA state is an ordered list of pcs (sets, matches, and lookahead assertions not yet decided);
// reading a symbol first decides the assertions (they test the character about to be read, which
// the symbol determines, or the end of text), then steps the sets exactly as the Pike VM does, in
// priority order, cutting at the first match. The transition (next state, whether a match ended
// before the symbol) is remembered, so a text costs one table lookup per character once the states
// it needs exist. States and transitions are per thread (no locks); past kMaxDfaStates the cache
// is dropped and the search continues with the Pike VM.

void SplitRegex::build_alphabet() {
  std::vector<uint32_t> bounds;
  for (const CharSet& s : sets_) s.range_bounds(bounds);
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  segment_bounds_ = bounds;
  uint32_t segments = uint32_t(bounds.size()) + 1;
  eof_symbol_ = 128 + 64 * segments;
  final_newline_symbol_ = eof_symbol_ + 1;
  num_symbols_ = final_newline_symbol_ + 1;
  member_.assign(sets_.size() * num_symbols_, 0);
  for (size_t k = 0; k < sets_.size(); ++k) {
    uint8_t* row = &member_[k * num_symbols_];
    for (uint32_t b = 0; b < 128; ++b) row[b] = sets_[k].contains(b);
    for (uint32_t seg = 0; seg < segments; ++seg) {
      uint32_t rep = seg == 0 ? 128 : bounds[seg - 1];
      for (uint32_t key = 0; key < 64; ++key) row[128 + 64 * seg + key] = sets_[k].contains_key(rep, uint8_t(key));
    }
    row[final_newline_symbol_] = row['\n'];
  }
}

uint32_t SplitRegex::symbol_of_code_point(uint32_t cp) const {
  uint32_t seg = 0;
  if (!segment_bounds_.empty())
    seg = uint32_t(std::upper_bound(segment_bounds_.begin(), segment_bounds_.end(), cp) - segment_bounds_.begin());
  return 128 + 64 * seg + char_key(cp);
}

uint32_t SplitRegex::symbol_of(const uint8_t* s, size_t n, size_t pos, size_t* len) const {
  uint8_t b = s[pos];
  if (b < 0x80) {
    *len = 1;
    return b == '\n' && pos + 1 == n ? final_newline_symbol_ : b;
  }
  // A 2- or 3-byte character decode_multibyte would read: its symbol from the table (session 13:
  // the decode, the binary search over the segments and the character's key were about 9% of the
  // samples of DeepSeek V3's file on multilingual text; now one load). The two cases are
  // unicode.h's decode_char's inline ones without the character's class: calling decode_char
  // here instead (not inlined by the compiler) cost 2.7% more instructions on multilingual text.
  auto cont = [&](size_t k) { return pos + k < n && (s[pos + k] & 0xC0) == 0x80; };
  if (b >= 0xC2 && b < 0xF0) {
    if (const uint16_t* table = bmp_symbols()) {
      if (b < 0xE0 && cont(1)) {
        *len = 2;
        return table[(b & 0x1Fu) << 6 | (s[pos + 1] & 0x3Fu)];
      }
      if (b >= 0xE0 && cont(1) && cont(2)) {
        uint32_t cp = (b & 0x0Fu) << 12 | (s[pos + 1] & 0x3Fu) << 6 | (s[pos + 2] & 0x3Fu);
        if (cp >= 0x800) {  // (overlong forms are invalid: U+FFFD, below)
          *len = 3;
          return table[cp];
        }
      }
    }
  }
  uint32_t cp;
  decode(s, n, pos, &cp, len);
  return symbol_of_code_point(cp);
}

const uint16_t* SplitRegex::bmp_symbols() const {
  uint16_t* table = bmp_symbols_.load(std::memory_order_acquire);
  if (table || num_symbols_ > 0xFFFF) return table;
  // 128 KiB, about 0.5 ms once per pattern. No lock: two threads may both make it; one is kept.
  // (Without the memory for it, null: this character's symbol is computed, the next one tries again.)
  table = new (std::nothrow) uint16_t[0x10000];
  if (!table) return nullptr;
  for (uint32_t cp = 0; cp < 0x80; ++cp) table[cp] = 0;  // (never read: ASCII is its own symbol)
  for (uint32_t cp = 0x80; cp < 0x10000; ++cp) table[cp] = uint16_t(symbol_of_code_point(cp));
  uint16_t* expected = nullptr;
  if (!bmp_symbols_.compare_exchange_strong(expected, table, std::memory_order_acq_rel)) {
    delete[] table;
    table = expected;
  }
  return table;
}

namespace {
constexpr size_t kMaxDfaStates = 2048;
}  // namespace

struct SplitRegex::Dfa {
  static constexpr uint32_t kAtBeginMark = 0xFFFFFFFFu;  // last entry of the start state at position 0
  const SplitRegex* re = nullptr;
  std::vector<std::vector<uint32_t>> states;
  std::map<std::vector<uint32_t>, int32_t> ids;
  // [state * symbols + symbol]: -1 unknown, else (next + 1) * symbols * 2 + matched, so that the
  // next state's row starts at t / 2 - symbols (no multiply on the matcher's path from byte to
  // byte); t is 0 or 1 where no thread goes on.
  std::vector<int32_t> trans;
  int32_t start[2] = {-1, -1};  // at the beginning of the text, elsewhere
  std::vector<uint64_t> mark;
  uint64_t generation = 0;
  std::vector<uint32_t> stack, resolved, next;
  // The ASCII bytes on which the start state (not at the text's beginning) may move, as at most
  // kLiveRanges ranges [live_lo, live_hi] ('\n' always among them: its symbol depends on its
  // position), for skip_dead_starts to pass over the others 16 at a time. Made on first use;
  // live_ranges < 0: not made yet, > kLiveRanges: too many ranges (the byte-by-byte loop only).
  static constexpr int kLiveRanges = 4;
  int live_ranges = -1;
  uint8_t live_lo[kLiveRanges], live_hi[kLiveRanges];

  void reset(const SplitRegex& r) {
    re = &r;
    states.clear();
    ids.clear();
    trans.clear();
    start[0] = start[1] = -1;
    mark.assign(r.prog_.size(), 0);
    live_ranges = -1;
  }

  // Makes the live ranges above (every ASCII move of the start state computed); false if the
  // state cache filled up on the way.
  bool find_live_ranges(uint64_t* work) {
    int32_t from = start_state(false);
    const size_t symbols = re->num_symbols_;
    bool live[128];
    for (uint32_t b = 0; b < 128; ++b) {
      int32_t t = b == '\n' ? 1 : trans[size_t(from) * symbols + b];
      if (t < 0 && (t = compute(from, b, work)) < 0) return false;
      live[b] = t != 0;
    }
    live_ranges = 0;
    for (uint32_t b = 0; b < 128; ++b) {
      if (!live[b] || (b > 0 && live[b - 1])) continue;
      uint32_t e = b;
      while (e + 1 < 128 && live[e + 1]) ++e;
      if (live_ranges == kLiveRanges) {
        live_ranges = kLiveRanges + 1;
        return true;
      }
      live_lo[live_ranges] = uint8_t(b);
      live_hi[live_ranges] = uint8_t(e);
      ++live_ranges;
    }
    return true;
  }

  // The first position from i (at most n) whose byte is not ASCII or is in a live range.
  size_t skip_dead_ascii(const uint8_t* s, size_t n, size_t i) const {
#ifdef __SSE2__
    for (; i + 16 <= n; i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      int stop = _mm_movemask_epi8(v);  // bytes >= 0x80
      for (int r = 0; r < live_ranges; ++r) {  // b in [lo, hi]: (b - lo) saturating-minus (hi - lo) is 0
        __m128i d = _mm_subs_epu8(_mm_sub_epi8(v, _mm_set1_epi8(char(live_lo[r]))),
                                  _mm_set1_epi8(char(live_hi[r] - live_lo[r])));
        stop |= _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128()));
      }
      if (stop) return i + size_t(__builtin_ctz(unsigned(stop)));
    }
#endif
    for (; i < n; ++i) {
      if (s[i] >= 0x80) return i;
      for (int r = 0; r < live_ranges; ++r)
        if (s[i] >= live_lo[r] && s[i] <= live_hi[r]) return i;
    }
    return n;
  }

  int32_t intern(const std::vector<uint32_t>& list) {
    auto it = ids.find(list);
    if (it != ids.end()) return it->second;
    int32_t id = int32_t(states.size());
    states.push_back(list);
    ids.emplace(list, id);
    trans.resize(trans.size() + re->num_symbols_, -1);
    return id;
  }

  // Adds pc and what it reaches without reading. symbol < 0: assertions on the next character stay
  // in the list undecided; otherwise they are decided for that symbol.
  void closure(std::vector<uint32_t>& list, uint32_t pc, bool at_begin, int64_t symbol) {
    stack.clear();
    stack.push_back(pc);
    while (!stack.empty()) {
      uint32_t p = stack.back();
      stack.pop_back();
      if (mark[p] == generation) continue;
      mark[p] = generation;
      const Inst& in = re->prog_[p];
      switch (in.op) {
        case Inst::kSet:
        case Inst::kMatch: list.push_back(p); break;
        case Inst::kJmp: stack.push_back(in.x); break;
        case Inst::kSplit:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Inst::kAssert:
          if (in.test == kBeginText) {
            if (at_begin) stack.push_back(in.x);
          } else if (symbol < 0) {
            list.push_back(p);
          } else if (decide(in, uint32_t(symbol))) {
            stack.push_back(in.x);
          }
          break;
      }
    }
  }

  bool decide(const Inst& in, uint32_t symbol) const {
    bool eof = symbol == re->eof_symbol_;
    switch (in.test) {
      case kEndText: return eof;
      case kEndOrFinalNewline: return eof || symbol == re->final_newline_symbol_;
      case kNextIn: return !eof && re->member_[in.set * re->num_symbols_ + symbol];
      case kNextNotIn: return eof || !re->member_[in.set * re->num_symbols_ + symbol];
      default: return false;
    }
  }

  int32_t start_state(bool at_begin) {
    int32_t& s = start[at_begin ? 0 : 1];
    if (s < 0) {
      next.clear();
      ++generation;
      closure(next, re->start_, at_begin, -1);
      // Lookaheads left undecided may lead to `^`, decided only when the first symbol is read:
      // the state at the beginning of the text is marked so that it is never shared with others.
      if (at_begin) next.push_back(kAtBeginMark);
      s = intern(next);
    }
    return s;
  }

  // The transition of `state` on `symbol`; -2 when the cache is full.
  int32_t compute(int32_t state, uint32_t symbol, uint64_t* work) {
    if (states.size() >= kMaxDfaStates) return -2;
    resolved.clear();
    ++generation;
    const std::vector<uint32_t>& list = states[size_t(state)];
    bool at_begin = !list.empty() && list.back() == kAtBeginMark;
    for (uint32_t pc : list)
      if (pc != kAtBeginMark) closure(resolved, pc, at_begin, symbol);
    next.clear();
    ++generation;
    bool matched = false;
    bool eof = symbol == re->eof_symbol_;
    for (uint32_t pc : resolved) {
      const Inst& in = re->prog_[pc];
      if (in.op == Inst::kMatch) {
        matched = true;
        break;
      }
      if (!eof && re->member_[in.set * re->num_symbols_ + symbol]) closure(next, in.x, false, -1);
    }
    *work += re->prog_.size();
    if ((states.size() + 1) * re->num_symbols_ * 2 + 1 > size_t(INT32_MAX)) return -2;  // (t would not fit)
    int32_t target = next.empty() ? -1 : intern(next);
    int32_t t = int32_t(size_t(target + 1) * re->num_symbols_ * 2) + (matched ? 1 : 0);
    trans[size_t(state) * re->num_symbols_ + symbol] = t;
    return t;
  }
};

namespace {
// A few patterns' DFAs per thread, told apart by the pattern's serial number.
struct DfaSlot {
  uint64_t serial = 0;
  std::unique_ptr<SplitRegex::Dfa> dfa;
};
}  // namespace

SplitRegex::Dfa& SplitRegex::dfa_for(const SplitRegex& re) {
  struct Slots {
    DfaSlot slots[8];
    unsigned next_victim = 0;
  };
  static PerThread<Slots> per_thread;
  Slots& t = per_thread.get();
  for (DfaSlot& s : t.slots)
    if (s.serial == re.serial_ && s.dfa) return *s.dfa;
  DfaSlot& s = t.slots[t.next_victim++ % 8];
  if (!s.dfa) s.dfa = std::make_unique<Dfa>();
  s.dfa->reset(re);
  s.serial = re.serial_;
  return *s.dfa;
}

size_t SplitRegex::Search::match_at_dfa(size_t i) {
  Dfa& d = *dfa_;
  const uint32_t symbols = re_.num_symbols_;
  const uint8_t* s = s_;
  const size_t n = n_;
  const size_t start_row = size_t(d.start_state(i == 0)) * symbols;
  const int32_t* trans = d.trans.data();  // (moves when a state is added: after start_state, compute)
  size_t best = npos, pos = i, steps = 0, row = start_row;  // row: where the state's moves start
  while (true) {
    size_t from = pos, len = 1;
    int32_t t;
    uint32_t sym;
    // ASCII bytes (but the last byte of the text, which may be a final newline) are their own
    // symbols: a tight loop over known moves, its state in registers (4x fewer instructions per
    // byte of English than one symbol_of call and one general step per byte). It ends with the
    // move it could not take, which the general step below then takes from t (without reading
    // it again).
    for (;; ++pos) {
      if (pos + 1 >= n || s[pos] >= 0x80) {
        sym = pos < n ? re_.symbol_of(s, n, pos, &len) : re_.eof_symbol_;
        t = trans[row + sym];
        break;
      }
      sym = s[pos];
      t = trans[row + sym];
      if (t <= 1) break;  // unknown (< 0), or the end of every thread (0, 1): the general step
      if (t & 1) best = pos;
      row = size_t(t >> 1) - symbols;
    }
    steps += pos - from + 1;
    // One general step: any symbol, a move to compute, the end.
    if (t < 0) {
      t = d.compute(int32_t(row / symbols), sym, &work_);
      if (t == -2) {  // too many states: drop them, and let the Pike VM finish this search
        d.reset(re_);
        work_ += steps;
        return kGiveUp;
      }
      trans = d.trans.data();
    }
    if (t & 1) best = pos;
    if (t <= 1 || pos >= n) break;
    row = size_t(t >> 1) - symbols;
    pos += len;
  }
  work_ += steps;
  return best;
}

SplitRegex::Search::Search(const SplitRegex& re, const uint8_t* s, size_t n) : re_(re), s_(s), n_(n) {
  // Work allowed to the Pike VM before the rest of the text goes to the backward program: a
  // multiple of what the backward program would cost for the whole text.
  budget_ = 4 * uint64_t(re.prog_.size() + 8) * (uint64_t(n) + 64);
  VmScratch& sc = scratch();
  if (sc.mark.size() < re.prog_.size()) sc.mark.assign(re.prog_.size(), 0);
  backward_ = false;
  if (re.use_dfa_) dfa_ = &dfa_for(re);
  if (re.force_backward_ && n > 0) run_backward(0);
}

bool SplitRegex::Search::test(const Inst& in, size_t pos) const {
  switch (in.test) {
    case kBeginText: return pos == 0;
    case kEndText: return pos == n_;
    case kEndOrFinalNewline: return pos == n_ || (pos + 1 == n_ && s_[pos] == '\n');
    case kNextNotIn:
    case kNextIn: {
      bool in_set = false;
      if (pos < n_) {
        uint32_t cp;
        size_t len;
        decode(s_, n_, pos, &cp, &len);
        in_set = re_.sets_[in.set].contains(cp);
      }
      return in.test == kNextIn ? in_set : !in_set;
    }
  }
  return false;
}

// Adds pc and what it reaches without reading, in priority order, skipping pcs already in the list.
void SplitRegex::Search::add_thread(std::vector<uint32_t>& list, uint32_t pc, size_t pos) {
  VmScratch& sc = scratch();
  std::vector<uint32_t>& stack = sc.stack;
  stack.clear();
  stack.push_back(pc);
  while (!stack.empty()) {
    uint32_t p = stack.back();
    stack.pop_back();
    if (sc.mark[p] == sc.generation) continue;
    sc.mark[p] = sc.generation;
    ++work_;
    const Inst& in = re_.prog_[p];
    switch (in.op) {
      case Inst::kSet:
      case Inst::kMatch: list.push_back(p); break;
      case Inst::kJmp: stack.push_back(in.x); break;
      case Inst::kSplit:
        stack.push_back(in.y);
        stack.push_back(in.x);
        break;
      case Inst::kAssert:
        if (test(in, pos)) stack.push_back(in.x);
        break;
    }
  }
}

size_t SplitRegex::Search::match_at(size_t i) {
  VmScratch& sc = scratch();
  std::vector<uint32_t>& clist = sc.clist;
  std::vector<uint32_t>& nlist = sc.nlist;
  clist.clear();
  ++sc.generation;
  add_thread(clist, re_.start_, i);
  size_t best = npos, pos = i;
  while (!clist.empty()) {
    uint32_t cp = 0;
    size_t len = 0;
    if (pos < n_) decode(s_, n_, pos, &cp, &len);
    nlist.clear();
    ++sc.generation;
    for (uint32_t pc : clist) {
      const Inst& in = re_.prog_[pc];
      ++work_;
      if (in.op == Inst::kMatch) {
        best = pos;  // threads after this one have lower priority: cut them
        break;
      }
      if (pos < n_ && re_.sets_[in.set].contains(cp)) add_thread(nlist, in.x, pos + len);
    }
    std::swap(clist, nlist);
    pos += len;
  }
  return best;
}

// The backward program: for each character start p from the end of the text back to `from`, and
// each pc, R(pc, p) = where the highest-priority path from pc at p matches, or npos. A set reads
// one character (R of its next pc at the next character), a split takes its first branch's R if
// any, else the second's; R(start, p) is the match a backtracking engine finds at p.
void SplitRegex::Search::run_backward(size_t from) {
  backward_ = true;
  starts_.clear();
  for (size_t p = from; p < n_;) {
    starts_.push_back(p);
    uint32_t cp;
    size_t len;
    decode(s_, n_, p, &cp, &len);
    p += len;
  }
  starts_.push_back(n_);
  size_t m = re_.prog_.size();
  std::vector<size_t> cur(m, npos), nxt(m, npos);
  ends_.assign(starts_.size(), npos);
  for (size_t k = starts_.size(); k-- > 0;) {
    size_t pos = starts_[k];
    uint32_t cp = 0;
    size_t len = 0;
    if (pos < n_) decode(s_, n_, pos, &cp, &len);
    for (uint32_t pc : re_.order_) {
      const Inst& in = re_.prog_[pc];
      size_t r = npos;
      switch (in.op) {
        case Inst::kMatch: r = pos; break;
        case Inst::kSet: r = pos < n_ && re_.sets_[in.set].contains(cp) ? nxt[in.x] : npos; break;
        case Inst::kJmp: r = cur[in.x]; break;
        case Inst::kSplit: r = cur[in.x] != npos ? cur[in.x] : cur[in.y]; break;
        case Inst::kAssert: r = test(in, pos) ? cur[in.x] : npos; break;
      }
      cur[pc] = r;
    }
    work_ += m;
    ends_[k] = cur[re_.start_];
    std::swap(cur, nxt);
  }
  k_ = 0;
}

// The first position from i > 0 on where a match may start: the DFA's start state (the same at
// every position but the first) must have a move on the character there, since a match reads at
// least one character. Found by a tight loop over the start state's row of moves instead of one
// search per character: the rare-match stages of a split sequence (DeepSeek V3's digits and CJK
// runs) skip most of the text this way. Stops early (and the search goes on as before) when a
// move is not computed yet and the DFA cannot add it.
size_t SplitRegex::Search::skip_dead_starts(size_t i) {
  Dfa& d = *dfa_;
  const uint32_t symbols = re_.num_symbols_;
  if (d.live_ranges < 0 && !d.find_live_ranges(&work_)) d.live_ranges = Dfa::kLiveRanges + 1;  // (the cache is full)
  const int32_t start = d.start_state(false);
  const bool by_blocks = d.live_ranges <= Dfa::kLiveRanges;
  size_t from = i;
  while (i < n_) {
    // Patterns that rarely match (DeepSeek's digits and CJK runs) pass over most of the text here:
    // 16 bytes at a time where few ASCII bytes can start a match (session 13).
    if (by_blocks && (i = d.skip_dead_ascii(s_, n_, i)) >= n_) break;
    uint8_t b = s_[i];
    size_t len = 1;
    uint32_t sym = b < 0x80 && b != '\n' ? b : re_.symbol_of(s_, n_, i, &len);
    int32_t t = d.trans[size_t(start) * symbols + sym];
    if (t < 0 && (t = d.compute(start, sym, &work_)) < 0) break;  // (-2: the cache is full)
    if (t != 0) break;  // 0: the move leads nowhere and matches nothing
    i += len;
  }
  work_ += i - from;
  return i;
}

bool SplitRegex::Search::next(size_t* begin, size_t* end) {
  if (!backward_) {
    while (pos_ < n_) {
      if (work_ > budget_) {
        run_backward(pos_);
        break;
      }
      size_t e = npos;
      if (dfa_) {
        e = match_at_dfa(pos_);
        if (e == kGiveUp) dfa_ = nullptr;
      }
      if (!dfa_) e = match_at(pos_);
      if (e != npos) {  // never empty: the pattern cannot match the empty string
        *begin = pos_;
        *end = e;
        pos_ = e;
        return true;
      }
      uint32_t cp;
      size_t len;
      decode(s_, n_, pos_, &cp, &len);
      pos_ += len;
      // After a failed search, not before each one: where every character starts a match
      // (cl100k-like patterns) the skip would cost 2% more instructions for nothing.
      if (dfa_) pos_ = skip_dead_starts(pos_);
    }
    if (!backward_) {
      work_counter() += work_;
      return false;
    }
  }
  while (k_ + 1 < starts_.size()) {
    size_t e = ends_[k_];
    if (e == npos) {
      ++k_;
      continue;
    }
    *begin = starts_[k_];
    *end = e;
    k_ = size_t(std::lower_bound(starts_.begin() + k_, starts_.end(), e) - starts_.begin());
    return true;
  }
  work_counter() += work_;
  return false;
}

}  // namespace tokenforge
