#include "model_proto.h"

#include <cmath>
#include <cstring>
#include <string_view>

#include "unicode.h"

namespace tokenforge {
namespace spm {

namespace {

// A varint as Python reads it: any size (`big` when bits beyond the 64 kept are set), at most 10 bytes.
struct Varint {
  uint64_t value = 0;
  bool big = false;
};

bool read_varint(const uint8_t* data, size_t n, size_t& pos, Varint& v) {
  v = Varint{};
  for (unsigned shift = 0;; shift += 7) {
    if (shift > 63) return false;  // longer than 10 bytes
    if (pos >= n) return false;    // truncated
    const uint64_t b = data[pos++];
    const uint64_t bits = b & 0x7F;
    v.value |= bits << shift;
    if (shift > 57 && (bits >> (64 - shift)) != 0) v.big = true;
    if (!(b & 0x80)) return true;
  }
}

// One field of a message: its number, wire type and value (a varint, or the bytes of a
// fixed32/fixed64/length-delimited value).
struct Field {
  uint64_t number = 0;  // UINT64_MAX when the key does not fit 64 bits: no field this reader knows
  unsigned wire = 0;
  Varint varint;
  const uint8_t* bytes = nullptr;
  size_t size = 0;
};

// Calls on_field(const Field&) for each field of data[0, n), in order; false if the message is
// malformed (exactly where model_file.fields raises).
template <class F>
bool for_each_field(const uint8_t* data, size_t n, F&& on_field) {
  size_t pos = 0;
  while (pos < n) {
    Varint key;
    if (!read_varint(data, n, pos, key)) return false;
    Field f;
    f.number = key.big ? UINT64_MAX : key.value >> 3;
    f.wire = unsigned(key.value & 7);
    if (f.number == 0) return false;
    size_t width;
    switch (f.wire) {
      case 0:
        if (!read_varint(data, n, pos, f.varint)) return false;
        width = 0;
        break;
      case 1:
        width = 8;
        break;
      case 2: {
        Varint size;
        if (!read_varint(data, n, pos, size)) return false;
        if (size.big || size.value > n - pos) return false;  // truncated
        width = size_t(size.value);
        break;
      }
      case 5:
        width = 4;
        break;
      default:
        return false;  // groups (3, 4) and the undefined 6, 7
    }
    if (width > n - pos) return false;
    f.bytes = data + pos;
    f.size = width;
    pos += width;
    if (!on_field(f)) return false;
  }
  return true;
}

bool is_reserved(uint8_t type) { return type == kUnknown || type == kControl || type == kByte; }

bool read_piece(const uint8_t* data, size_t n, Piece& piece) {
  Field text, score, type;  // the last of each, with the wire type of the schema
  bool has_text = false, has_score = false, has_type = false;
  bool ok = for_each_field(data, n, [&](const Field& f) {
    if (f.number == 1 && f.wire == 2) text = f, has_text = true;
    if (f.number == 2 && f.wire == 5) score = f, has_score = true;
    if (f.number == 3 && f.wire == 0) type = f, has_type = true;
    return true;
  });
  if (!ok) return false;
  if (has_text) {
    if (utf8_valid_prefix(text.bytes, text.size) != text.size || std::memchr(text.bytes, 0, text.size)) return false;
    piece.bytes.assign(reinterpret_cast<const char*>(text.bytes), text.size);
  }
  piece.score = 0.0f;
  if (has_score) std::memcpy(&piece.score, score.bytes, 4);  // little-endian, as the file
  if (!std::isfinite(piece.score)) return false;
  // an enum keeps its low 32 bits; a value outside the enum leaves the default (normal)
  const uint64_t low = has_type ? (type.varint.value & 0xFFFFFFFFu) : uint64_t(kNormal);
  piece.type = low >= kNormal && low <= kByte ? uint8_t(low) : uint8_t(kNormal);
  return true;
}

struct Spec {
  const uint8_t* bytes = nullptr;
  size_t size = 0;
};

}  // namespace

bool parse_model_proto(const uint8_t* data, size_t size, ModelProto* out) {
  *out = ModelProto{};
  size_t count = 0;  // sized once: growing the vector moved every piece again
  if (!for_each_field(data, size, [&](const Field& f) {
        count += f.wire == 2 && f.number == 1;
        return true;
      }))
    return false;
  out->pieces.reserve(count);
  Spec trainer, normalizer;
  bool ok = for_each_field(data, size, [&](const Field& f) {
    if (f.wire != 2) return true;
    if (f.number == 1) {
      out->pieces.emplace_back();
      return read_piece(f.bytes, f.size, out->pieces.back());
    }
    if (f.number == 2) trainer = {f.bytes, f.size};
    if (f.number == 3) normalizer = {f.bytes, f.size};
    return true;
  });
  if (!ok || out->pieces.empty()) return false;

  // a piece text defined twice among the normal pieces, or twice among the reserved ones
  const std::vector<Piece>& ps = out->pieces;
  std::vector<uint32_t> normal, reserved;
  normal.reserve(ps.size());
  for (uint32_t i = 0; i < ps.size(); ++i) (is_reserved(ps[i].type) ? reserved : normal).push_back(i);
  out->unreserved = std::make_shared<PieceMap>();
  PieceMap reserved_map;
  if (!out->unreserved->build(ps, normal) || !reserved_map.build(ps, reserved)) return false;

  bool model_type_ok = true;
  ok = for_each_field(trainer.bytes, trainer.size, [&](const Field& f) {
    if (f.wire == 0 && f.number == 3) {
      model_type_ok = !f.varint.big && f.varint.value >= 1 && f.varint.value <= 4;
      if (model_type_ok) out->model_type = int(f.varint.value);
    }
    const bool set = f.varint.big || f.varint.value != 0;
    if (f.wire == 0 && f.number == 35) out->byte_fallback = set;
    if (f.wire == 0 && f.number == 24) out->treat_whitespace_as_suffix = set;
    if (f.wire == 2 && f.number == 44) out->unk_surface.assign(reinterpret_cast<const char*>(f.bytes), f.size);
    return true;
  });
  if (!ok || !model_type_ok) return false;
  ok = for_each_field(normalizer.bytes, normalizer.size, [&](const Field& f) {
    const bool set = f.varint.big || f.varint.value != 0;
    if (f.wire == 2 && f.number == 1) out->normalizer_name.assign(reinterpret_cast<const char*>(f.bytes), f.size);
    if (f.wire == 2 && f.number == 2)
      out->precompiled_charsmap.assign(reinterpret_cast<const char*>(f.bytes), f.size);
    if (f.wire == 0 && f.number == 3) out->add_dummy_prefix = set;
    if (f.wire == 0 && f.number == 4) out->remove_extra_whitespaces = set;
    if (f.wire == 0 && f.number == 5) out->escape_whitespaces = set;
    return true;
  });
  if (!ok) return false;
  const auto* u = reinterpret_cast<const uint8_t*>(out->unk_surface.data());
  const auto* name = reinterpret_cast<const uint8_t*>(out->normalizer_name.data());
  if (utf8_valid_prefix(u, out->unk_surface.size()) != out->unk_surface.size() ||
      utf8_valid_prefix(name, out->normalizer_name.size()) != out->normalizer_name.size()) return false;
  if (trainer.bytes) out->raw_trainer_spec.assign(reinterpret_cast<const char*>(trainer.bytes), trainer.size);
  if (normalizer.bytes) out->raw_normalizer_spec.assign(reinterpret_cast<const char*>(normalizer.bytes), normalizer.size);
  return true;
}

}  // namespace spm
}  // namespace tokenforge
