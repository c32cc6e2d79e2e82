// A sentencepiece `.model` file (a serialized ModelProto) read natively: the same fields, checks and
// defaults as the pure-Python reader src/tokenforge/spm/model_file.py, which stays the oracle and
// names the problem when this reader refuses a file (it only says yes or no). No Python here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "unigram.h"

namespace tokenforge {
namespace spm {

struct ModelProto {
  std::vector<Piece> pieces;  // text (valid UTF-8, no NUL), finite score, type in 1..6
  int model_type = 1;         // TrainerSpec.ModelType, 1..4
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  std::string unk_surface = " \xe2\x81\x87 ";
  std::string normalizer_name;  // "" when the file has none (as the Python reader)
  std::string precompiled_charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
  std::string raw_trainer_spec, raw_normalizer_spec;  // the sub-messages as written ("" if absent)
  // the pieces other than unknown, control and byte ones, by their bytes (made to check that no two
  // are equal; a BPE model built from the file uses it)
  std::shared_ptr<PieceMap> unreserved;
};

// True when the Python reader accepts the bytes, with *out what it reads; false when it raises.
// Memory stays proportional to the input: lengths are checked before anything is copied.
bool parse_model_proto(const uint8_t* data, size_t size, ModelProto* out);

}  // namespace spm
}  // namespace tokenforge
