"""Attack cases for the dataset outputs, the visualizer server and the Ray engine (added to
attacks.CASES). Peers: numpy.memmap and a nanoGPT-style reader / writer (tiktoken + np.memmap, the
usual way training arrays are made and read), Python's http.server for the server, plain
ray.init() for the Ray instance."""

from __future__ import annotations

# Put before each script below (after attacks' prelude): small helpers of these cases.
_HELPERS = r'''
import socket, subprocess, threading, time
import numpy as np
if 'TIKTOKEN_CACHE_DIR' not in os.environ:  # tiktoken and tokenforge load the shared vocabularies offline
    import runpy
    runpy.run_path(str(SHARED / 'tools' / 'tiktoken_cache.py'), run_name='not_main')['main'](pathlib.Path('tiktoken-cache').resolve())
    os.environ.update(TIKTOKEN_CACHE_DIR=str(pathlib.Path('tiktoken-cache').resolve()), TOKENFORGE_OFFLINE='1',
                      TOKENFORGE_CACHE_DIR=str(pathlib.Path('tokenforge-cache').resolve()))
def make_output(name='out.bin', enc='gpt2'):
    import tokenforge
    from tokenforge import dataset
    open('in.txt', 'w').write(TAYLOR.read_text()[:60000])
    return dataset.encode_files(tokenforge.get_encoding(enc), ['in.txt'], name)
def make_shards():
    import tokenforge
    from tokenforge import dataset
    open('in.txt', 'w').write(TAYLOR.read_text()[:60000])
    dataset.encode_dataset(tokenforge.get_encoding('gpt2'), ['in.txt'], 'shards', shard_size=4000)
    return json.load(open('shards/index.json'))
def nanogpt_write(path, ids, die_after=None):
    # nanoGPT's prepare.py: np.memmap(path, mode='w+') sized for all ids, filled in batches
    arr = np.memmap(path, dtype=np.uint16, mode='w+', shape=(len(ids),))
    for k in range(0, len(ids), 1000):
        if die_after is not None and k >= die_after:
            os.kill(os.getpid(), 9)
        arr[k:k + 1000] = ids[k:k + 1000]
    arr.flush()
def child(code):
    """Runs code in a child process in this folder; how it ended."""
    head = 'import json, os, pathlib, sys\nSHARED = pathlib.Path(sys.argv[1])\n'
    proc = subprocess.run([sys.executable, '-c', head + code, str(SHARED)], capture_output=True, text=True, timeout=40)
    return 'killed by SIGKILL' if proc.returncode == -9 else f'exit {proc.returncode} {proc.stderr[-200:]}'
def exchange(port, data, wait=3.0):
    with socket.create_connection(('127.0.0.1', port), timeout=wait) as s:
        s.sendall(data)
        got = b''
        try:
            while chunk := s.recv(65536):
                got += chunk
        except OSError:
            pass
    return got
def status_line(answer):
    if not answer.startswith(b'HTTP/'):
        return 'no status line' if answer else '(no answer)'
    return answer.split(b'\r\n', 1)[0].decode('latin-1')[9:]
def stdlib_server():
    # what a small server on http.server does: int(Content-Length), read the body, answer
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    class H(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'
        def log_message(self, *a): pass
        def _answer(self, body):
            self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)
        def do_GET(self): self._answer(b'{"page": 1}')
        def do_POST(self):
            body = self.rfile.read(int(self.headers['Content-Length']))
            try:
                self._answer(json.dumps({'keys': len(json.loads(body))}).encode())
            except ValueError:
                self.send_error(400, f'read {len(body)} bytes, not JSON')
    srv = ThreadingHTTPServer(('127.0.0.1', 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
def ours_server(**kw):
    from tokenforge import serve
    srv = serve.make_server('127.0.0.1', 0, **kw)
    threading.Thread(target=srv.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True).start()
    return srv
def listening_after(start):
    """The TCP addresses listened on by this process and its descendants after start()."""
    start()
    pids, frontier = set(), {os.getpid()}
    while frontier:  # descendants by parent pid
        pids |= frontier
        frontier = set()
        for d in os.listdir('/proc'):
            if d.isdigit() and int(d) not in pids:
                try:
                    if int(open(f'/proc/{d}/stat').read().rsplit(')', 1)[1].split()[1]) in pids:
                        frontier.add(int(d))
                except OSError:
                    pass
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f'/proc/{pid}/fd'):
                target = os.readlink(f'/proc/{pid}/fd/{fd}')
                if target.startswith('socket:['):
                    inodes.add(target[8:-1])
        except OSError:
            pass
    found = set()
    for table in ('tcp', 'tcp6'):
        for line in open(f'/proc/net/{table}').read().splitlines()[1:]:
            f = line.split()
            if f[3] == '0A' and f[9] in inodes:  # LISTEN
                host = f[1].split(':')[0]
                if table == 'tcp':
                    found.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(host)[::-1]))
                else:
                    raw = b''.join(bytes.fromhex(host[k:k + 8])[::-1] for k in range(0, 32, 8))
                    found.add(socket.inet_ntop(socket.AF_INET6, raw))
    return sorted(found)
def ray_listening(init):
    import signal
    try:
        import ray
    except ImportError:
        say('skipped: ray is not installed'); return
    def too_slow(*_):
        raise TimeoutError
    signal.signal(signal.SIGALRM, too_slow); signal.alarm(45)
    try:
        addrs = listening_after(init)
        signal.alarm(0)
        say('listens on', ', '.join(addrs) or 'nothing', '->', 'loopback only' if addrs and all(a in ('127.0.0.1', '::1', '::ffff:127.0.0.1') for a in addrs) else 'REACHABLE FROM THE NETWORK')
    except TimeoutError:
        say('skipped: ray did not start within 45 s on this machine')
    except Exception as e:
        say(f'skipped: ray could not start here ({type(e).__name__}: {str(e)[:100]})')
    finally:
        signal.alarm(0)
        try:
            ray.shutdown()
        except Exception:
            pass
'''


def _case(script: str) -> str:
    return _HELPERS + script


_KILL_OURS = (
    "make_output('out.bin')\n"
    "say('kill between the renames:', child(\"import tokenforge\\nfrom tokenforge import dataset\\nreal = os.replace\\ncalls = []\\n"
    "def replace(a, b):\\n    calls.append(b)\\n    if len(calls) == 2: os.kill(os.getpid(), 9)\\n    real(a, b)\\n"
    "os.replace = replace\\ndataset.encode_files(tokenforge.get_encoding('cl100k_base'), ['in.txt'], 'out.bin', overwrite=True)\"))\n"
    "from tokenforge import dataset\n"
    "try:\n    dataset.read_ids('out.bin'); say('-> read back (new data, old sidecar?)')\n"
    "except ValueError as e:\n    say('-> reader refuses:', str(e)[:90])"
)
_KILL_PEER = (
    "import tiktoken\nids = tiktoken.get_encoding('gpt2').encode_ordinary(TAYLOR.read_text()[:60000])\n"
    "open('ids.json', 'w').write(json.dumps(ids))\n"
    "say('writer killed halfway:', child(\"import numpy as np\\nids = json.load(open('ids.json'))\\n"
    "arr = np.memmap('train.bin', dtype=np.uint16, mode='w+', shape=(len(ids),))\\n"
    "arr[:len(ids) // 2] = ids[:len(ids) // 2]\\narr.flush()\\nos.kill(os.getpid(), 9)\"))\n"
    "got = np.memmap('train.bin', dtype=np.uint16, mode='r')\n"
    "say(f'-> reader gets {len(got)} ids without complaint, {int((got[len(ids) // 2:] == 0).sum())} of them zeros never written')"
)

_STALE_OURS = (
    "open('in.txt', 'w').write(TAYLOR.read_text() * 3)\n"
    "say('killed mid-write:', child(\"import tokenforge\\nfrom tokenforge import dataset\\nreal = dataset._Part.write\\n"
    "def write(self, ids):\\n    real(self, ids)\\n    if self.count > 50000: os.kill(os.getpid(), 9)\\n"
    "dataset._Part.write = write\\ndataset.BATCH_CHARS = 20000\\n"
    "dataset.encode_files(tokenforge.get_encoding('gpt2'), ['in.txt'], 'out.bin')\"))\n"
    "left = sorted(n for n in os.listdir('.') if n.startswith('.'))\n"
    "say('left:', left, '; out.bin exists:', os.path.exists('out.bin'))\n"
    "import tokenforge\nfrom tokenforge import dataset\n"
    "dataset.encode_files(tokenforge.get_encoding('gpt2'), ['in.txt'], 'out.bin')\n"
    "say('-> after the next run:', sorted(n for n in os.listdir('.') if n.startswith('.')) or 'no partial files')"
)

_DISK_FULL_OURS = (
    "make_output('out.bin')\ngood = open('out.bin', 'rb').read(), open('out.bin.json').read()\n"
    "from tokenforge import outputs\nreal = outputs.partial_file\n"
    "def partial_file(target):\n"
    "    f, path = real(target)\n"
    "    if str(target).endswith('.json'):  # the data file is written; the disk fills before its sidecar\n"
    "        class Full:\n"
    "            def write(self, data): raise OSError(28, 'No space left on device')\n"
    "            def close(self): f.close()\n"
    "            __enter__ = lambda self: self\n"
    "            __exit__ = lambda self, *a: f.close()\n"
    "        return Full(), path\n"
    "    return f, path\n"
    "outputs.partial_file = partial_file\n"
    "from tokenforge.cli import main\n"
    "rc = main(['encode', '-t', 'cl100k_base', 'in.txt', '-o', 'out.bin', '--overwrite', '-q'])\n"
    "same = (open('out.bin', 'rb').read(), open('out.bin.json').read()) == good\n"
    "left = [n for n in os.listdir('.') if n.startswith('.')]\n"
    "say(f'exit {rc};', 'old pair intact' if same else 'old pair CHANGED', ';', f'partial files left: {left}' if left else 'nothing left behind')"
)
_DISK_FULL_PEER = (
    "import tiktoken\nids = tiktoken.get_encoding('gpt2').encode_ordinary(TAYLOR.read_text()[:60000])\n"
    "nanogpt_write('train.bin', ids)\ngood = open('train.bin', 'rb').read()\n"
    "import numpy as np\nreal = np.memmap.flush\n"
    "try:\n"
    "    arr = np.memmap('train.bin', dtype=np.uint16, mode='w+', shape=(len(ids),))\n"
    "    raise OSError(28, 'No space left on device')  # the disk fills before the ids are written\n"
    "except OSError:\n    pass\n"
    "got = np.memmap('train.bin', dtype=np.uint16, mode='r')\n"
    "say('old train.bin intact' if open('train.bin', 'rb').read() == good else f'old train.bin LOST: {int((got == 0).sum())} of {len(got)} ids now zero, no error on reading')"
)

_MODES_OURS = (
    "os.umask(0o022)\nmake_output('out.bin')\nimport tokenforge\nfrom tokenforge import dataset\n"
    "dataset.encode_dataset(tokenforge.get_encoding('gpt2'), ['in.txt'], 'shards', shard_size=4000)\n"
    "os.chmod('out.bin', 0o640)\ndataset.encode_files(tokenforge.get_encoding('gpt2'), ['in.txt'], 'out.bin', overwrite=True)\n"
    "m = lambda p: oct(os.stat(p).st_mode & 0o777)\n"
    "say('out.bin.json', m('out.bin.json'), 'shard', m('shards/' + json.load(open('shards/index.json'))['shards'][0]['file']),"
    " 'index.json', m('shards/index.json'), '; out.bin chmod 640 then overwritten:', m('out.bin'))"
)
_MODES_PEER = (
    "os.umask(0o022)\nimport tiktoken\nids = tiktoken.get_encoding('gpt2').encode_ordinary(TAYLOR.read_text()[:60000])\n"
    "nanogpt_write('train.bin', ids)\nm = lambda p: oct(os.stat(p).st_mode & 0o777)\nfirst = m('train.bin')\n"
    "os.chmod('train.bin', 0o640)\nnanogpt_write('train.bin', ids)\n"
    "say('train.bin', first, '; chmod 640 then rewritten:', m('train.bin'))"
)

_SIDECAR_OURS = (
    "make_output('out.bin')\nmeta = json.load(open('out.bin.json'))\n"
    "json.dump(dict(meta, dtype='O'), open('out.bin.json', 'w'))\n"
    "from tokenforge import dataset\nimport numpy as np\ndataset.read_ids('out.bin')\nsay('read')"
)
_SIDECAR_PEER = (
    "make_output('out.bin')\nmeta = json.load(open('out.bin.json'))\n"
    "json.dump(dict(meta, dtype='O'), open('out.bin.json', 'w'))\n"
    "meta = json.load(open('out.bin.json'))  # a reader trusting the sidecar's dtype and byte count\n"
    "arr = np.memmap('out.bin', dtype=meta['dtype'], mode='r', shape=(meta['bytes'] // np.dtype(meta['dtype']).itemsize,))\n"
    "say('mapped', len(arr), 'objects'); say('first:', repr(arr[0])[:40])"
)

_INDEX_OURS = (
    "index = make_shards()\nfrom tokenforge import dataset\nopen('secret.bin', 'wb').write(b'secret!!')\n"
    "for name in ('/etc/passwd', '../secret.bin'):\n"
    "    json.dump(dict(index, shards=[dict(index['shards'][0], file=name, count=4, bytes=8)]), open('shards/index.json', 'w'))\n"
    "    try:\n        dataset.read_shards('shards'); say(name, 'READ;')\n"
    "    except ValueError as e:\n        say(name, 'refused;')"
)
_INDEX_PEER = (
    "index = make_shards()\nopen('secret.bin', 'wb').write(b'secret!!')\n"
    "for name in ('/etc/passwd', '../secret.bin'):\n"
    "    json.dump(dict(index, shards=[dict(index['shards'][0], file=name, count=4, bytes=8)]), open('shards/index.json', 'w'))\n"
    "    shard = json.load(open('shards/index.json'))['shards'][0]['file']\n"
    "    arr = np.memmap(os.path.join('shards', shard), dtype=np.uint16, mode='r')\n"
    "    say(name, f'read {len(arr)} ids;')"
)

_FAMILIES_NESTED = (
    "import tokenforge\ntext = TAYLOR.read_text()[:30000]\nfiles = []\n"
    "for name, tok in [('wp.json', tokenforge.WordPieceTokenizer.train([text], vocab_size=400)),"
    " ('cb.json', tokenforge.CharBPETokenizer.train([text], vocab_size=400)), ('sp.tokenforge', tokenforge.train_unigram([text], vocab_size=300))]:\n"
    "    tok.save(name); files.append(name)\n"
    "srv = ours_server(tokenizer_files=files, encodings=['gpt2'])\nport = srv.server_address[1]\n"
    "def post(body):\n"
    "    a = exchange(port, b'POST /api/tokenize HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\nConnection: close\\r\\n'"
    " + f'Content-Length: {len(body)}\\r\\n\\r\\n'.encode() + body, wait=20)\n"
    "    return status_line(a), a.partition(b'\\r\\n\\r\\n')[2]\n"
    "counts = []\nfor name in files + ['gpt2']:\n"
    "    st, body = post(json.dumps({'text': 'Hello there, ZEBRA!', 'tokenizer': name}).encode())\n"
    "    counts.append(f\"{name} {st[:3]} {json.loads(body).get('count')} ids\")\n"
    "say('families:', ', '.join(counts), ';')\n"
    "st, body = post(b'{\"text\": ' + b'[' * 200000 + b']' * 200000 + b', \"tokenizer\": \"gpt2\"}')\n"
    "say('JSON nested 200,000 deep:', st, json.loads(body).get('error', '')[:60])\nsrv.shutdown()"
)
_NESTED_PEER = (
    "srv = stdlib_server()\nport = srv.server_address[1]\n"
    "body = b'{\"text\": ' + b'[' * 200000 + b']' * 200000 + b'}'\n"
    "a = exchange(port, b'POST / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n' + f'Content-Length: {len(body)}\\r\\n\\r\\n'.encode() + body, wait=10)\n"
    "say('JSON nested 200,000 deep:', status_line(a))\nsrv.shutdown()"
)

_SLOW_CAP = (
    "def probe(srv):\n"
    "    port = srv.server_address[1]\n    start = time.monotonic()\n"
    "    with socket.create_connection(('127.0.0.1', port), timeout=10) as s:\n"
    "        s.sendall(b'GET / HTTP/1.1\\r\\n')\n        answer = b''\n"
    "        try:\n            for k in range(25):  # a header line every 0.3 s for 7.5 s\n"
    "                s.sendall(f'X-{k}: y\\r\\n'.encode()); time.sleep(0.3)\n"
    "        except OSError:\n            pass\n"
    "        try:\n            s.settimeout(1); answer = s.recv(65536)\n"
    "        except OSError:\n            pass\n"
    "    slow = f'slowloris: {status_line(answer)[:20]} after {time.monotonic() - start:.1f} s'\n"
    "    idle = []\n    for _ in range(100):\n"
    "        try:\n            idle.append(socket.create_connection(('127.0.0.1', port), timeout=5))\n"
    "        except OSError:\n            break\n"
    "    time.sleep(0.5)\n    threads = threading.active_count()\n"
    "    late = status_line(exchange(port, b'GET / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n', wait=3))\n"
    "    for s in idle: s.close()\n"
    "    say(slow, f'; 100 idle connections: {threads} threads, the 101st: {late[:20]}')\n"
    "    srv.shutdown()\n"
)
_SLOW_OURS = _SLOW_CAP + "probe(ours_server(encodings=['gpt2'], request_seconds=2.0, max_connections=64))"
_SLOW_PEER = _SLOW_CAP + "probe(stdlib_server())"

_HTTP_PARSING = (
    "def probe(srv, post_path):\n"
    "    port = srv.server_address[1]\n    out = []\n"
    "    body = b'{\"text\": \"hi\", \"tokenizer\": \"gpt2\"}'\n"
    "    for length in ('1_0', '+5'):\n"
    "        a = exchange(port, b'POST ' + post_path + b' HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\n'"
    " + f'Content-Length: {length}\\r\\n\\r\\n'.encode() + body)\n"
    "        out.append(f'CL {length}: {status_line(a)[:30]}')\n"
    "    smuggled = b'GET /api/tokenizers HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n'\n"
    "    a = exchange(port, b'GET / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n' + f'Content-Length: {len(smuggled)}\\r\\n\\r\\n'.encode() + smuggled)\n"
    "    out.append(f'GET with a request as body: {a.count(b\"HTTP/1.1 \")} answers')\n"
    "    heads = []\n"
    "    for data in (b'GARBAGE\\r\\n\\r\\n', b'GET / HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nX: ' + b'b' * 70000 + b'\\r\\n\\r\\n', b'BREW /pot HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n'):\n"
    "        a = exchange(port, data)\n        head = a.partition(b'\\r\\n\\r\\n')[0]\n"
    "        code = status_line(a)\n        heads.append((code[:3] if code[:3].isdigit() else code) + (' secure' if b'nosniff' in head and b'Content-Security-Policy' in head else ' bare'))\n"
    "    out.append('errors: ' + ', '.join(heads))\n"
    "    say('; '.join(out))\n    srv.shutdown()\n"
)
_HTTP_OURS = _HTTP_PARSING + "probe(ours_server(encodings=['gpt2']), b'/api/tokenize')"
_HTTP_PEER = _HTTP_PARSING + "probe(stdlib_server(), b'/')"

_RAY_OURS = (
    "def start():\n    from tokenforge import distributed\n    distributed.connect()\n"
    "ray_listening(start)"
)
_RAY_PEER = (
    "def start():\n    import ray\n    ray.init(include_dashboard=False)\n"
    "ray_listening(start)"
)

CASES = [
    ("sidecar dtype `O`", "OUT.bin.json of an encoded corpus edited to name dtype 'O' (Python objects)",
     _case(_SIDECAR_OURS), {"numpy.memmap (dtype from the sidecar)": _case(_SIDECAR_PEER)}),
    ("shard index naming `/etc/passwd`, `../x`", "index.json of a shard folder whose shard file is an absolute path / outside the folder",
     _case(_INDEX_OURS), {"nanoGPT-style reader (np.memmap(folder / file))": _case(_INDEX_PEER)}),
    ("disk full between data file and sidecar", "`encode -o out.bin --overwrite` over a good output; ENOSPC while the sidecar is written",
     _case(_DISK_FULL_OURS), {"nanoGPT prepare.py (np.memmap w+ over train.bin)": _case(_DISK_FULL_PEER)}),
    ("SIGKILL between the renames", "a run overwriting out.bin with another tokenizer's ids is killed after the data file's rename",
     _case(_KILL_OURS), {"nanoGPT prepare.py killed halfway": _case(_KILL_PEER)}),
    ("partial files of killed runs", "a run SIGKILLed mid-write, then the same command again",
     _case(_STALE_OURS), {}),
    ("file modes of dataset outputs", "umask 022: modes of out.bin.json, a shard, index.json; an existing 0640 file overwritten",
     _case(_MODES_OURS), {"nanoGPT prepare.py": _case(_MODES_PEER)}),
    ("server: other tokenizer families, nested JSON", "visualizer with WordPiece, char BPE, unigram files; a body nested 200,000 deep",
     _case(_FAMILIES_NESTED), {"http.server + json.loads": _case(_NESTED_PEER)}),
    ("server: slowloris, connection flood", "headers trickled for 7.5 s (2 s request deadline); 100 idle connections",
     _case(_SLOW_OURS), {"http.server ThreadingHTTPServer": _case(_SLOW_PEER)}),
    ("server: request parsing", "Content-Length `1_0` / `+5`, a GET whose body is a second request, security headers on errors",
     _case(_HTTP_OURS), {"http.server (int(Content-Length))": _case(_HTTP_PEER)}),
    ("Ray: local instance's listening addresses", "TCP sockets listened on by the Ray processes the encode/train engine starts (run without the 4 GB limit: Ray does not start under it)",
     _case(_RAY_OURS), {"ray.init()": _case(_RAY_PEER)}),
]
