"""Hostile files and unlucky inputs, each run against tokenforge and against the peer library that
reads the same thing (tiktoken, Hugging Face tokenizers, sentencepiece), for docs/reliability.md.

Every case is a short script run in a fresh process with a time limit and a 4 GB address-space
limit; the table reports what happened: the clear error, the result, a crash (signal), a hang (the
time limit), or running out of memory. `python tools/reliability.py --only attacks` runs them.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import textwrap
import time

TIME_LIMIT = 60  # seconds per case; a case that needs more is reported as a hang
MEMORY_LIMIT = 4 << 30

# Put at the top of every case: helpers that build the hostile files.
_PRELUDE = r'''
import json, os, pathlib, struct, sys
SHARED = pathlib.Path(sys.argv[1])
TAYLOR = SHARED / "corpora" / "taylorswift.txt"
def spm_piece(text, score=0.0, kind=None):
    from tokenforge.spm import model_file as mf
    body = mf._len_field(1, text) + mf._key(2, 5) + struct.pack("<f", score)
    return mf._len_field(1, body + (mf._int_field(3, kind) if kind is not None else b""))
def spm_model(extra=b"", normalizer=None):
    from tokenforge.spm import model_file as mf
    head = spm_piece(b"<unk>", 0, 2) + spm_piece(b"<s>", 0, 3) + spm_piece(b"</s>", 0, 3)
    tail = spm_piece(b"a", -1) + spm_piece(b"b", -2) + mf._len_field(2, mf._int_field(3, 1))
    return head + extra + tail + (normalizer if normalizer is not None else mf._len_field(3, mf._len_field(1, b"identity")))
def small_hf_json(path, **changes):
    import tokenforge
    tokenforge.train_bpe([TAYLOR], 300, pattern="gpt2").save(path, format="huggingface")
    obj = json.loads(pathlib.Path(path).read_text())
    obj.update(changes)
    pathlib.Path(path).write_text(json.dumps(obj))
def say(*parts):
    print(*parts, flush=True)
'''

# (attack, what the bad input is, tokenforge's script, {peer: script}). A script prints its result
# with say(); an exception it lets escape is reported as "error: Type: message".
CASES = [
    ("byte piece `<0x-1>` in a .model", "sentencepiece model whose BYTE piece has a sign in its hex digits",
     "open('m.model','wb').write(spm_model(spm_piece(b'<0x-1>', 0, 6)))\nimport tokenforge\ntokenforge.load('m.model')\nsay('loaded')",
     {"sentencepiece": "open('m.model','wb').write(spm_model(spm_piece(b'<0x-1>', 0, 6)))\nimport sentencepiece as s\n"
                       "s.SentencePieceProcessor(model_file='m.model')\nsay('loaded')"}),
    ("varint where the normalizer name belongs", "36-byte .model: name field 1 of NormalizerSpec as varint 10**9",
     "from tokenforge.spm import model_file as mf\nopen('m.model','wb').write(spm_model(normalizer=mf._len_field(3, mf._int_field(1, 10**9))))\n"
     "import tokenforge\nsay('ids', tokenforge.load('m.model').encode('ab ba'))",
     {"sentencepiece": "from tokenforge.spm import model_file as mf\nopen('m.model','wb').write(spm_model(normalizer=mf._len_field(3, mf._int_field(1, 10**9))))\n"
                       "import sentencepiece as s\nsay('ids', s.SentencePieceProcessor(model_file='m.model').encode('ab ba'))"}),
    ("piece type 258 / NaN score / duplicate piece / NUL", "four .model files with one odd piece each",
     "import tokenforge\nfor name, p in [('type', spm_piece(b'c', 0, 258)), ('nan', spm_piece(b'c', float('nan'))), ('dup', spm_piece(b'a', -3)), ('nul', spm_piece(b'c\\0', -3))]:\n"
     "    open(name, 'wb').write(spm_model(p))\n    try:\n        tokenforge.load(name); say(name, 'loaded;')\n    except ValueError as e:\n        say(name, 'refused;')",
     {"sentencepiece": "import sentencepiece as s\nfor name, p in [('type', spm_piece(b'c', 0, 258)), ('nan', spm_piece(b'c', float('nan'))), ('dup', spm_piece(b'a', -3)), ('nul', spm_piece(b'c\\0', -3))]:\n"
                       "    open(name, 'wb').write(spm_model(p))\n    try:\n        s.SentencePieceProcessor(model_file=name); say(name, 'loaded;')\n    except Exception:\n        say(name, 'refused;')"}),
    ("backtracking Split pattern", "tokenizer.json with Split `(a|aa)+b`, encode 'a' x 40 + 'c'",
     "small_hf_json('t.json', pre_tokenizer={'type': 'Sequence', 'pretokenizers': [{'type': 'Split', 'pattern': {'Regex': '(a|aa)+b|.'}, 'behavior': 'Isolated', 'invert': False}, {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': False}]})\n"
     "import tokenforge\nsay(len(tokenforge.load('t.json').encode('a' * 40 + 'c')), 'ids')",
     {"tokenizers": "small_hf_json('t.json', pre_tokenizer={'type': 'Sequence', 'pretokenizers': [{'type': 'Split', 'pattern': {'Regex': '(a|aa)+b|.'}, 'behavior': 'Isolated', 'invert': False}, {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': False}]})\n"
                    "import tokenizers\nsay(len(tokenizers.Tokenizer.from_file('t.json').encode('a' * 40 + 'c').ids), 'ids')"}),
    ("40,000 added tokens", "tokenizer.json whose added_tokens lists 40,000 special tokens: load time",
     "import time\nsmall_hf_json('t.json')\nobj = json.loads(open('t.json').read()); n = len(obj['model']['vocab'])\n"
     "obj['added_tokens'] = [{'id': n + k, 'content': f'<|x{k}|>', 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True} for k in range(40000)]\n"
     "open('t.json', 'w').write(json.dumps(obj))\nimport tokenforge\nt = time.perf_counter(); tokenforge.load('t.json'); say(f'loaded in {time.perf_counter() - t:.2f} s')",
     {"tokenizers": "import time\nsmall_hf_json('t.json')\nobj = json.loads(open('t.json').read()); n = len(obj['model']['vocab'])\n"
                    "obj['added_tokens'] = [{'id': n + k, 'content': f'<|x{k}|>', 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True} for k in range(40000)]\n"
                    "open('t.json', 'w').write(json.dumps(obj))\nimport tokenizers\nt = time.perf_counter(); tokenizers.Tokenizer.from_file('t.json'); say(f'loaded in {time.perf_counter() - t:.2f} s')"}),
    ("a 40,000-character special token", "cl100k ranks + one special token of 40k characters; encode 1 MB of text",
     "import time, tokenforge\nfrom tokenforge.load import load_tiktoken_bpe\nr = load_tiktoken_bpe(str(SHARED / 'vocab' / 'cl100k_base.tiktoken'))\n"
     "import tokenforge.patterns as P\ne = tokenforge.Encoding('x', pat_str=P.CL100K, mergeable_ranks=r, special_tokens={'<' * 40000: 100257})\n"
     "text = TAYLOR.read_text()[:1000000]\nt = time.perf_counter(); e.encode(text, allowed_special='all'); say(f'{time.perf_counter() - t:.2f} s')",
     {"tiktoken": "import time, tiktoken\nfrom tiktoken.load import load_tiktoken_bpe\nr = load_tiktoken_bpe(str(SHARED / 'vocab' / 'cl100k_base.tiktoken'))\n"
                  "import tokenforge.patterns as P\n"
                  "e = tiktoken.Encoding('x', pat_str=P.CL100K, mergeable_ranks=r, special_tokens={'<' * 40000: 100257})\n"
                  "text = TAYLOR.read_text()[:1000000]\nt = time.perf_counter(); e.encode(text, allowed_special='all'); say(f'{time.perf_counter() - t:.2f} s')"}),
    ("save killed between the two files", "vocab.json of one tokenizer beside merges.txt of another",
     "import tokenforge\nfor n, d in ((300, 'a'), (400, 'b')):\n    tokenforge.train_bpe([TAYLOR], n, pattern='gpt2').save(d, format='vocab_merges')\n"
     "os.replace('b/merges.txt', 'a/merges.txt')\nt = tokenforge.load('a/vocab.json'); say('loaded', t.n_vocab)",
     {}),
    ("full disk during save_model", "ENOSPC while a unigram .model is written over a good one",
     "import tokenforge\nlines = TAYLOR.read_text().splitlines()\ntokenforge.train_unigram(lines, vocab_size=300).save_model('m.model')\ngood = open('m.model','rb').read()\n"
     "real = os.fsync\nos.fsync = lambda fd: (_ for _ in ()).throw(OSError(28, 'No space left on device'))\n"
     "try:\n    tokenforge.train_unigram(lines, vocab_size=400).save_model('m.model')\nexcept OSError:\n    pass\n"
     "say('old model intact' if open('m.model','rb').read() == good else 'old model LOST')",
     {}),
    ("file mode of a save under umask 022", "mode of tokenizer.json after save",
     "import tokenforge\nos.umask(0o022)\ntokenforge.train_bpe([TAYLOR], 300).save('t.json', format='huggingface')\nsay(oct(os.stat('t.json').st_mode & 0o777))",
     {"tokenizers": "import tokenforge, tokenizers\nos.umask(0o022)\ntokenforge.train_bpe([TAYLOR], 300).save('s.json', format='huggingface')\n"
                    "tokenizers.Tokenizer.from_file('s.json').save('t.json')\nsay(oct(os.stat('t.json').st_mode & 0o777))"}),
    ("fork while another thread loads an encoding", "child calls get_encoding while the parent's thread holds the registry lock",
     "import threading, tokenforge\nfrom tokenforge import registry\nheld, release = threading.Event(), threading.Event()\n"
     "def hold():\n    with registry._lock:\n        held.set(); release.wait()\nthreading.Thread(target=hold, daemon=True).start(); held.wait()\n"
     "pid = os.fork()\nif pid == 0:\n    tokenforge.get_encoding('gpt2'); os._exit(0)\nrelease.set(); _, st = os.waitpid(pid, 0); say('child exit', os.waitstatus_to_exitcode(st))",
     {}),
    ("JSON nested 100,000 deep", "tokenizer.json of 100,000 nested arrays",
     "open('t.json','w').write('[' * 100000 + ']' * 100000)\nimport tokenforge\ntokenforge.load('t.json')",
     {"tokenizers": "open('t.json','w').write('[' * 100000 + ']' * 100000)\nimport tokenizers\ntokenizers.Tokenizer.from_file('t.json')"}),
    ("300 nested Sequence pre-tokenizers", "a valid tokenizer.json whose pre_tokenizer is nested 300 deep",
     "stage = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True}\nfor _ in range(300):\n    stage = {'type': 'Sequence', 'pretokenizers': [stage]}\n"
     "small_hf_json('t.json', pre_tokenizer=stage)\nimport tokenforge\nsay(tokenforge.load('t.json').encode('hello world'))",
     {"tokenizers": "stage = {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True}\nfor _ in range(300):\n    stage = {'type': 'Sequence', 'pretokenizers': [stage]}\n"
                    "small_hf_json('t.json', pre_tokenizer=stage)\nimport tokenizers\nsay(tokenizers.Tokenizer.from_file('t.json').encode('hello world').ids)"}),
    ("5000-digit id", "tokenizer.json whose vocab has an id of 5000 digits",
     "small_hf_json('t.json')\ntxt = open('t.json').read().replace('\"vocab\": {', '\"vocab\": {\"zz\": ' + '9' * 5000 + ', ', 1)\nopen('t.json','w').write(txt)\n"
     "import tokenforge\ntokenforge.load('t.json')",
     {"tokenizers": "small_hf_json('t.json')\ntxt = open('t.json').read().replace('\"vocab\": {', '\"vocab\": {\"zz\": ' + '9' * 5000 + ', ', 1)\nopen('t.json','w').write(txt)\n"
                    "import tokenizers\ntokenizers.Tokenizer.from_file('t.json')"}),
    ("vocab size 10**12", "train_bpe(..., vocab_size=10**12)",
     "import tokenforge\ntokenforge.train_bpe([TAYLOR], 10**12)",
     {"tokenizers": "import tokenizers\nt = tokenizers.Tokenizer(tokenizers.models.BPE())\n"
                    "t.train([str(TAYLOR)], tokenizers.trainers.BpeTrainer(vocab_size=10**12))\nsay('trained', t.get_vocab_size())"}),
    ("leak report at exit", "every named encoding loaded, pickled, and an error kept alive at exit",
     "import pickle, tokenforge\nencs = [tokenforge.get_encoding(n) for n in tokenforge.list_encoding_names()]\n"
     "for e in encs:\n    pickle.loads(pickle.dumps(e))\ntry:\n    encs[0].encode('<|endoftext|>')\nexcept ValueError as err:\n    kept = err\nsay('done')",
     {}),
]


from attacks_workflows import CASES as _WORKFLOW_CASES  # noqa: E402  (dataset outputs, server, Ray)

CASES += _WORKFLOW_CASES
# Cases run without the address-space limit: Ray's raylet and GCS reserve more than 4 GB of address
# space and do not start under it.
NO_MEMORY_LIMIT = {name for name, *_ in _WORKFLOW_CASES if name.startswith("Ray:")}

def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_script(script: str, shared: str, limit_memory: bool = True) -> str:
    """Runs one case in a fresh process in an empty folder; what happened, in a few words."""
    body = _PRELUDE + "\ntry:\n" + textwrap.indent(script, "    ") + (
        "\nexcept Exception as e:\n    say(f'error: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else \"\"}')\n")
    with tempfile.TemporaryDirectory(prefix="tokenforge-attack-") as folder:
        started = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-c", body, shared], cwd=folder, capture_output=True, text=True,
                                  timeout=TIME_LIMIT, preexec_fn=_limit_memory if limit_memory else None)
        except subprocess.TimeoutExpired:
            return f"hang: still running after {TIME_LIMIT} s (killed)"
        seconds = time.perf_counter() - started
    said = " ".join(proc.stdout.split())
    if proc.returncode < 0:
        import signal

        return f"crash: {signal.Signals(-proc.returncode).name}" + (f" after '{said[:80]}'" if said else "")
    if proc.returncode != 0:
        last = [l for l in proc.stderr.strip().splitlines() if l.strip()]
        return f"exit {proc.returncode}: {last[-1][:160] if last else ''}"
    leak = [l for l in proc.stderr.splitlines() if "leak" in l]
    return (said[:200] or "(nothing)") + (f"; stderr: {leak[0][:120]}" if leak else "") + f" ({seconds:.1f} s)"


def run(shared: str) -> list[dict]:
    rows = []
    for name, what, ours, peers in CASES:
        limit = name not in NO_MEMORY_LIMIT
        row = {"attack": name, "what": what, "tokenforge": run_script(ours, shared, limit),
               "peers": {peer: run_script(script, shared, limit) for peer, script in peers.items()}}
        print(f"attack: {name}: {row['tokenforge']} | {row['peers']}", file=sys.stderr)
        rows.append(row)
    return rows
