"""Writes src/tokenforge/_hf_unicode.py: the character classes of Hugging Face `tokenizers`.

HF's BERT normalizer, StripAccents, BertPreTokenizer/Punctuation and the Whitespace pre-tokenizer
classify characters with Unicode tables older than Python's `unicodedata` (the Rust crates
`unicode_categories` and Oniguruma): 13 format characters are not "control", ~300 marks added since
are not "nonspacing marks", ~100 punctuation and ~4700 word characters are missing. To give the same
ids as HF, tokenforge uses HF's classes, measured here by running HF on every code point.

Usage: python tools/gen_hf_unicode_tables.py [OUT]   (needs `tokenizers`; tests/test_normalizers.py
checks the checked-in table against a fresh measurement when `tokenizers` is installed).
"""

import sys
from pathlib import Path


def measure() -> dict[str, list[tuple[int, int]]]:
    from tokenizers import normalizers as N
    from tokenizers import pre_tokenizers as P

    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    clean = N.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    strip = N.StripAccents()
    ws, bert = P.Whitespace(), P.BertPreTokenizer()
    bert_strip = N.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
    sets = {"control": set(), "space": set(), "mark": set(), "bert_mark": set(), "punct": set(), "word": set()}
    for c in cps:
        ch = chr(c)
        out = clean.normalize_str("a" + ch + "b")
        if out == "ab":
            sets["control"].add(c)
        if strip.normalize_str(ch) == "":
            sets["mark"].add(c)
        if bert_strip.normalize_str("a" + ch + "b") == "ab":
            sets["bert_mark"].add(c)
        pieces = [p for p, _ in bert.pre_tokenize_str("a" + ch + "a")]
        if pieces == ["a", ch, "a"]:
            sets["punct"].add(c)
        elif pieces == ["a", "a"]:
            sets["space"].add(c)
        if [p for p, _ in ws.pre_tokenize_str("a" + ch + "a")] == ["a" + ch + "a"]:
            sets["word"].add(c)
    return {k: ranges(v) for k, v in sets.items()}


def ranges(s) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for c in sorted(s):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [(a, b) for a, b in out]


def render(tables) -> str:
    import tokenizers

    lines = [
        '"""Character classes of Hugging Face `tokenizers` (measured, not derived: see',
        f"tools/gen_hf_unicode_tables.py; tokenizers {tokenizers.__version__}). Inclusive code point ranges.",
        "",
        "control: removed by BertNormalizer(clean_text); space: HF's whitespace (split by the BERT and",
        "Whitespace pre-tokenizers, mapped to ' ' by clean_text); mark: removed by StripAccents (its",
        "is_combining_mark); bert_mark: removed by BertNormalizer(strip_accents) after NFD (is_mark_nonspacing);",
        "punct: isolated by BertPreTokenizer and Punctuation; word: \\\\w of the Whitespace pre-tokenizer.",
        '"""',
        "",
        "# fmt: off",
    ]
    for name, rs in tables.items():
        lines.append(f"{name.upper()} = (")
        row = []
        for a, b in rs:
            row.append(f"(0x{a:X}, 0x{b:X}),")
            if len(row) == 6:
                lines.append("    " + " ".join(row))
                row = []
        if row:
            lines.append("    " + " ".join(row))
        lines.append(")")
    lines.append("# fmt: on")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "src/tokenforge/_hf_unicode.py"
    out.write_text(render(measure()), encoding="utf-8")
    print(f"wrote {out}")
