// The byte-level BPE encoder (`_core.Encoder`) and the split-pattern engine (`_core.Pattern`):
// str in, ids out, the GIL released around the native work.
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "common.h"
#include "encoder.h"
#include "split_sequence.h"

namespace nb = nanobind;
using namespace tokenforge;
using namespace tokenforge::py;

namespace tokenforge::py {

std::shared_ptr<const SplitRegex> compile_split_pattern(const std::string& pattern) {
  std::string error;
  std::shared_ptr<const SplitRegex> re = SplitRegex::compile(pattern, &error);
  if (!re) throw UnsupportedPatternError("the split pattern is outside the native engine's subset: " + error);
  return re;
}

}  // namespace tokenforge::py

namespace {

// Texts up to this many bytes are encoded without releasing the GIL (a few microseconds at most).
constexpr size_t kKeepGilBytes = 1024;

// The calls' reused id buffers start at room for this many ids (16 MiB of address space, in pages
// the kernel gives only when an id is written there). A buffer sized by its first text was
// reallocated when a larger text came, and the copy and the new pages faulted in again; the freed
// block was then often taken by the next result list, which in turn faulted in fresh pages.
constexpr size_t kFirstIdsRoom = size_t(1) << 22;

// The special tokens a mask selects, one char per token; empty (no allocation: most calls) when
// it selects none.
std::vector<char> mask_of(const Encoder& enc, nb::bytes mask) {
  // mask.size() once: it is a call into Python (PyBytes_Size), and a loop condition calling it
  // made each call cost microseconds per thousand special tokens.
  size_t n = std::min(enc.specials().size(), size_t(mask.size()));
  const char* given = mask.c_str();
  if (std::find_if(given, given + n, [](char c) { return c != 0; }) == given + n) return {};
  std::vector<char> m(enc.specials().size(), 0);
  std::memcpy(m.data(), given, n);
  return m;
}

bool any(const std::vector<char>& mask) {
  for (char c : mask)
    if (c) return true;
  return false;
}

// What a batch's threads find while they read its texts (encode_batch, encode_flat): text i's
// UTF-8, unless it has a lone surrogate or (with a `check` mask) holds a disallowed special token;
// then the first such text in order is raised on the caller's thread: UnicodeEncodeError for a
// surrogate (the Python layer retries with the surrogates replaced, and that text is checked
// too), else DisallowedSpecial with the index of the token found.
// Which of a batch's n results are finished (any thread), and the ones at the front taken in
// order as they finish (by one thread at a time: the caller with the GIL, or under a lock). The
// list batch turns them into lists and the flat batch appends them while other threads encode.
class InOrder {
 public:
  explicit InOrder(size_t n) : n_(n), finished_(new std::atomic<bool>[n]) {
    for (size_t i = 0; i < n; ++i) finished_[i].store(false, std::memory_order_relaxed);
  }
  void finish(size_t i) { finished_[i].store(true, std::memory_order_release); }
  bool next_finished() const { return taken_ < n_ && finished_[taken_].load(std::memory_order_acquire); }
  // Calls take(i) for each finished result at the front, in order.
  template <class Take>
  void take_finished(Take take) {
    for (; next_finished(); ++taken_) take(taken_);
  }

 private:
  size_t n_, taken_ = 0;
  std::unique_ptr<std::atomic<bool>[]> finished_;
};

class BatchChecks {
 public:
  BatchChecks(const Encoder& enc, const BatchTexts& batch, const std::vector<char>& check)
      : enc_(enc), batch_(batch), check_(check), checking_(any(check)), disallowed_at_(batch.size()),
        found_(checking_ ? batch.size() : 0, -1) {}
  // Text i's UTF-8 in *v (converted into `scratch` if need be; any thread), or false.
  bool read(size_t i, Utf8Buffer& scratch, std::string_view* v) {
    if (!batch_.utf8(i, scratch, v)) return false;  // (the batch remembers the first such text)
    if (checking_ && (found_[i] = enc_.find_special(bytes_of(*v), v->size(), check_).index) >= 0) {
      at_most(disallowed_at_, i);
      return false;
    }
    return true;
  }
  // Raises for the first text read() refused, if any (with the GIL).
  void raise_first() const {
    if (batch_.surrogate_at() < disallowed_at_) batch_.raise_surrogate();
    if (disallowed_at_ < batch_.size()) throw DisallowedSpecialError(std::to_string(found_[disallowed_at_]));
  }

 private:
  const Encoder& enc_;
  const BatchTexts& batch_;
  const std::vector<char>& check_;
  bool checking_;
  std::atomic<size_t> disallowed_at_;  // the first text with a disallowed special token, if any
  std::vector<int> found_;             // per text: the index of the token found
};

struct PyEncoder {
  std::unique_ptr<Encoder> enc;
  std::unique_ptr<IntCache> ints;
  std::array<char, 256> absent_{};  // the bytes without a token (see the constructor)

  // `merges`: a sequence of (left id, right id, merged id), or bytes packing them as native uint32
  // triples (what byte_level_merges reads from a tokenizer.json: no tuple per merge on either side).
  // `absent`: bytes without a token. A vocabulary may lack the bytes no UTF-8 text holds (C0, C1,
  // F5-FF: MPT's, Falcon's, StarCoder's). The byte-pair model needs a token for every byte, so each
  // gets one of its own, with an id past every real one, that the decoder does not know: text
  // (UTF-8) never holds those bytes, and encode_pieces drops them from raw pieces first, as
  // tokenizers drops a character that has no token.
  // `decode_only`: (id, bytes) of tokens the byte pairs never make (spelled outside GPT-2's
  // alphabet in a tokenizer.json: Command-R's emoji); only the decoder knows them.
  // `tokens`: the ranks {bytes: id} themselves (read here: no list of pairs made in Python, 151k
  // tuples for Qwen3), or a sequence of (id, bytes).
  PyEncoder(nb::handle tokens, nb::handle merges, bool whole_piece_lookup,
            nb::handle pattern, const std::vector<std::pair<nb::bytes, uint32_t>>& specials, nb::bytes absent,
            const std::vector<std::pair<uint32_t, nb::bytes>>& decode_only) {
    std::shared_ptr<const SplitRegex> split = split_pattern_of(pattern);  // first: may raise UnsupportedPattern
    std::vector<std::pair<uint32_t, std::string>> toks;
    if (PyDict_Check(tokens.ptr())) {
      toks.reserve(size_t(PyDict_GET_SIZE(tokens.ptr())));
      PyObject *key, *value;
      Py_ssize_t pos = 0;
      while (PyDict_Next(tokens.ptr(), &pos, &key, &value)) {
        const unsigned long id = PyLong_Check(value) ? PyLong_AsUnsignedLong(value) : ~0ul;
        if (PyErr_Occurred() || id >= 0xFFFFFFFFul) {
          PyErr_Clear();
          throw nb::type_error("token ids must be ints in [0, 2**32 - 1)");
        }
        if (PyBytes_Check(key))
          toks.emplace_back(uint32_t(id), std::string(PyBytes_AS_STRING(key), size_t(PyBytes_GET_SIZE(key))));
        else if (PyByteArray_Check(key))
          toks.emplace_back(uint32_t(id), std::string(PyByteArray_AS_STRING(key), size_t(PyByteArray_GET_SIZE(key))));
        else
          throw nb::type_error("tokens must be bytes");
      }
    } else {
      auto pairs = nb::cast<std::vector<std::pair<uint32_t, nb::bytes>>>(tokens);
      toks.reserve(pairs.size());
      for (const auto& [id, b] : pairs) toks.emplace_back(id, std::string(b.c_str(), b.size()));
    }
    std::vector<MergeRule> rules;
    if (PyBytes_Check(merges.ptr())) {
      const size_t size = size_t(PyBytes_GET_SIZE(merges.ptr()));
      if (size % sizeof(MergeRule) != 0) throw nb::value_error("packed merges: not a whole number of uint32 triples");
      static_assert(sizeof(MergeRule) == 3 * sizeof(uint32_t), "three uint32 per rule");
      rules.resize(size / sizeof(MergeRule));
      if (size) std::memcpy(rules.data(), PyBytes_AS_STRING(merges.ptr()), size);
    } else {
      auto triples = nb::cast<std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>>(merges);
      rules.reserve(triples.size());
      for (const auto& [l, r, m] : triples) rules.push_back({l, r, m});
    }
    std::vector<SpecialToken> sp;
    for (const auto& [b, id] : specials) sp.push_back({std::string(b.c_str(), b.size()), id});
    std::string error;
    std::unique_ptr<BytePairModel> model;
    if (absent.size() == 0) {
      model = BytePairModel::create(toks, rules, whole_piece_lookup, &error);
    } else {
      uint32_t next = 0;
      for (const auto& t : toks) next = std::max(next, t.first);
      for (const auto& s : sp) next = std::max(next, s.id);
      for (const auto& d : decode_only) next = std::max(next, d.first);
      auto with_absent = toks;
      for (size_t k = 0; k < absent.size(); ++k) {
        uint8_t b = uint8_t(absent.c_str()[k]);
        if (absent_[b] || next >= 0xFFFFFFFEu) throw nb::value_error("absent bytes: a byte twice, or no id left");
        absent_[b] = 1;
        with_absent.emplace_back(++next, std::string(1, char(b)));
      }
      model = BytePairModel::create(with_absent, rules, whole_piece_lookup, &error);
    }
    if (!model) throw nb::value_error(error.c_str());
    auto decoder = std::move(toks);
    for (const auto& s : sp) decoder.emplace_back(s.id, s.bytes);
    for (const auto& [id, b] : decode_only) decoder.emplace_back(id, std::string(b.c_str(), b.size()));
    uint32_t max_id = 0;
    for (const auto& t : decoder) max_id = std::max(max_id, t.first);
    size_t num_tokens = decoder.size();
    enc = std::make_unique<Encoder>(std::move(model), std::move(split), std::move(sp), std::move(decoder));
    // Cached ints for the dense range of ids only: a few huge ids must not cost an int per id below
    // them (to_list makes ids beyond the cache on demand).
    size_t cached = std::min(size_t(max_id) + 1, Encoder::dense_limit(num_tokens));
    ints = std::make_unique<IntCache>(uint32_t(cached));
  }

  nb::list to_list(const std::vector<uint32_t>& ids) const { return ints->to_list(ids); }

  void require_split() const {
    if (!enc->can_split()) throw nb::value_error("this encoder has no native split pattern");
  }

  void encode_into(std::string_view text, const std::vector<char>& mask, std::vector<uint32_t>& out) const {
    if (any(mask))
      enc->encode(bytes_of(text), text.size(), mask, out);
    else
      enc->encode_ordinary(bytes_of(text), text.size(), out);
  }

  // With a `disallowed` mask, first looks for those special tokens in the same UTF-8 (tiktoken's
  // check, made here so that the text is converted once): if one occurs, raises DisallowedSpecial
  // with the index of the first found (the Python layer words tiktoken's error).
  void encode_vec(nb::handle text, nb::bytes allowed, nb::bytes disallowed, std::vector<uint32_t>& out) const {
    require_split();
    CallUtf8 utf8(text);
    std::string_view v = utf8.view;
    std::vector<char> mask = mask_of(*enc, allowed), check = mask_of(*enc, disallowed);
    int found = -1;
    {
      // A short text keeps the GIL: its encoding takes about as long as releasing and taking the
      // lock back.
      std::optional<nb::gil_scoped_release> release;
      if (v.size() > kKeepGilBytes) release.emplace();
      if (any(check)) found = enc->find_special(bytes_of(v), v.size(), check).index;
      if (found < 0) {
        size_t room = v.size() / 4 + 16;
        if (out.capacity() < room) out.reserve(std::max(room, kFirstIdsRoom));
        encode_into(v, mask, out);
      }
    }
    if (found >= 0) throw DisallowedSpecialError(std::to_string(found));
  }

  nb::list encode(nb::handle text, nb::bytes allowed, nb::bytes disallowed) const {
    thread_local std::vector<uint32_t> ids;  // reused: its capacity grows to the largest text once
    ids.clear();
    encode_vec(text, allowed, disallowed, ids);
    nb::list out = to_list(ids);
    if (ids.capacity() > (size_t(1) << 24)) std::vector<uint32_t>().swap(ids);  // do not keep a huge buffer
    return out;
  }

  // The ids are encoded into the thread's reused buffer, then copied once into a new array of
  // exactly their size: a fresh vector grown while encoding reallocated and copied (a megabyte of
  // text: 250,000 ids reserved, 270,000 needed) and faulted in new pages for every call; one
  // exact copy costs less than that.
  nb::object encode_to_numpy(nb::handle text, nb::bytes allowed, nb::bytes disallowed) const {
    thread_local std::vector<uint32_t> scratch;
    scratch.clear();
    encode_vec(text, allowed, disallowed, scratch);
    nb::object ids = numpy_copy(scratch.data(), scratch.size());
    if (scratch.capacity() > (size_t(1) << 24)) std::vector<uint32_t>().swap(scratch);  // do not keep a huge buffer
    return ids;
  }

  // The lists are built while the texts are encoded: after each text it encodes, the caller's
  // thread takes the GIL and turns the results finished so far (by any thread) into lists, so
  // the list building, which must hold the GIL, overlaps the other threads' encoding instead of
  // following it.
  // With a `disallowed` mask, each text is first searched for those special tokens in the thread
  // that encodes it (as encode does; BatchChecks).
  nb::list encode_batch(nb::list texts, nb::bytes allowed, size_t num_threads, nb::bytes disallowed) const {
    require_split();
    BatchTexts batch(texts);
    std::vector<char> mask = mask_of(*enc, allowed), check = mask_of(*enc, disallowed);
    BatchChecks checks(*enc, batch, check);
    size_t n = batch.size();
    PyObject* list = PyList_New(Py_ssize_t(n));
    if (!list) throw nb::python_error();
    nb::list out = nb::steal<nb::list>(list);
    std::vector<std::vector<uint32_t>> results(n);
    InOrder order(n);  // (taken by the caller's thread, with the GIL)
    bool out_of_memory = false;
    auto convert_finished = [&] {  // with the GIL held
      order.take_finished([&](size_t i) {
        PyObject* ids = out_of_memory ? nullptr : ints->to_list_or_null(results[i]);
        if (!ids) {
          out_of_memory = true;
          PyErr_Clear();
          ids = Py_None;
          Py_INCREF(ids);
        }
        PyList_SET_ITEM(list, Py_ssize_t(i), ids);
        std::vector<uint32_t>().swap(results[i]);
      });
    };
    {
      nb::gil_scoped_release release;
      size_t threads = batch.threads_for(num_threads);
      batch_parallel_for(
          batch, threads,
          [&](size_t i) {
            std::vector<uint32_t> ids;  // built locally: neighbouring results[] share cache lines
            Utf8Buffer scratch;
            std::string_view v;
            if (checks.read(i, scratch, &v)) {
              ids.reserve(v.size() / 3 + 16);  // (most texts: grown never or once)
              BytePairModel::BatchText in_batch(threads > 1);
              encode_into(v, mask, ids);
            }
            results[i] = std::move(ids);
            order.finish(i);
          },
          [&] {
            if (order.next_finished()) {
              nb::gil_scoped_acquire acquire;
              convert_finished();
            }
          });
    }
    convert_finished();
    checks.raise_first();
    if (out_of_memory) throw std::bad_alloc();
    return out;
  }

  // Many texts into one flat array: text k's ids, then suffix[k] if it is >= 0 (the dataset path).
  // Returns (ids, offsets): text k's ids are ids[offsets[k]:offsets[k + 1]]. With a `check` mask,
  // each text is first searched for those special tokens in the thread that encodes it, as in
  // encode_batch (BatchChecks).
  std::pair<std::vector<uint32_t>*, std::vector<int64_t>*> encode_flat(
      const BatchTexts& batch, const std::vector<char>& mask, const std::vector<int64_t>* suffix,
      size_t num_threads, const std::vector<char>& check = {}) const {
    size_t n = batch.size();
    num_threads = batch.threads_for(num_threads);
    BatchChecks checks(*enc, batch, check);
    auto flat = std::make_unique<std::vector<uint32_t>>();
    auto offsets = std::make_unique<std::vector<int64_t>>(n + 1, 0);
    {
      nb::gil_scoped_release release;
      // Room for all of it first (grown while encoding, the array was copied and its new pages
      // faulted in at every doubling; one thread, ab_builds.py --threads 1,1 --kind numpy,
      // 1M-character English batches: 1.023 and 0.888 in the two orders); grown if text needs more.
      flat->reserve(batch.characters() / 3 + 16);
      if (n == 1 || num_threads <= 1) {  // one thread: straight into the flat array
        Utf8Buffer scratch;
        for (size_t i = 0; i < n; ++i) {
          std::string_view v;
          if (!checks.read(i, scratch, &v)) break;
          encode_into(v, mask, *flat);
          if (suffix && (*suffix)[i] >= 0) flat->push_back(uint32_t((*suffix)[i]));
          (*offsets)[i + 1] = int64_t(flat->size());
        }
      } else {
        // Finished texts are appended to the flat array in order while the other threads go on
        // encoding (by whichever thread finds the lock free after finishing a text; as the list
        // batch does with the caller), not all copied after the last one.
        std::vector<std::vector<uint32_t>> results(n);
        InOrder order(n);  // (taken with append_lock held)
        std::mutex append_lock;
        auto append_finished = [&] {
          order.take_finished([&](size_t i) {
            flat->insert(flat->end(), results[i].begin(), results[i].end());
            (*offsets)[i + 1] = int64_t(flat->size());
            std::vector<uint32_t>().swap(results[i]);
          });
        };
        batch_parallel_for(batch, num_threads, [&](size_t i) {
          std::vector<uint32_t> ids;  // built locally: neighbouring results[] share cache lines
          Utf8Buffer scratch;
          std::string_view v;
          if (!checks.read(i, scratch, &v)) return;
          ids.reserve(v.size() / 3 + 16);  // (most texts: grown never or once)
          {
            BytePairModel::BatchText in_batch(true);
            encode_into(v, mask, ids);
          }
          if (suffix && (*suffix)[i] >= 0) ids.push_back(uint32_t((*suffix)[i]));
          results[i] = std::move(ids);
          order.finish(i);
          if (append_lock.try_lock()) {
            std::lock_guard<std::mutex> unlock(append_lock, std::adopt_lock);
            append_finished();
          }
        });
        append_finished();  // (the threads are done: no lock needed)
      }
    }
    checks.raise_first();
    return {flat.release(), offsets.release()};
  }

  nb::tuple encode_batch_to_numpy(nb::list texts, nb::bytes allowed, size_t num_threads, nb::bytes disallowed) const {
    require_split();
    BatchTexts batch(texts);
    std::vector<char> mask = mask_of(*enc, allowed), check = mask_of(*enc, disallowed);
    auto [ids, offsets] = encode_flat(batch, mask, nullptr, num_threads, check);
    std::unique_ptr<std::vector<int64_t>> owned_offsets(offsets);
    nb::object ids_array = numpy_of(ids);  // (each numpy_of owns its vector from the call on)
    return nb::make_tuple(ids_array, numpy_of(owned_offsets.release()));
  }

  // The dataset path's older form: (ids, number of ids per text).
  nb::tuple encode_ordinary_batch_flat(nb::list texts, const std::vector<int64_t>& suffix, size_t num_threads) const {
    require_split();
    if (suffix.size() != texts.size()) throw nb::value_error("one suffix per text");
    BatchTexts batch(texts);
    std::vector<char> none(enc->specials().size(), 0);
    auto [ids, offsets] = encode_flat(batch, none, &suffix, num_threads);
    std::vector<size_t> counts(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) counts[i] = size_t((*offsets)[i + 1] - (*offsets)[i]);
    delete offsets;
    return nb::make_tuple(numpy_of(ids), counts);
  }

  size_t count(nb::handle text, nb::bytes allowed) const {
    thread_local std::vector<uint32_t> ids;
    ids.clear();
    encode_vec(text, allowed, nb::bytes(""), ids);
    size_t n = ids.size();
    if (ids.capacity() > (size_t(1) << 24)) std::vector<uint32_t>().swap(ids);
    return n;
  }

  nb::list encode_pieces(const std::vector<nb::bytes>& pieces) const {
    std::vector<uint32_t> out;
    std::string kept;
    for (const auto& p : pieces) {
      const auto* b = reinterpret_cast<const uint8_t*>(p.c_str());
      if (std::none_of(b, b + p.size(), [&](uint8_t c) { return absent_[c]; })) {
        enc->encode_piece(b, p.size(), out);
        continue;
      }
      kept.clear();  // (the bytes without a token dropped)
      for (size_t i = 0; i < p.size(); ++i)
        if (!absent_[b[i]]) kept += char(b[i]);
      enc->encode_piece(reinterpret_cast<const uint8_t*>(kept.data()), kept.size(), out);
    }
    return to_list(out);
  }

  // Ordinary text split by a `_core.SplitSequence` (DeepSeek V3's pre-tokenizer), its pieces
  // encoded where they lie in the text: no bytes object per piece (those took most of the time).
  nb::list encode_split(nb::handle text, nb::handle sequence) const {
    const SplitSequence& seq = split_sequence_of(sequence);
    CallUtf8 utf8(text);
    std::string_view v = utf8.view;
    std::vector<uint32_t> out;
    {
      nb::gil_scoped_release release;
      encode_split_into(v, seq, out);
    }
    return to_list(out);
  }
  void encode_split_into(std::string_view v, const SplitSequence& seq, std::vector<uint32_t>& out) const {
    std::vector<std::pair<size_t, size_t>> spans;
    seq.byte_pieces(bytes_of(v), v.size(), spans);
    enc->encode_spans(bytes_of(v), v.size(), spans, out);
  }

  // encode_split over many texts on native threads (the stretches between added tokens of a batch).
  nb::list encode_split_batch(nb::list texts, nb::handle sequence, size_t num_threads) const {
    const SplitSequence& seq = split_sequence_of(sequence);
    BatchTexts batch(texts);
    size_t n = batch.size();
    std::vector<std::vector<uint32_t>> results(n);
    {
      nb::gil_scoped_release release;
      size_t threads = batch.threads_for(num_threads);
      batch_parallel_for(batch, threads, [&](size_t i) {
        Utf8Buffer scratch;
        std::string_view v;
        if (!batch.utf8(i, scratch, &v)) return;
        BytePairModel::BatchText in_batch(threads > 1);
        encode_split_into(v, seq, results[i]);
      });
    }
    batch.raise_surrogate();
    PyObject* list = PyList_New(Py_ssize_t(n));
    if (!list) throw nb::python_error();
    nb::list out = nb::steal<nb::list>(list);
    for (size_t i = 0; i < n; ++i) PyList_SET_ITEM(list, Py_ssize_t(i), to_list(results[i]).release().ptr());
    return out;
  }

  nb::list split(nb::handle text) const {
    require_split();
    std::string_view v = utf8_of(text);
    std::vector<std::pair<size_t, size_t>> spans;
    {
      nb::gil_scoped_release release;
      enc->split(bytes_of(v), v.size(), spans);
    }
    nb::list out;
    for (auto [b, e] : spans) out.append(nb::bytes(v.data() + b, e - b));
    return out;
  }

  // Index of the first special token selected by `mask` found in text, or -1.
  int find_special(nb::handle text, nb::bytes mask) const {
    CallUtf8 utf8(text);
    std::string_view v = utf8.view;
    std::vector<char> m = mask_of(*enc, mask);
    if (m.empty()) return -1;  // (none selected)
    SpecialMatcher::Match match;
    {
      nb::gil_scoped_release release;
      match = enc->find_special(bytes_of(v), v.size(), m);
    }
    return match.index;
  }

  nb::bytes decode_bytes(nb::handle seq) const {
    std::vector<uint32_t> ids = ids_of(seq);
    std::string out;
    size_t bad = 0;
    bool ok;
    {
      nb::gil_scoped_release release;
      ok = enc->decode(ids.data(), ids.size(), out, &bad);
    }
    if (!ok) throw nb::value_error(("invalid token id " + std::to_string(ids[bad]) + " (not in the vocabulary)").c_str());
    return nb::bytes(out.data(), out.size());
  }

  nb::list decode_tokens_bytes(nb::handle seq) const {
    std::vector<uint32_t> ids = ids_of(seq);
    nb::list out;
    for (uint32_t id : ids) {
      const char* p;
      size_t len;
      if (!enc->token_bytes(id, &p, &len))
        throw nb::value_error(("invalid token id " + std::to_string(id) + " (not in the vocabulary)").c_str());
      out.append(nb::bytes(p, len));
    }
    return out;
  }
};

// A compiled split pattern on its own: the pieces of a text as `regex.finditer` gives them.
struct PyPattern {
  std::shared_ptr<SplitRegex> re;

  // engine: "auto" (a named pattern's scanner when the pattern means the same, else the lazy DFA),
  // and for the tests "dfa" (never a scanner), "vm" (the Pike VM alone) or "backward" (the
  // backward dynamic program for the whole text).
  PyPattern(const std::string& pattern, const std::string& engine) {
    if (engine != "auto" && engine != "dfa" && engine != "vm" && engine != "backward")
      throw nb::value_error("engine must be 'auto', 'dfa', 'vm' or 'backward'");
    std::string error;
    std::unique_ptr<SplitRegex> compiled = SplitRegex::compile(pattern, &error);
    if (!compiled) throw UnsupportedPatternError("the split pattern is outside the native engine's subset: " + error);
    if (engine != "auto") compiled->disable_scanner();
    if (engine == "backward") compiled->set_force_backward(true);
    if (engine == "vm") compiled->set_use_dfa(false);
    re = std::move(compiled);
  }

  std::vector<std::pair<size_t, size_t>> byte_spans(std::string_view v) const {
    std::vector<std::pair<size_t, size_t>> spans;
    nb::gil_scoped_release release;
    re->for_each_match(bytes_of(v), v.size(), [&](size_t b, size_t e) { spans.emplace_back(b, e); });
    return spans;
  }

  // Code point offsets of each match.
  std::vector<std::pair<size_t, size_t>> spans(nb::handle text) const {
    CallUtf8 utf8(text);
    std::string_view v = utf8.view;
    std::vector<std::pair<size_t, size_t>> spans = byte_spans(v);
    to_code_points(v, spans);
    return spans;
  }

  nb::list split(nb::handle text) const {
    std::string_view v = utf8_of(text);
    nb::list out;
    for (auto [b, e] : byte_spans(v))
      out.append(nb::steal(PyUnicode_DecodeUTF8(v.data() + b, Py_ssize_t(e - b), "strict")));
    return out;
  }

  // Work units the engine spent on text (thread steps and program steps): the tests check that it
  // grows linearly with the text.
  uint64_t work(nb::handle text) const {
    std::string_view v = utf8_of(text);
    std::atomic<uint64_t>& counter = SplitRegex::work_counter();
    counter = 0;
    byte_spans(v);
    return counter;
  }

  nb::object scanner() const {
    PieceScanner s = re->scanner();
    for (int k = 0; k < 3; ++k)
      if (s && s == scanner_for(SplitPattern(k))) return nb::str(k == 0 ? "gpt2" : k == 1 ? "cl100k" : "o200k");
    return nb::none();
  }
};

// A .tiktoken file ("base64-token rank" per line) as a dict {token bytes: rank}, or None when the
// file is not exactly well formed (bad base64 or padding, a rank that is not 1-10 digits or not
// below 2**32, an empty token, a duplicate token or rank): the Python parser then names the line.
nb::object parse_tiktoken(nb::bytes data) {
  static const auto table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[uint8_t(alphabet[i])] = int8_t(i);
    return t;
  }();
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.c_str());
  size_t n = data.size(), i = 0;
  nb::dict out;
  std::vector<uint32_t> ranks;
  std::string token;
  while (i < n) {
    size_t end = i;
    while (end < n && p[end] != '\n') ++end;
    size_t line_end = end > i && p[end - 1] == '\r' ? end - 1 : end;
    if (line_end > i) {
      size_t space = i;
      while (space < line_end && p[space] != ' ') ++space;
      size_t b64_len = space - i;
      if (space == line_end || b64_len == 0 || b64_len % 4 != 0) return nb::none();
      size_t pad = p[space - 1] == '=' ? (p[space - 2] == '=' ? 2 : 1) : 0;
      token.clear();
      uint32_t acc = 0;
      int bits = 0;
      for (size_t k = i; k < space - pad; ++k) {
        int v = table[p[k]];
        if (v < 0) return nb::none();
        acc = (acc << 6) | uint32_t(v);
        bits += 6;
        if (bits >= 8) {
          bits -= 8;
          token.push_back(char((acc >> bits) & 0xFF));
        }
      }
      if (acc & ((1u << bits) - 1)) return nb::none();  // non-zero padding bits: not canonical
      size_t digits = line_end - space - 1;
      if (digits == 0 || digits > 10 || token.empty()) return nb::none();
      uint64_t rank = 0;
      for (size_t k = space + 1; k < line_end; ++k) {
        if (p[k] < '0' || p[k] > '9') return nb::none();
        rank = rank * 10 + (p[k] - '0');
      }
      if (rank >= (uint64_t(1) << 32)) return nb::none();
      nb::bytes key(token.data(), token.size());
      if (PyDict_Contains(out.ptr(), key.ptr())) return nb::none();
      PyObject* value = PyLong_FromUnsignedLongLong(rank);
      if (!value || PyDict_SetItem(out.ptr(), key.ptr(), value) < 0) {
        Py_XDECREF(value);
        throw nb::python_error();
      }
      Py_DECREF(value);
      ranks.push_back(uint32_t(rank));
    }
    i = end + 1;
  }
  std::sort(ranks.begin(), ranks.end());
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) return nb::none();
  return out;
}

}  // namespace

namespace tokenforge::py {

const Encoder& encoder_of(nb::handle core) {
  if (!nb::isinstance<PyEncoder>(core)) throw nb::type_error("expected a tokenforge._core.Encoder");
  return *nb::cast<const PyEncoder&>(core).enc;
}

}  // namespace tokenforge::py

void bind_encoder(nb::module_& m) {
  m.def("parse_tiktoken", &parse_tiktoken, nb::arg("data"));
  // Whether a str holds a lone surrogate (it has no UTF-8): read in place, without converting it.
  m.def("has_surrogates", [](nb::handle text) {
    StrForm form(text.ptr());  // (kind 0: ASCII, or a UTF-8 CPython made, so none)
    return form.kind != 0 && has_surrogate(form.data, form.kind, form.length);
  }, nb::arg("text"));
  nb::exception<UnsupportedPatternError>(m, "UnsupportedPattern", PyExc_ValueError);
  nb::exception<DisallowedSpecialError>(m, "DisallowedSpecial", PyExc_ValueError);
  nb::class_<PyPattern>(m, "Pattern")
      .def(nb::init<const std::string&, const std::string&>(), nb::arg("pat_str"), nb::arg("engine") = "auto")
      .def("spans", &PyPattern::spans, nb::arg("text"))
      .def("split", &PyPattern::split, nb::arg("text"))
      .def("work", &PyPattern::work, nb::arg("text"))
      .def_prop_ro("scanner", &PyPattern::scanner)
      .def_prop_ro("program_size", [](const PyPattern& p) { return p.re->program_size(); });
  nb::class_<PyEncoder>(m, "Encoder")
      .def(nb::init<nb::handle, nb::handle, bool, nb::handle,
                    const std::vector<std::pair<nb::bytes, uint32_t>>&, nb::bytes,
                    const std::vector<std::pair<uint32_t, nb::bytes>>&>(),
           nb::arg("tokens"), nb::arg("merges"), nb::arg("whole_piece_lookup"), nb::arg("pattern").none(),
           nb::arg("specials"), nb::arg("absent") = nb::bytes(""),
           nb::arg("decode_only") = std::vector<std::pair<uint32_t, nb::bytes>>())
      .def("encode", &PyEncoder::encode, nb::arg("text"), nb::arg("allowed"), nb::arg("disallowed") = nb::bytes(""))
      .def("encode_to_numpy", &PyEncoder::encode_to_numpy, nb::arg("text"), nb::arg("allowed"),
           nb::arg("disallowed") = nb::bytes(""))
      .def("encode_batch", &PyEncoder::encode_batch, nb::arg("texts"), nb::arg("allowed"), nb::arg("num_threads"),
           nb::arg("disallowed") = nb::bytes(""))
      .def("encode_batch_to_numpy", &PyEncoder::encode_batch_to_numpy, nb::arg("texts"), nb::arg("allowed"),
           nb::arg("num_threads"), nb::arg("disallowed") = nb::bytes(""))
      .def("encode_ordinary_batch_flat", &PyEncoder::encode_ordinary_batch_flat, nb::arg("texts"),
           nb::arg("suffix"), nb::arg("num_threads"))
      .def("count", &PyEncoder::count, nb::arg("text"), nb::arg("allowed"))
      .def("encode_pieces", &PyEncoder::encode_pieces, nb::arg("pieces"))
      .def("encode_split", &PyEncoder::encode_split, nb::arg("text"), nb::arg("sequence"))
      .def("encode_split_batch", &PyEncoder::encode_split_batch, nb::arg("texts"), nb::arg("sequence"),
           nb::arg("num_threads"))
      .def("split", &PyEncoder::split, nb::arg("text"))
      .def_prop_ro("named_split", [](const PyEncoder& e) { return e.enc->named_split(); })
      .def("find_special", &PyEncoder::find_special, nb::arg("text"), nb::arg("mask"))
      .def("decode_bytes", &PyEncoder::decode_bytes, nb::arg("ids"))
      .def("decode_tokens_bytes", &PyEncoder::decode_tokens_bytes, nb::arg("ids"));
}
