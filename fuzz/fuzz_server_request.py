"""Fuzz target: the visualizer server's request parsing (`tokenforge serve`), over a real socket.

The input becomes the bytes a client sends on one connection, then the client closes its side.
An input whose first byte is below 0x80 is structure-aware: a well-formed POST to
/api/tokenize (or GET, HEAD, a pipelined second request), with the rest of the input as its body
and the first byte choosing the variant (Content-Length right, wrong, missing, doubled; a
JSON-shaped body); any other input is sent as raw bytes.

What must hold for every input:
- every answer is a well-formed HTTP/1.1 status line with the security headers (no bare error
  pages) and a Content-Length that matches its body;
- no answer is 500 (an internal error caught by the handler) and the handler never drops a
  request line without an answer;
- the server still answers a normal request afterwards (no thread or slot lost).
"""

import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import atheris
except ImportError:  # replaying saved inputs needs no atheris
    atheris = None

if atheris is not None and __name__ == "__main__":
    with atheris.instrument_imports(include=["tokenforge"]):
        import tokenforge
        from tokenforge import serve
else:
    import tokenforge
    from tokenforge import serve

SECURITY = [b"x-content-type-options: nosniff", b"content-security-policy:"]
_server = None


def server():
    """One server for the whole run (a small byte-level tokenizer named "t"), 2 s per request."""
    global _server
    if _server is None:
        ranks = {bytes([i]): i for i in range(256)}
        for token in (b"he", b"ll", b"hell", b"hello", b" w", b" wo"):
            ranks[token] = len(ranks)
        tok = tokenforge.Tokenizer.from_ranks(ranks, pattern="gpt2", special_tokens={"<|end|>": len(ranks)})
        _server = serve.make_server("127.0.0.1", 0, tokenizers={"t": tok}, encodings=[], request_seconds=2.0,
                                    max_body=1 << 16)
        threading.Thread(target=_server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return _server


def request_bytes(data: bytes) -> bytes:
    """The bytes sent for one input (see the module's docstring)."""
    if not data or data[0] >= 0x80:
        return data
    variant, body = data[0], data[1:]
    if variant & 1:
        body = b'{"tokenizer": "t", "text": "' + body + b'"}'
    method = [b"POST", b"GET", b"HEAD", b"POST"][(variant >> 1) & 3]
    length = [str(len(body)).encode(), str(max(len(body) - 3, 0)).encode(), None,
              str(len(body)).encode() + b"\r\nContent-Length: 1"][(variant >> 3) & 3]
    head = [method + b" /api/tokenize HTTP/1.1", b"Host: 127.0.0.1"]
    if method == b"POST":
        head.append(b"Content-Type: application/json")
    if length is not None:
        head.append(b"Content-Length: " + length)
    out = b"\r\n".join(head) + b"\r\n\r\n" + body
    if variant & 32:  # a second request pipelined behind the first
        out += b"GET /api/tokenizers HTTP/1.1\r\nHost: localhost\r\n\r\n"
    return out


def exchange(payload: bytes, timeout: float = 10.0) -> bytes:
    """Sends the payload on a fresh connection, half-closes, and reads until the server closes."""
    host, port = server().server_address[:2]
    with socket.create_connection((host, port), timeout=timeout) as s:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        except OSError:  # the server may close first (e.g. after refusing the request line)
            pass
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def answers(stream: bytes, head_first: bool = False) -> list[tuple[int, bytes]]:
    """Splits a response stream into (status, headers) of each answer, checking each is well formed.
    The answer to a HEAD request (head_first: the first one) has a Content-Length but no body."""
    out = []
    while stream:
        head, sep, rest = stream.partition(b"\r\n\r\n")
        assert sep, f"an answer without the end of its headers: {stream[:300]!r}"
        lines = head.split(b"\r\n")
        assert lines[0].startswith(b"HTTP/1.1 ") and lines[0][9:12].isdigit(), f"bad status line {lines[0]!r}"
        status = int(lines[0][9:12])
        fields = b"\r\n".join(lines[1:]).lower()
        for header in SECURITY:
            assert header in fields, f"answer {status} without {header!r}: {head!r}"
        length = [line.split(b":", 1)[1].strip() for line in lines[1:] if line.lower().startswith(b"content-length:")]
        assert len(length) == 1 and length[0].isdigit(), f"answer {status} without one Content-Length: {head!r}"
        n = 0 if head_first and not out else int(length[0])
        assert len(rest) >= n, f"answer {status} shorter than its Content-Length"
        out.append((status, fields))
        stream = rest[n:]
    return out


def TestOneInput(data: bytes) -> None:
    payload = request_bytes(data)
    got = answers(exchange(payload), head_first=payload.startswith(b"HEAD "))
    statuses = [s for s, _ in got]
    assert 500 not in statuses, f"internal error for {payload[:200]!r}"
    first_line = payload.split(b"\n", 1)[0].strip()
    if first_line:  # http.server skips a blank first line; anything else is answered
        assert got, f"no answer to {payload[:200]!r}"
    # The server is still whole: a normal request gets its answer.
    ok = answers(exchange(b"GET /api/tokenizers HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
    assert [s for s, _ in ok] == [200], ok


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
