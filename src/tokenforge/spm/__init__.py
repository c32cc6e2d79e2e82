"""SentencePiece's pieces, without the sentencepiece package: its model file, normalizer, reference
algorithms and unigram trainer. (The tokenizer is tokenforge.SentencePieceTokenizer, spm/tokenizer.py;
the model stage is models.SentencePiece.)

    normalizer.py   the precompiled charsmap and whitespace rules (metaspace), pure Python
    model_file.py   the `.model` protobuf, read and written by a small wire-format reader
    tokenizer.py    SentencePieceTokenizer: the one Tokenizer with sentencepiece's methods
    reference.py    the pure-Python oracle of the native code
    trainer.py      unigram training (EM + pruning)
    files.py        tokenforge's JSON file and Hugging Face tokenizer.json

This package imports none of its modules, so that the model stage can use the low-level ones.
"""
