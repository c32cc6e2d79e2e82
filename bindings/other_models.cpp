// Other tokenizer families: WordPiece, greedy longest match over bytes and character-level BPE models, the pair trainer they share,
// and the word splitters (cpp/pre_split.h). The Python side (tokenforge/pipeline.py) normalizes;
// `encode_text(s)` split and encode natively, `encode_words`/`encode_batch` take pieces split in
// Python (regex or no pre-tokenizer). Ids come back with the GIL released for the work.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "char_bpe.h"
#include "common.h"
#include "special.h"
#include "longest_match.h"
#include "pre_split.h"
#include "unicode.h"
#include "wordpiece.h"

namespace nb = nanobind;
using namespace tokenforge;
using namespace tokenforge::py;

namespace {

// Views of the UTF-8 of each str in `words`, a list (the views point into its items, which the
// caller's list keeps alive).
std::vector<std::string_view> views_of(nb::handle words) {
  if (!PyList_Check(words.ptr())) throw nb::type_error("words must be a list of str");
  PyObject* fast = PySequence_Fast(words.ptr(), "words must be a list of str");
  if (!fast) throw nb::python_error();
  nb::object guard = nb::steal(fast);
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  std::vector<std::string_view> views;
  views.reserve(size_t(n));
  for (Py_ssize_t i = 0; i < n; ++i) views.push_back(utf8_of(items[i]));
  return views;
}

// Encodes the words of one text, each distinct word once (texts repeat their words a lot). The
// words seen are an open-addressing table of (hash, word, where its ids are in out), sized once for
// the call: std::unordered_map's node per word and its lookups were a fifth of a Llama-2-style
// text's time.
template <class EncodeWord>
void encode_words_cached(const std::vector<std::string_view>& words, std::vector<uint32_t>& out, EncodeWord encode_word) {
  if (words.size() < 2) {
    for (std::string_view w : words) encode_word(w, out);
    return;
  }
  struct Seen {
    uint64_t hash = 0;
    uint32_t word = UINT32_MAX;  // index into words; UINT32_MAX: an empty slot
    uint32_t length = 0;         // of its ids
    size_t offset = 0;           // of its ids in out
  };
  std::vector<Seen> seen(table_size_for(words.size()));
  const size_t mask = seen.size() - 1;
  for (size_t k = 0; k < words.size(); ++k) {
    std::string_view w = words[k];
    const uint64_t h = hash_bytes(reinterpret_cast<const uint8_t*>(w.data()), w.size());
    size_t i = h & mask;
    for (; seen[i].word != UINT32_MAX; i = (i + 1) & mask) {
      if (seen[i].hash == h && words[seen[i].word] == w) break;
    }
    if (seen[i].word != UINT32_MAX) {
      const size_t off = seen[i].offset, len = seen[i].length, at = out.size();
      out.resize(at + len);  // (indices after the resize: it may move the ids)
      std::copy(out.begin() + long(off), out.begin() + long(off + len), out.begin() + long(at));
      continue;
    }
    const size_t before = out.size();
    encode_word(w, out);
    seen[i] = Seen{h, uint32_t(k), uint32_t(out.size() - before), before};
  }
}

// Hugging Face's character classes for the word splitters, set once at import by
// tokenforge/pre_tokenizers.py (immutable afterwards).
std::unique_ptr<WordClassTable> g_word_classes;

const WordClassTable& word_classes() {
  if (!g_word_classes) throw nb::value_error("the word classes are not set (import tokenforge.pre_tokenizers)");
  return *g_word_classes;
}

std::vector<std::string_view> split_view(const WordClassTable& t, int how, std::string_view text) {
  std::vector<std::string_view> words;
  split_words(t, WordSplit(how), bytes_of(text), text.size(),
              [&](size_t b, size_t e) { words.push_back(text.substr(b, e - b)); });
  return words;
}

void check_split(int how) {
  if (how < 0 || how > 3) throw nb::value_error("unknown word split");
}

// encode_text / encode_texts for a model with encode_into(words, out): split natively, then encode.
template <class M>
nb::list encode_text_impl(const M& m, nb::handle text, int how) {
  check_split(how);
  const WordClassTable& t = word_classes();
  CallUtf8 utf8(text);
  std::string_view v = utf8.view;
  std::vector<uint32_t> out;
  std::string error;
  {
    nb::gil_scoped_release release;
    error = m.encode_into(split_view(t, how, v), out);
  }
  m.finish(error);
  return to_list(out);
}

template <class M>
nb::list encode_texts_impl(const M& m, nb::list texts, int how, size_t num_threads) {
  check_split(how);
  const WordClassTable& t = word_classes();
  BatchTexts batch(texts);
  std::vector<std::vector<uint32_t>> results(batch.size());
  std::vector<std::string> errors(batch.size());
  {
    nb::gil_scoped_release release;
    batch_parallel_for(batch, batch.threads_for(num_threads), [&](size_t i) {
      Utf8Buffer scratch;
      std::string_view v;
      if (!batch.utf8(i, scratch, &v)) return;
      errors[i] = m.encode_into(split_view(t, how, v), results[i]);
    });
  }
  batch.raise_surrogate();
  for (const auto& e : errors) m.finish(e);
  nb::list out;
  for (const auto& r : results) out.append(to_list(r));
  return out;
}

// Appends the UTF-8 of str s to out, written from its characters; a lone surrogate raises
// UnicodeEncodeError (a ValueError), as str.encode does.
void append_utf8(PyObject* s, std::string& out) {
  const Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  if (PyUnicode_IS_ASCII(s)) {
    out.append(static_cast<const char*>(PyUnicode_DATA(s)), size_t(n));
    return;
  }
  const int kind = PyUnicode_KIND(s);
  const void* data = PyUnicode_DATA(s);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (c < 0x80) {
      out.push_back(char(c));
    } else if (c < 0x800) {
      out.push_back(char(0xC0 | c >> 6));
      out.push_back(char(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      if (c >= 0xD800 && c < 0xE000) {  // let CPython raise its error
        Py_ssize_t size;
        if (!PyUnicode_AsUTF8AndSize(s, &size)) throw nb::python_error();
        throw nb::value_error("a token contains a lone surrogate");
      }
      out.push_back(char(0xE0 | c >> 12));
      out.push_back(char(0x80 | (c >> 6 & 0x3F)));
      out.push_back(char(0x80 | (c & 0x3F)));
    } else {
      out.push_back(char(0xF0 | c >> 18));
      out.push_back(char(0x80 | (c >> 12 & 0x3F)));
      out.push_back(char(0x80 | (c >> 6 & 0x3F)));
      out.push_back(char(0x80 | (c & 0x3F)));
    }
  }
}

// encode_words / encode_batch for the same models, on words already split in Python.
template <class M>
nb::list encode_words_impl(const M& m, nb::handle words) {
  std::vector<std::string_view> views = views_of(words);
  std::vector<uint32_t> out;
  std::string error;
  {
    nb::gil_scoped_release release;
    error = m.encode_into(views, out);
  }
  m.finish(error);
  return to_list(out);
}

template <class M>
nb::list encode_batch_impl(const M& m, nb::list batch, size_t num_threads) {
  std::vector<std::vector<std::string_view>> views;
  for (nb::handle words : batch) views.push_back(views_of(words));
  std::vector<std::vector<uint32_t>> results(views.size());
  std::vector<std::string> errors(views.size());
  size_t bytes = 0;
  for (const auto& words : views)
    for (std::string_view w : words) bytes += w.size();
  {
    nb::gil_scoped_release release;
    batch_parallel_for(views.size(), batch_threads(bytes, num_threads),
                       [&](size_t i) { errors[i] = m.encode_into(views[i], results[i]); });
  }
  for (const auto& e : errors) m.finish(e);
  nb::list out;
  for (const auto& r : results) out.append(to_list(r));
  return out;
}

// (id, UTF-8) of each token of a vocabulary {str: int}, without those in the set `excluded` (may be
// null), read from the dict itself: no list of pairs made in Python, each str written as UTF-8
// straight from its characters (not cached inside the str object, as asking CPython for its UTF-8
// does). The ids were checked by the Python model.
std::vector<std::pair<uint32_t, std::string>> tokens_of_vocab(PyObject* vocab, PyObject* excluded) {
  std::vector<std::pair<uint32_t, std::string>> tokens;
  tokens.reserve(size_t(PyDict_GET_SIZE(vocab)));
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(vocab, &pos, &key, &value)) {
    if (excluded) {
      const int skip = PySet_Contains(excluded, key);
      if (skip < 0) throw nb::python_error();
      if (skip) continue;
    }
    if (!PyUnicode_Check(key)) throw nb::type_error("vocabulary tokens must be str");
    const unsigned long id = PyLong_AsUnsignedLong(value);
    if (PyErr_Occurred() || id > 0xFFFFFFFFul) {
      PyErr_Clear();
      throw nb::type_error("vocabulary ids must be ints in [0, 2**32)");
    }
    tokens.emplace_back(uint32_t(id), std::string());
    append_utf8(key, tokens.back().second);
  }
  return tokens;
}

struct PyWordPiece {
  std::unique_ptr<WordPieceModel> model;

  PyWordPiece(const std::vector<std::pair<uint32_t, std::string>>& tokens, const std::string& prefix, uint32_t unk_id,
              size_t max_chars) {
    std::string error;
    model = WordPieceModel::create(tokens, prefix, unk_id, max_chars, &error);
    if (!model) throw nb::value_error(error.c_str());
  }

  // From the vocabulary {token: id} itself, without the tokens in `excluded` (the special ones):
  // the Python model no longer copies the vocabulary and builds a list of 30k pairs for this, and
  // each str is written as UTF-8 straight from its characters (not cached inside the str object,
  // as asking CPython for its UTF-8 does). The ids were checked by the Python model.
  PyWordPiece(nb::dict vocab, nb::set excluded, const std::string& prefix, uint32_t unk_id, size_t max_chars) {
    std::vector<std::pair<uint32_t, std::string>> tokens = tokens_of_vocab(vocab.ptr(), excluded.ptr());
    std::string error;
    model = WordPieceModel::create(tokens, prefix, unk_id, max_chars, &error);
    if (!model) throw nb::value_error(error.c_str());
  }

  std::string encode_into(const std::vector<std::string_view>& words, std::vector<uint32_t>& out) const {
    encode_words_cached(words, out, [&](std::string_view w, std::vector<uint32_t>& o) {
      model->encode_word(bytes_of(w), w.size(), o);
    });
    return {};
  }
  void finish(const std::string&) const {}
  nb::list encode_text(nb::handle text, int how) const { return encode_text_impl(*this, text, how); }
  nb::list encode_texts(nb::list texts, int how, size_t threads) const { return encode_texts_impl(*this, texts, how, threads); }

  nb::list encode_words(nb::handle words) const { return encode_words_impl(*this, words); }
  nb::list encode_batch(nb::list batch, size_t threads) const { return encode_batch_impl(*this, batch, threads); }
};

// Greedy longest match over bytes (RWKV's "world" tokenizer, cpp/longest_match.h) over a whole
// text (models/longest_match.py).
struct PyLongestMatch {
  std::unique_ptr<LongestMatchModel> model;
  std::unique_ptr<IntCache> ints;  // the ids' int objects, made once (as the byte-level engine keeps them)

  explicit PyLongestMatch(const std::vector<std::pair<uint32_t, nb::bytes>>& tokens) {
    std::vector<std::pair<uint32_t, std::string>> toks;
    toks.reserve(tokens.size());
    uint32_t max_id = 0;
    for (const auto& [id, b] : tokens) {
      toks.emplace_back(id, std::string(b.c_str(), b.size()));
      max_id = std::max(max_id, id);
    }
    std::string error;
    model = LongestMatchModel::create(toks, &error);
    if (!model) throw nb::value_error(error.c_str());
    // the dense range only: a few huge ids must not cost an int per id below them
    ints = std::make_unique<IntCache>(uint32_t(std::min<size_t>(size_t(max_id) + 1, 4 * toks.size() + 256)));
  }

  // The ids of a str (its UTF-8) or bytes.
  nb::list encode(nb::handle text) const {
    std::string_view v = PyBytes_Check(text.ptr())
                             ? std::string_view(PyBytes_AS_STRING(text.ptr()), size_t(PyBytes_GET_SIZE(text.ptr())))
                             : utf8_of(text.ptr());
    std::vector<uint32_t> out;
    {
      nb::gil_scoped_release release;
      out.reserve(v.size() / 3 + 1);
      model->encode(bytes_of(v), v.size(), out);
    }
    return ints->to_list(out);
  }

  nb::list encode_batch(nb::list texts, size_t num_threads) const {
    std::vector<std::string_view> views = views_of(texts);
    std::vector<std::vector<uint32_t>> results(views.size());
    size_t bytes = 0;
    for (std::string_view v : views) bytes += v.size();
    {
      nb::gil_scoped_release release;
      batch_parallel_for(views.size(), batch_threads(bytes, num_threads),
                         [&](size_t i) { model->encode(bytes_of(views[i]), views[i].size(), results[i]); });
    }
    nb::list out;
    for (const auto& r : results) out.append(ints->to_list(r));
    return out;
  }
};

struct PyCharBpe {
  std::unique_ptr<CharBpeModel> model;

  // tokens: a list of (id, text), or the vocabulary {text: id} itself (read natively: the ids were
  // checked by the Python model). merges: (left, right, merged) ids in rank order, or bytes packing
  // them as native uint32 triples (text_bpe_merges).
  PyCharBpe(nb::handle tokens, nb::handle merges, const std::string& end_marker, const std::string& start_marker,
            bool attached, int64_t unk_id, bool byte_fallback, bool fuse_unk, bool drop_unknown) {
    std::vector<std::pair<uint32_t, std::string>> toks =
        PyDict_Check(tokens.ptr()) ? tokens_of_vocab(tokens.ptr(), nullptr)
                                   : nb::cast<std::vector<std::pair<uint32_t, std::string>>>(tokens);
    std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> rules;
    if (PyBytes_Check(merges.ptr())) {
      const size_t size = size_t(PyBytes_GET_SIZE(merges.ptr()));
      if (size % 12) throw nb::value_error("packed merges: not a whole number of uint32 triples");
      const char* p = PyBytes_AS_STRING(merges.ptr());
      rules.reserve(size / 12);
      for (size_t k = 0; k < size; k += 12) {
        uint32_t t[3];
        std::memcpy(t, p + k, 12);
        rules.emplace_back(t[0], t[1], t[2]);
      }
    } else {
      rules = nb::cast<std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>>(merges);
    }
    CharBpeConfig config{end_marker, start_marker, attached, unk_id, byte_fallback, fuse_unk, drop_unknown};
    std::string error;
    model = CharBpeModel::create(toks, rules, config, &error);
    if (!model) throw nb::value_error(error.c_str());
  }
  explicit PyCharBpe(std::unique_ptr<CharBpeModel> m) : model(std::move(m)) {}

  // A model of a tokenizer.json: the vocabulary {text: id} and the merges as the file writes them
  // ("left right" or [left, right]), looked up in the model's own table of tokens (text_bpe_merges
  // made a second table for them: a fifth of loading a 4 KB file). (the model, the rules packed as
  // text_bpe_merges packs them), or None if a merge is not plain (parse_text_merges), for the
  // Python reader to name.
  static nb::object from_text_merges(nb::dict vocab, nb::handle merges, bool unique, const std::string& end_marker,
                                     int64_t unk_id, bool drop_unknown) {
    std::vector<std::pair<uint32_t, std::string>> toks = tokens_of_vocab(vocab.ptr(), nullptr);
    CharBpeConfig config{end_marker, "", true, unk_id, false, false, drop_unknown};
    std::string error;
    std::unique_ptr<CharBpeModel> m = CharBpeModel::create(toks, {}, config, &error);
    if (!m) throw nb::value_error(error.c_str());
    std::vector<uint32_t> rules;
    if (!parse_text_merges(merges.ptr(), unique, rules,
                           [&](std::string_view part, uint32_t* id) { return m->token_id(part, id); }))
      return nb::none();
    m->add_merges(rules.data(), rules.size() / 3);
    nb::object packed = nb::steal(PyBytes_FromStringAndSize(reinterpret_cast<const char*>(rules.data()),
                                                            Py_ssize_t(rules.size() * sizeof(uint32_t))));
    if (!packed.is_valid()) throw nb::python_error();
    return nb::make_tuple(nb::cast(PyCharBpe(std::move(m)), nb::rv_policy::move), packed);
  }

  // Returns an empty string on success, else the unknown character.
  std::string encode_into(const std::vector<std::string_view>& words, std::vector<uint32_t>& out) const {
    std::string bad_char;
    encode_words_cached(words, out, [&](std::string_view w, std::vector<uint32_t>& o) {
      size_t bad = 0;
      if (bad_char.empty() && !model->encode_word(bytes_of(w), w.size(), o, &bad)) {
        size_t b = static_cast<uint8_t>(w[bad]);
        size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        bad_char = std::string(w.substr(bad, len));
      }
    });
    return bad_char;
  }

  // Raises for the unknown character encode_into returned, if any.
  void finish(const std::string& bad) const {
    if (!bad.empty())
      throw nb::value_error(("the character '" + bad + "' is not in the vocabulary and the model has no unknown token").c_str());
  }
  nb::list encode_text(nb::handle text, int how) const { return encode_text_impl(*this, text, how); }
  nb::list encode_texts(nb::list texts, int how, size_t threads) const { return encode_texts_impl(*this, texts, how, threads); }
  nb::list encode_words(nb::handle words) const { return encode_words_impl(*this, words); }
  nb::list encode_batch(nb::list batch, size_t threads) const { return encode_batch_impl(*this, batch, threads); }

  // Whole texts (a pipeline without a pre-tokenizer: Llama-2-style files), each cut before every
  // "\u2581" (E2 96 81) whose preceding character is none of before_space (the characters that
  // precede a "\u2581" in some token: models/bpe.py BPE._cut_at_spaces says why the ids are the
  // same); the words of a text are encoded once each. Done here on the UTF-8, not with a Python
  // regex: every such word is non-ASCII, and a str per word asked CPython for its UTF-8 copy.
  std::vector<std::string> before_space{"\xe2\x96\x81"};
  void cut_before_spaces(std::string_view t, std::vector<std::string_view>& words) const {
    size_t start = 0;
    for (size_t i = 1; i + 3 <= t.size(); ++i) {
      if (uint8_t(t[i]) != 0xE2 || uint8_t(t[i + 1]) != 0x96 || uint8_t(t[i + 2]) != 0x81 || i == start ||
          char_before_is_one_of(bytes_of(t), start, i, before_space))
        continue;
      words.push_back(t.substr(start, i - start));
      start = i;
    }
    if (start < t.size()) words.push_back(t.substr(start));
  }
  std::string encode_cut_into(std::string_view text, std::vector<uint32_t>& out) const {
    std::vector<std::string_view> words;
    cut_before_spaces(text, words);
    return encode_into(words, out);
  }
  nb::list encode_cut(nb::list texts, size_t num_threads) const {
    std::vector<std::string_view> views = views_of(texts);
    std::vector<std::vector<uint32_t>> results(views.size());
    std::vector<std::string> errors(views.size());
    size_t bytes = 0;
    for (std::string_view v : views) bytes += v.size();
    {
      nb::gil_scoped_release release;
      batch_parallel_for(views.size(), batch_threads(bytes, num_threads),
                         [&](size_t i) { errors[i] = encode_cut_into(views[i], results[i]); });
    }
    for (const auto& e : errors) finish(e);
    nb::list out;
    for (const auto& r : results) out.append(to_list(r));
    return out;
  }

  // A stretch of text between added tokens (encode_parts, encode_in_place): cut before spaces as
  // encode_cut does, or one word. Returns the unknown character, as encode_into does.
  std::string encode_stretch_into(std::string_view v, bool cut, std::vector<uint32_t>& out) const {
    if (cut) return encode_cut_into(v, out);
    const std::vector<std::string_view> one{v};
    return encode_into(one, out);
  }

  // Tokenizer._in_place (added tokens of both kinds) and encode_parts in one native pass per text, on the threads: the
  // normalizer replaces the character `old` by `now` (UTF-8 of one character each); `written`
  // finds the added tokens matched as written in the text, `normalized` those matched in the
  // normalized text (LiteralFinder objects, or None for none; their literals' ids in `written_ids`
  // / `normalized_ids`); the stretches between tokens, normalized, are encoded as encode_parts
  // encodes them. Exact when no normalized token can straddle one matched as written (the caller
  // checks: tokenizer._char_map). Texts hold no lone surrogate (the caller replaced them).
  nb::list encode_in_place(nb::list texts, nb::handle written, const std::vector<uint32_t>& written_ids,
                           nb::handle normalized, const std::vector<uint32_t>& normalized_ids, const std::string& old,
                           const std::string& now, size_t num_threads, bool cut) const {
    const SpecialMatcher* raw = written.is_none() ? nullptr : &literal_matcher_of(written);
    const SpecialMatcher* norm = normalized.is_none() ? nullptr : &literal_matcher_of(normalized);
    if (old.empty() || now.empty()) throw nb::value_error("encode_in_place: the characters are empty");
    std::vector<std::string_view> views = views_of(texts);
    size_t bytes = 0;
    for (std::string_view v : views) bytes += v.size();
    const std::vector<char> all_raw(written_ids.size(), 1), all_norm(normalized_ids.size(), 1);
    std::vector<std::vector<uint32_t>> results(views.size());
    std::vector<std::string> errors(views.size());
    {
      nb::gil_scoped_release release;
      batch_parallel_for(views.size(), batch_threads(bytes, num_threads), [&](size_t i) {
        const std::string_view t = views[i];
        struct Found {
          size_t start, end;
          uint32_t id;
        };
        std::vector<Found> found;  // in the normalized text's bytes
        // the text normalized, and where each replaced character was in the text
        std::vector<size_t> at;
        std::string text;
        text.reserve(t.size() + t.size() / 8);
        for (size_t pos = 0;;) {
          const size_t k = t.find(old, pos);
          text.append(t.substr(pos, k == std::string_view::npos ? std::string_view::npos : k - pos));
          if (k == std::string_view::npos) break;
          at.push_back(k);
          text.append(now);
          pos = k + old.size();
        }
        const std::ptrdiff_t grow = std::ptrdiff_t(now.size()) - std::ptrdiff_t(old.size());
        auto shifted = [&](size_t p) {  // a position in the text -> in the normalized text
          const size_t before = size_t(std::lower_bound(at.begin(), at.end(), p) - at.begin());
          return size_t(std::ptrdiff_t(p) + std::ptrdiff_t(before) * grow);
        };
        if (raw) {
          for (size_t pos = 0; pos < t.size();) {
            const SpecialMatcher::Match m = raw->find_next(bytes_of(t), t.size(), pos, all_raw);
            if (m.index < 0) break;
            found.push_back({shifted(m.pos), shifted(m.pos + m.len), written_ids[size_t(m.index)]});
            pos = m.pos + m.len;
          }
        }
        const size_t first_normalized = found.size();
        if (norm) {
          for (size_t pos = 0; pos < text.size();) {
            const SpecialMatcher::Match m = norm->find_next(bytes_of(text), text.size(), pos, all_norm);
            if (m.index < 0) break;
            found.push_back({m.pos, m.pos + m.len, normalized_ids[size_t(m.index)]});
            pos = m.pos + m.len;
          }
        }
        std::inplace_merge(found.begin(), found.begin() + std::ptrdiff_t(first_normalized), found.end(),
                           [](const Found& a, const Found& b) { return a.start < b.start; });
        std::vector<uint32_t>& out = results[i];
        out.reserve(text.size() / 3 + 16);
        auto stretch = [&](size_t from, size_t to) {
          if (from >= to || !errors[i].empty()) return;
          errors[i] = encode_stretch_into(std::string_view(text.data() + from, to - from), cut, out);
        };
        size_t done = 0;
        for (const Found& f : found) {
          stretch(done, f.start);
          out.push_back(f.id);
          done = f.end;
        }
        stretch(done, text.size());
      });
    }
    for (const auto& e : errors) finish(e);
    nb::list out;
    for (const auto& r : results) out.append(to_list(r));
    return out;
  }

  // Texts given as their parts (Tokenizer._parts): ints, the ids of added tokens, kept as they are,
  // and str, the stretches of normalized text between them, encoded (cut before spaces with `cut`,
  // as encode_cut, else each one word); one flat list of ids per text. In place of a list per
  // stretch and the Python loop that joined them (Gemma's tokenizer.json cuts code at every
  // newline: a stretch per line).
  nb::list encode_parts(nb::list batch, size_t num_threads, bool cut) const {
    std::vector<std::vector<int64_t>> plans;  // per text: an id (>= 0), or -1 - the stretch's index
    std::vector<std::string_view> views;
    size_t bytes = 0;
    plans.reserve(size_t(PyList_GET_SIZE(batch.ptr())));
    for (nb::handle parts : batch) {
      if (!PyList_Check(parts.ptr())) throw nb::type_error("encode_parts: a list of lists of parts");
      std::vector<int64_t>& plan = plans.emplace_back();
      const Py_ssize_t n = PyList_GET_SIZE(parts.ptr());
      plan.reserve(size_t(n));
      for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject* part = PyList_GET_ITEM(parts.ptr(), k);
        if (PyUnicode_Check(part)) {
          plan.push_back(-1 - int64_t(views.size()));
          views.push_back(utf8_of(part));
          bytes += views.back().size();
        } else {
          const unsigned long id = PyLong_Check(part) ? PyLong_AsUnsignedLong(part) : ~0ul;
          if (PyErr_Occurred() || id >= 0xFFFFFFFFul) {
            PyErr_Clear();
            throw nb::type_error("encode_parts: a part is a str or an id (an int in [0, 2**32 - 1))");
          }
          plan.push_back(int64_t(id));
        }
      }
    }
    std::vector<std::vector<uint32_t>> results(views.size());
    std::vector<std::string> errors(views.size());
    {
      nb::gil_scoped_release release;
      batch_parallel_for(views.size(), batch_threads(bytes, num_threads),
                         [&](size_t i) { errors[i] = encode_stretch_into(views[i], cut, results[i]); });
    }
    for (const auto& e : errors) finish(e);
    nb::list out;
    std::vector<uint32_t> ids;
    for (const auto& plan : plans) {
      ids.clear();
      for (int64_t x : plan) {
        if (x >= 0) {
          ids.push_back(uint32_t(x));
        } else {
          const auto& r = results[size_t(-1 - x)];
          ids.insert(ids.end(), r.begin(), r.end());
        }
      }
      out.append(to_list(ids));
    }
    return out;
  }
};

nb::tuple py_train_pairs(std::vector<std::string> symbols, std::vector<std::vector<uint32_t>> words,
                         std::vector<uint64_t> counts, int score, uint64_t min_frequency, size_t max_new_tokens,
                         std::vector<std::string> markers, std::string strip_prefix) {
  if (words.size() != counts.size()) throw nb::value_error("words and counts differ in length");
  for (const auto& w : words)
    for (uint32_t s : w)
      if (s >= symbols.size()) throw nb::value_error("a word uses a symbol id that is not in the alphabet");
  TrainerConfig config;
  config.score = score == 1 ? TrainerConfig::kWordPiece : TrainerConfig::kCount;
  config.min_frequency = min_frequency;
  config.max_new_tokens = max_new_tokens;
  config.markers = std::move(markers);
  config.strip_prefix = std::move(strip_prefix);
  TrainerResult result;
  {
    nb::gil_scoped_release release;
    result = train_pairs(std::move(symbols), std::move(words), counts, config);
  }
  return nb::make_tuple(result.new_tokens, result.merges);
}

void set_word_classes(const WordClassTable::Ranges& word, const WordClassTable::Ranges& space,
                      const WordClassTable::Ranges& punct) {
  g_word_classes = std::make_unique<WordClassTable>(word, space, punct);
}

nb::list py_split_words(nb::handle text, int how) {
  check_split(how);
  std::string_view v = utf8_of(text);
  std::vector<std::string_view> words = split_view(word_classes(), how, v);
  nb::list out;
  for (auto w : words) out.append(nb::steal(PyUnicode_DecodeUTF8(w.data(), Py_ssize_t(w.size()), "strict")));
  return out;
}

// The pre-token count of many texts: {piece: count}.
nb::dict py_count_words(nb::list texts, int how) {
  check_split(how);
  const WordClassTable& t = word_classes();
  std::vector<std::string_view> views;
  for (nb::handle x : texts) views.push_back(utf8_of(x));
  std::unordered_map<std::string_view, uint64_t> counts;
  {
    nb::gil_scoped_release release;
    for (auto v : views)
      split_words(t, WordSplit(how), bytes_of(v), v.size(), [&](size_t b, size_t e) { ++counts[v.substr(b, e - b)]; });
  }
  nb::dict out;
  for (const auto& [w, c] : counts) {
    nb::object key = nb::steal(PyUnicode_DecodeUTF8(w.data(), Py_ssize_t(w.size()), "strict"));
    out[key] = nb::int_(c);
  }
  return out;
}

}  // namespace

void bind_other_models(nb::module_& m) {
  m.def("set_word_classes", &set_word_classes, nb::arg("word"), nb::arg("space"), nb::arg("punct"));
  m.def("split_words", &py_split_words, nb::arg("text"), nb::arg("how"));
  m.def("count_words", &py_count_words, nb::arg("texts"), nb::arg("how"));
  nb::class_<PyWordPiece>(m, "WordPiece")
      .def(nb::init<const std::vector<std::pair<uint32_t, std::string>>&, const std::string&, uint32_t, size_t>(),
           nb::arg("tokens"), nb::arg("prefix"), nb::arg("unk_id"), nb::arg("max_chars"))
      .def(nb::init<nb::dict, nb::set, const std::string&, uint32_t, size_t>(), nb::arg("vocab"), nb::arg("excluded"),
           nb::arg("prefix"), nb::arg("unk_id"), nb::arg("max_chars"))
      .def("encode_words", &PyWordPiece::encode_words, nb::arg("words"))
      .def("encode_batch", &PyWordPiece::encode_batch, nb::arg("batch"), nb::arg("num_threads"))
      .def("encode_text", &PyWordPiece::encode_text, nb::arg("text"), nb::arg("how"))
      .def("encode_texts", &PyWordPiece::encode_texts, nb::arg("texts"), nb::arg("how"), nb::arg("num_threads"));
  nb::class_<PyLongestMatch>(m, "LongestMatch")
      .def(nb::init<const std::vector<std::pair<uint32_t, nb::bytes>>&>(), nb::arg("tokens"))
      .def("encode", &PyLongestMatch::encode, nb::arg("text"))
      .def("encode_batch", &PyLongestMatch::encode_batch, nb::arg("texts"), nb::arg("num_threads"));
  nb::class_<PyCharBpe>(m, "CharBpe")
      .def(nb::init<nb::handle, nb::handle, const std::string&, const std::string&, bool, int64_t, bool, bool, bool>(),
           nb::arg("tokens"), nb::arg("merges"), nb::arg("end_marker"), nb::arg("start_marker"), nb::arg("attached"),
           nb::arg("unk_id"), nb::arg("byte_fallback") = false, nb::arg("fuse_unk") = false,
           nb::arg("drop_unknown") = false)
      .def("encode_words", &PyCharBpe::encode_words, nb::arg("words"))
      .def_static("from_text_merges", &PyCharBpe::from_text_merges, nb::arg("vocab"), nb::arg("merges"),
                  nb::arg("unique"), nb::arg("end_marker"), nb::arg("unk_id"), nb::arg("drop_unknown"))
      .def("encode_cut", &PyCharBpe::encode_cut, nb::arg("texts"), nb::arg("num_threads"))
      .def("encode_parts", &PyCharBpe::encode_parts, nb::arg("batch"), nb::arg("num_threads"), nb::arg("cut"))
      .def("encode_in_place", &PyCharBpe::encode_in_place, nb::arg("texts"), nb::arg("written").none(),
           nb::arg("written_ids"), nb::arg("normalized").none(), nb::arg("normalized_ids"), nb::arg("old"),
           nb::arg("now"), nb::arg("num_threads"), nb::arg("cut"))
      .def_rw("before_space", &PyCharBpe::before_space)
      .def("encode_batch", &PyCharBpe::encode_batch, nb::arg("batch"), nb::arg("num_threads"))
      .def("encode_text", &PyCharBpe::encode_text, nb::arg("text"), nb::arg("how"))
      .def("encode_texts", &PyCharBpe::encode_texts, nb::arg("texts"), nb::arg("how"), nb::arg("num_threads"));
  m.def("train_pairs", &py_train_pairs, nb::arg("symbols"), nb::arg("words"), nb::arg("counts"), nb::arg("score"),
        nb::arg("min_frequency"), nb::arg("max_new_tokens"), nb::arg("markers"), nb::arg("strip_prefix"));
}