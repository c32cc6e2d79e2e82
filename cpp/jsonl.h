// Reading corpus bytes for dataset encoding without Python objects: strict UTF-8 validation and the
// text field of one JSON-lines record, unescaped to UTF-8.
//
// The reader is a strict subset of what the Python reader (dataset_readers.jsonl_documents) takes:
// a line it answers kText for gives exactly the text json.loads(line)[field] would; anything it is
// not sure about (invalid UTF-8 or JSON, NaN, a lone surrogate in the text or a key,
// deep nesting, a missing or non-string field) is kOther, and the caller hands that line to the
// Python reader, which accepts it or raises its error naming the file and line.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tokenforge {

enum class RecordKind {
  kText,   // `text` holds the field's string, as UTF-8
  kBlank,  // only ASCII whitespace (Python's bytes.strip() leaves nothing): no document
  kOther,  // for the Python reader to decide
};

// One line (without its '\n'): a JSON object whose last member named `field` is a string.
RecordKind read_jsonl_record(const uint8_t* s, size_t n, std::string_view field, std::string& text);

}  // namespace tokenforge
