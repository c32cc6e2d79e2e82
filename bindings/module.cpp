// The `tokenforge._core` module: one binding file per model (encoder.cpp, training.cpp,
// sentencepiece.cpp, other_models.cpp; byte_level_files.cpp reads JSON vocabularies) over the C++
// core in cpp/, which knows nothing of Python.
#include <cstdlib>

#include "block_scan.h"
#include "bpe.h"
#include "common.h"

namespace nb = nanobind;

void bind_encoder(nb::module_& m);
void bind_training(nb::module_& m);
void bind_sentencepiece(nb::module_& m);
void bind_other_models(nb::module_& m);
void bind_byte_level_files(nb::module_& m);
void bind_split_sequence(nb::module_& m);
void bind_literals(nb::module_& m);
void bind_dataset(nb::module_& m);

NB_MODULE(_core, m) {
  m.doc() = "tokenforge's native core: split patterns, byte-pair encoding, special tokens, training.";
  bind_encoder(m);
  bind_training(m);
  bind_sentencepiece(m);
  bind_other_models(m);
  bind_byte_level_files(m);
  bind_split_sequence(m);
  bind_literals(m);
  bind_dataset(m);
  m.def("_set_characters_per_thread", [](size_t grain) {
          return tokenforge::py::characters_per_thread().exchange(grain);
        },
        nb::arg("grain"),
        "Batches start a thread per this many characters at most (1: as many as asked); returns the "
        "previous value. For the tests.");
  m.def("_set_radix_heap_min", [](size_t bytes) { return tokenforge::BytePairModel::exchange_radix_heap_min(bytes); },
        nb::arg("bytes"),
        "Byte-pair pieces of at least this many bytes are merged with the radix heap; returns the "
        "previous value. For the tests.");
  m.def("block_isa", [] { return tokenforge::block_scan::wide_blocks() ? "avx512bw" : "sse2"; },
        "The instructions the split patterns' 64-byte blocks are classified with (benchmarks report it).");
  // nanobind reports objects still alive when the interpreter exits as "leaked". Python itself
  // never frees what a daemon thread or a reference cycle in a module holds at exit (a tokenizer
  // held by a server thread, say), so users would see that report for correct programs. It is a
  // tool for finding reference-count bugs in the bindings: on with TOKENFORGE_LEAK_WARNINGS=1
  // (the hardening tests set it).
  const char* leak_warnings = std::getenv("TOKENFORGE_LEAK_WARNINGS");
  nb::set_leak_warnings(leak_warnings != nullptr && leak_warnings[0] == '1');
}
