// SentencePiece-style models: cpp/unigram.h behind `_core.SentencePieceModel`. The Python side is
// src/tokenforge/spm/; this file only converts arguments and releases the GIL.
#include <cstring>
#include <random>

#include "common.h"
#include <mutex>

#include "model_proto.h"
#include "unigram.h"

namespace nb = nanobind;
using namespace tokenforge;
using namespace tokenforge::py;

namespace {

// A parsed .model file (cpp/model_proto.h). Python reads its pieces as columns (texts, float32
// scores, types) and hands it back to SentencePieceModel, so the pieces never cross as tuples.
struct PyModelProto {
  spm::ModelProto proto;  // its pieces moved to `pieces`, shared with the models built from it
  std::shared_ptr<const std::vector<spm::Piece>> pieces;

  nb::list texts() const {
    PyObject* list = PyList_New(Py_ssize_t(pieces->size()));
    if (!list) throw nb::python_error();
    nb::list out = nb::steal<nb::list>(list);
    for (size_t i = 0; i < pieces->size(); ++i) {
      const std::string& b = (*pieces)[i].bytes;
      PyObject* s = PyUnicode_DecodeUTF8(b.data(), Py_ssize_t(b.size()), "strict");  // checked UTF-8
      if (!s) throw nb::python_error();
      PyList_SET_ITEM(list, Py_ssize_t(i), s);
    }
    return out;
  }
  nb::str text(size_t i) const {
    if (i >= pieces->size()) throw nb::index_error("piece index out of range");
    const std::string& b = (*pieces)[i].bytes;
    return nb::str(b.data(), b.size());
  }
  // The texts of pieces `ids` (a Tokenizer's construction reads those of its control and byte
  // pieces: one call instead of one per piece).
  nb::list texts_at(const std::vector<size_t>& ids) const {
    nb::list out;
    for (size_t i : ids) out.append(text(i));
    return out;
  }
  // The first piece whose bytes are `raw`, or -1: a scan, for the few lookups of a Tokenizer's construction.
  long find(nb::bytes raw) const {
    const std::string_view want(raw.c_str(), raw.size());
    for (size_t i = 0; i < pieces->size(); ++i)
      if ((*pieces)[i].bytes == want) return long(i);
    return -1;
  }
  nb::bytes scores() const {  // float32, native order: array("f", scores)
    std::string raw(pieces->size() * sizeof(float), '\0');
    for (size_t i = 0; i < pieces->size(); ++i) std::memcpy(&raw[i * sizeof(float)], &(*pieces)[i].score, sizeof(float));
    return nb::bytes(raw.data(), raw.size());
  }
  nb::bytes types() const {
    std::string raw(pieces->size(), '\0');
    for (size_t i = 0; i < pieces->size(); ++i) raw[i] = char((*pieces)[i].type);
    return nb::bytes(raw.data(), raw.size());
  }
  nb::dict settings() const {
    const spm::ModelProto& p = proto;
    nb::dict d;
    d["model_type"] = p.model_type;
    d["byte_fallback"] = p.byte_fallback;
    d["treat_whitespace_as_suffix"] = p.treat_whitespace_as_suffix;
    d["unk_surface"] = nb::str(p.unk_surface.data(), p.unk_surface.size());
    d["normalizer_name"] = nb::str(p.normalizer_name.data(), p.normalizer_name.size());
    d["precompiled_charsmap"] = nb::bytes(p.precompiled_charsmap.data(), p.precompiled_charsmap.size());
    d["add_dummy_prefix"] = p.add_dummy_prefix;
    d["remove_extra_whitespaces"] = p.remove_extra_whitespaces;
    d["escape_whitespaces"] = p.escape_whitespaces;
    d["raw_trainer_spec"] = nb::bytes(p.raw_trainer_spec.data(), p.raw_trainer_spec.size());
    d["raw_normalizer_spec"] = nb::bytes(p.raw_normalizer_spec.data(), p.raw_normalizer_spec.size());
    return d;
  }
};

struct PySentencePieceModel {
  std::unique_ptr<spm::Model> model;
  mutable std::unique_ptr<IntCache> ints_;  // made on the first list of ids (training models never need it)
  mutable std::once_flag ints_once;
  const IntCache* ints() const {
    std::call_once(ints_once, [&] { ints_ = std::make_unique<IntCache>(uint32_t(model->size())); });
    return ints_.get();
  }
  std::mt19937_64 rng{std::random_device{}()};

  // pieces: a list of (UTF-8 bytes, score, type), or a parsed .model file (its pieces, copied natively)
  PySentencePieceModel(nb::handle pieces, int algorithm, bool byte_fallback, nb::bytes charsmap, bool add_dummy_prefix,
                       bool remove_extra_whitespaces, bool escape_whitespaces, bool treat_whitespace_as_suffix) {
    std::shared_ptr<const std::vector<spm::Piece>> ps;
    std::shared_ptr<const spm::PieceMap> unreserved;
    if (nb::isinstance<PyModelProto>(pieces)) {
      const PyModelProto& proto = nb::cast<const PyModelProto&>(pieces);
      ps = proto.pieces;
      unreserved = proto.proto.unreserved;
    } else {
      auto tuples = nb::cast<std::vector<std::tuple<nb::bytes, float, int>>>(pieces);
      auto own = std::make_shared<std::vector<spm::Piece>>();
      own->reserve(tuples.size());
      for (const auto& [b, score, type] : tuples) own->push_back({std::string(b.c_str(), b.size()), score, uint8_t(type)});
      ps = std::move(own);
    }
    spm::NormalizerSpec spec;
    spec.charsmap.assign(charsmap.c_str(), charsmap.size());
    spec.add_dummy_prefix = add_dummy_prefix;
    spec.remove_extra_whitespaces = remove_extra_whitespaces;
    spec.escape_whitespaces = escape_whitespaces;
    spec.treat_whitespace_as_suffix = treat_whitespace_as_suffix;
    if (algorithm != int(spm::Algorithm::kUnigram) && algorithm != int(spm::Algorithm::kBpe))
      throw nb::value_error("algorithm must be 1 (unigram) or 2 (bpe)");
    std::string error;
    {
      nb::gil_scoped_release release;
      model = spm::Model::create(std::move(ps), spm::Algorithm(algorithm), byte_fallback, spec, &error,
                                 std::move(unreserved));
    }
    if (!model) throw nb::value_error(error.c_str());
  }

  nb::list encode(nb::handle text) const {
    CallUtf8 utf8(text);
    std::string_view v = utf8.view;
    std::vector<uint32_t> out;
    {
      nb::gil_scoped_release release;
      out.reserve(v.size() / 3 + 1);
      model->encode(bytes_of(v), v.size(), out);
    }
    return ints()->to_list(out);
  }

  nb::list encode_batch(nb::list texts, size_t num_threads) const {
    BatchTexts batch(texts);
    std::vector<std::vector<uint32_t>> results(batch.size());
    {
      nb::gil_scoped_release release;
      batch_parallel_for(batch, batch.threads_for(num_threads), [&](size_t i) {
        std::vector<uint32_t> ids;  // built locally: neighbouring results[] share cache lines
        Utf8Buffer scratch;
        std::string_view v;
        if (!batch.utf8(i, scratch, &v)) return;
        model->encode(bytes_of(v), v.size(), ids);
        results[i] = std::move(ids);
      });
    }
    batch.raise_surrogate();
    nb::list out;
    for (const auto& r : results) out.append(ints()->to_list(r));
    return out;
  }

  nb::str normalize(nb::handle text) const {
    CallUtf8 utf8(text);
    std::string_view v = utf8.view;
    std::string out;
    model->normalize(bytes_of(v), v.size(), out);
    return nb::str(out.data(), out.size());
  }

  // (begin, end, id) spans of normalized text (bytes), before byte fallback.
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> segment(nb::bytes normalized) const {
    std::vector<spm::Span> spans;
    model->segment(reinterpret_cast<const uint8_t*>(normalized.c_str()), normalized.size(), spans);
    std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> out;
    for (const auto& s : spans) out.emplace_back(s.begin, s.end, s.id);
    return out;
  }

  // Subword regularization: normalize, draw a segmentation, post-process (unigram only).
  nb::list sample(nb::handle text, double alpha, nb::object seed) {
    if (!seed.is_none()) rng.seed(nb::cast<uint64_t>(seed));
    CallUtf8 utf8(text);
    std::string_view v = utf8.view;
    std::string normalized;
    model->normalize(bytes_of(v), v.size(), normalized);
    std::vector<spm::Span> spans;
    const uint8_t* s = reinterpret_cast<const uint8_t*>(normalized.data());
    model->sample(s, normalized.size(), alpha, rng, spans);
    std::vector<uint32_t> out;
    model->spans_to_ids(s, spans, out);
    return ints()->to_list(out);
  }

  nb::tuple expected_counts(const std::vector<nb::bytes>& words, const std::vector<double>& freqs) const {
    if (words.size() != freqs.size()) throw nb::value_error("one frequency per word");
    std::vector<std::string> ws;
    ws.reserve(words.size());
    for (const auto& w : words) ws.emplace_back(w.c_str(), w.size());
    auto* counts = new std::vector<double>();
    double total;
    {
      nb::gil_scoped_release release;
      total = model->expected_counts(ws, freqs, *counts);
    }
    return nb::make_tuple(numpy_of(counts), total);
  }

  std::vector<std::vector<int32_t>> alternatives() const {
    nb::gil_scoped_release release;
    return model->alternatives();
  }

  nb::tuple viterbi_counts(const std::vector<nb::bytes>& words, const std::vector<double>& freqs) const {
    if (words.size() != freqs.size()) throw nb::value_error("one frequency per word");
    std::vector<std::string> ws;
    ws.reserve(words.size());
    for (const auto& w : words) ws.emplace_back(w.c_str(), w.size());
    std::vector<double> counts, word_freq;
    {
      nb::gil_scoped_release release;
      model->viterbi_counts(ws, freqs, counts, word_freq);
    }
    return nb::make_tuple(counts, word_freq);
  }
};

}  // namespace

void bind_sentencepiece(nb::module_& m) {
  nb::class_<PyModelProto>(m, "SentencePieceModelProto")
      .def("texts", &PyModelProto::texts)
      .def("text", &PyModelProto::text, nb::arg("i"))
      .def("texts_at", &PyModelProto::texts_at, nb::arg("ids"))
      .def("find", &PyModelProto::find, nb::arg("raw"))
      .def("scores", &PyModelProto::scores)
      .def("types", &PyModelProto::types)
      .def("settings", &PyModelProto::settings)
      .def("__len__", [](const PyModelProto& p) { return p.pieces->size(); });
  // The .model file's ModelProto, or None where spm/model_file.py raises (it then names the problem).
  m.def(
      "parse_sentencepiece_model",
      [](nb::bytes data) -> nb::object {
        auto parsed = std::make_unique<PyModelProto>();
        bool ok;
        {
          nb::gil_scoped_release release;
          ok = spm::parse_model_proto(reinterpret_cast<const uint8_t*>(data.c_str()), data.size(), &parsed->proto);
        }
        if (!ok) return nb::none();
        parsed->pieces = std::make_shared<const std::vector<spm::Piece>>(std::move(parsed->proto.pieces));
        return nb::cast(parsed.release(), nb::rv_policy::take_ownership);
      },
      nb::arg("data"));
  nb::class_<PySentencePieceModel>(m, "SentencePieceModel")
      .def(nb::init<nb::handle, int, bool, nb::bytes, bool, bool, bool, bool>(),
           nb::arg("pieces"), nb::arg("algorithm"), nb::arg("byte_fallback"), nb::arg("charsmap"),
           nb::arg("add_dummy_prefix"), nb::arg("remove_extra_whitespaces"), nb::arg("escape_whitespaces"),
           nb::arg("treat_whitespace_as_suffix"))
      .def("encode", &PySentencePieceModel::encode, nb::arg("text"))
      .def("encode_batch", &PySentencePieceModel::encode_batch, nb::arg("texts"), nb::arg("num_threads"))
      .def("normalize", &PySentencePieceModel::normalize, nb::arg("text"))
      .def("segment", &PySentencePieceModel::segment, nb::arg("normalized"))
      .def("sample", &PySentencePieceModel::sample, nb::arg("text"), nb::arg("alpha"), nb::arg("seed").none())
      .def("expected_counts", &PySentencePieceModel::expected_counts, nb::arg("words"), nb::arg("freqs"))
      .def("viterbi_counts", &PySentencePieceModel::viterbi_counts, nb::arg("words"), nb::arg("freqs"))
      .def("alternatives", &PySentencePieceModel::alternatives);
  // Training seeds: the top_k (substring bytes, count x length) of the words (cpp/unigram.h).
  m.def(
      "sentencepiece_count_substrings",
      [](const std::vector<nb::bytes>& words, const std::vector<double>& freqs, size_t max_chars, double min_count,
         size_t top_k) {
        if (words.size() != freqs.size()) throw nb::value_error("one frequency per word");
        std::vector<std::string> ws;
        ws.reserve(words.size());
        for (const auto& w : words) ws.emplace_back(w.c_str(), w.size());
        std::vector<std::pair<std::string, double>> counts;
        {
          nb::gil_scoped_release release;
          counts = spm::count_substrings(ws, freqs, max_chars, min_count, top_k);
        }
        nb::list out;
        for (const auto& [k, v] : counts) out.append(nb::make_tuple(nb::bytes(k.data(), k.size()), v));
        return out;
      },
      nb::arg("words"), nb::arg("freqs"), nb::arg("max_chars"), nb::arg("min_count"), nb::arg("top_k"));
}