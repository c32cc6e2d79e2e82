"""Exchange formats: Hugging Face tokenizer.json, tiktoken, GPT-2 encoder.json + vocab.bpe,
vocab.json + merges.txt. (Being built: see issue 5.)"""


def load_foreign(path, data: bytes, **overrides):
    raise ValueError(f"{path}: not a tokenforge file, and no other format is recognised")


def save_foreign(tok, path, format: str):
    raise ValueError(f"unknown format {format!r}; known: 'tokenforge'")
