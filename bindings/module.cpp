// The `tokenforge._core` module: one binding file per model (encoder.cpp, training.cpp,
// sentencepiece.cpp, other_models.cpp; byte_level_files.cpp reads JSON vocabularies) over the C++
// core in cpp/, which knows nothing of Python.
#include "common.h"

namespace nb = nanobind;

void bind_encoder(nb::module_& m);
void bind_training(nb::module_& m);
void bind_sentencepiece(nb::module_& m);
void bind_other_models(nb::module_& m);
void bind_byte_level_files(nb::module_& m);
void bind_dataset(nb::module_& m);

NB_MODULE(_core, m) {
  m.doc() = "tokenforge's native core: split patterns, byte-pair encoding, special tokens, training.";
  bind_encoder(m);
  bind_training(m);
  bind_sentencepiece(m);
  bind_other_models(m);
  bind_byte_level_files(m);
  bind_dataset(m);
}
