"""A local token visualizer: a small web page that shows how text splits into tokens.

    >>> from tokenforge import serve
    >>> server = serve.make_server(port=0)            # 127.0.0.1, a free port  # doctest: +SKIP
    >>> serve.serve(tokenizer_files=["my.tokenizer.json"])  # blocks; Ctrl-C stops  # doctest: +SKIP

The page (``static/visualizer.html`` + ``.js`` + ``.css``, shipped in the package) lets one type or
paste text, pick a tokenizer (every pretrained encoding, plus saved tokenizer files given to the
server), and see the tokens as coloured spans with their ids, a live count, each token's bytes on
hover, and two tokenizers side by side. The JSON API behind it:

    GET  /api/tokenizers                     -> {"tokenizers": [{"name", "kind"}...], "models": {model: encoding}}
    POST /api/tokenize {"text", "tokenizer" (a name or a model name), "allow_special": false, "offset": 0}
         -> {"tokenizer", "n_vocab", "count", "n_chars", "n_bytes", "truncated", "offset", "shown", "page_size", "pieces",
             "tokens": [{"id", "bytes" (hex), "text", "partial", "special"}...]}

Errors (including http.server's own: bad request line, headers too long, unknown method) are JSON
{"error": message} with the same security headers. A connection is served by a thread, at most
MAX_CONNECTIONS at once (more get 503); one request may take REQUEST_SECONDS in all, from the moment
it is awaited to the last byte of the answer (a client that trickles its headers gets 408).

At most MAX_TOKENS tokens are described per answer, from "offset" on (the page pages through them);
the count is always of all of them. A token's "text" holds the characters whose *first* byte lies in the token, so the texts of all the
tokens join to exactly the input; a token that holds only the tail of a character (a UTF-8 sequence
split across tokens) has "text" "" and "partial" true, and the page shows its bytes instead.

Only the standard library's `http.server` is used. It is a tool for one person on their own
machine: it listens on 127.0.0.1 unless told otherwise, has no authentication, and treats the text
as untrusted (the page builds the DOM with textContent only, under a Content-Security-Policy that
forbids inline script; request bodies are limited to MAX_BODY bytes). It does not do TLS, and is not
meant to be exposed to a network.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import re
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Iterable, Mapping
from urllib.parse import urlsplit

_DIGITS = re.compile(r"[0-9]{1,18}")

MAX_BODY = 1 << 20  # bytes of a request body; larger requests get 413
MAX_TOKENS = 20_000  # token details returned per request (the count is always exact)
MAX_CONNECTIONS = 64  # connections served at once (a thread each); more are answered 503 and closed
REQUEST_SECONDS = 30.0  # the whole of one request (waiting for it, reading it, answering) may take this long

_STATIC = {  # URL path -> (file in tokenforge/static, content type); nothing else is served
    "/": ("visualizer.html", "text/html; charset=utf-8"),
    "/visualizer.html": ("visualizer.html", "text/html; charset=utf-8"),
    "/visualizer.js": ("visualizer.js", "text/javascript; charset=utf-8"),
    "/visualizer.css": ("visualizer.css", "text/css; charset=utf-8"),
}

_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class RequestError(Exception):
    """An error answered to the client as {"error": message} with an HTTP status."""

    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------------------------------
# Tokenizers the server offers


class TokenizerSet:
    """Names -> tokenizers: pretrained encodings (loaded on first use) and given tokenizers."""

    def __init__(
        self,
        *,
        encodings: Iterable[str] | None = None,
        tokenizer_files: Iterable[str | os.PathLike] = (),
        tokenizers: Mapping[str, object] | None = None,
    ):
        from .io import load
        from .registry import list_encoding_names

        self._lock = threading.Lock()
        self._loaded: dict[str, object] = {}
        self._kinds: dict[str, str] = {}
        for name in list_encoding_names() if encodings is None else encodings:
            if name not in list_encoding_names():
                raise ValueError(f"unknown encoding {name!r}; available: {', '.join(list_encoding_names())}")
            self._kinds[name] = "pretrained"
        for name, tok in (tokenizers or {}).items():
            self._add(str(name), tok, "given")
        for path in tokenizer_files:
            path = Path(path)
            tok = load(path)  # a bad file fails here, when the server starts, not on first use
            self._add(path.name, tok, "file")

    def _add(self, name: str, tok, kind: str) -> None:
        base, n = name, 2
        while name in self._kinds:  # two files with the same name in different folders
            name, n = f"{base} ({n})", n + 1
        self._kinds[name] = kind
        self._loaded[name] = tok

    def describe(self) -> list[dict]:
        from .chat import OPENAI_CHAT_ENCODINGS, chat_format

        def has_chat(name: str) -> bool:
            tok = self._loaded.get(name)
            return name in OPENAI_CHAT_ENCODINGS if tok is None else chat_format(tok) is not None

        return [{"name": name, "kind": kind, "chat": has_chat(name)} for name, kind in self._kinds.items()]

    def models(self) -> dict[str, str]:
        """Model names (gpt-4o, gpt-3.5-turbo, ...) -> the offered encoding each uses."""
        from .encoding import MODEL_TO_ENCODING

        return {m: e for m, e in MODEL_TO_ENCODING.items() if self._kinds.get(e) == "pretrained"}

    def resolve(self, name: str) -> str:
        """A tokenizer's name, or the encoding of a model name (gpt-4o -> o200k_base)."""
        if name in self._kinds:
            return name
        try:
            from .encoding import encoding_name_for_model

            encoding = encoding_name_for_model(name)
        except (KeyError, ValueError):
            return name
        return encoding if self._kinds.get(encoding) == "pretrained" else name

    def get(self, name: str):
        name = self.resolve(name)
        if name not in self._kinds:
            raise RequestError(
                HTTPStatus.BAD_REQUEST, f"unknown tokenizer {name!r}; available: {', '.join(self._kinds)}"
            )
        tok = self._loaded.get(name)
        if tok is None:
            from .registry import get_encoding

            with self._lock:
                tok = self._loaded.get(name)
                if tok is None:
                    try:
                        tok = get_encoding(name)
                    except Exception as e:  # e.g. VocabularyNotFound when offline
                        raise RequestError(
                            HTTPStatus.SERVICE_UNAVAILABLE, f"cannot load {name!r}: {e}"
                        ) from None
                    self._loaded[name] = tok
        return tok


# --------------------------------------------------------------------------------------------------
# Tokenizing for display


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte < 0xC0


def token_pieces(token_bytes: list[bytes]) -> list[tuple[str, bool]]:
    """For each token, (its text, whether its bytes are not valid UTF-8 on their own).

    A character belongs to the token holding its first byte, so the texts join to the decoded text
    and a token holding only the tail of a split character gets "".

    >>> token_pieces([b"a\\xe7\\x8b", b"\\x90b"])   # "a狐b", the character split after two bytes
    [('a狐', True), ('b', True)]
    """
    data = b"".join(token_bytes)

    def next_start(p: int) -> int:  # the first character start at or after p
        while p < len(data) and _is_continuation(data[p]):
            p += 1
        return p

    pieces, start = [], 0
    for tb in token_bytes:
        end = start + len(tb)
        text = data[next_start(start) : next_start(end)].decode("utf-8", errors="replace")
        try:
            tb.decode("utf-8")
            partial = False
        except UnicodeDecodeError:
            partial = True
        pieces.append((text, partial))
        start = end
    return pieces


def _ids_of(tok, text: str, allow_special: bool) -> list[int]:
    if hasattr(tok, "encode_ordinary"):  # byte-level BPE (tiktoken's API)
        if allow_special:
            return tok.encode(text, allowed_special="all", disallowed_special=())
        return tok.encode_ordinary(text)
    try:  # the pipeline families (WordPiece, char BPE, word, char): their special tokens only when allowed
        return tok.encode(text, add_special_tokens=allow_special)
    except TypeError:  # sentencepiece
        return tok.encode(text)


def _token_strings(tok, ids: list[int]) -> list[bytes] | None:
    """The bytes of each token for byte-level tokenizers; None for the others (their tokens are
    strings of the model: "▁the", "##ing", "the</w>")."""
    from .models import ByteBPE  # every family has decode_tokens_bytes now: byte-level is the model's kind

    if isinstance(getattr(tok, "model", None), ByteBPE) and hasattr(tok, "decode_tokens_bytes"):
        return tok.decode_tokens_bytes(ids)
    return None


def _piece_name(tok, i: int) -> str:
    for method in ("id_to_piece", "id_to_token"):
        fn = getattr(tok, method, None)
        if fn is not None:
            name = fn(i)
            if name is not None:
                return name
    return f"<{i}>"


def _is_special(tok, i: int) -> bool:
    fn = getattr(tok, "is_special_token", None)
    if fn is not None:
        return bool(fn(i))
    specials = getattr(tok, "special_tokens", None)
    if isinstance(specials, dict):
        return i in specials.values()
    is_control = getattr(tok, "is_control", None)
    return bool(is_control(i)) if is_control is not None else False


def tokenize(tok, text: str, *, allow_special: bool = False, max_tokens: int = MAX_TOKENS, offset: int = 0,
             ids: list[int] | None = None) -> dict:
    """The API's answer for one text: ids, bytes (hex), text pieces, and counts (ids: the text's
    ids when the caller has them, e.g. a rendered chat).

    For byte-level tokenizers the texts of the tokens join to the input; for the other families a
    token's text is its string in the model's vocabulary ("▁the", "##ing") and "pieces" is "model"."""
    if ids is None:
        ids = _ids_of(tok, text, allow_special)
    offset = min(max(0, offset), max(0, len(ids) - 1))
    shown = ids[offset:offset + max_tokens]
    token_bytes = _token_strings(tok, shown)
    if token_bytes is not None:
        tokens = [
            {"id": i, "bytes": b.hex(), "text": piece, "partial": partial, "special": _is_special(tok, i)}
            for i, b, (piece, partial) in zip(shown, token_bytes, token_pieces(token_bytes))
        ]
    else:
        names = [_piece_name(tok, i) for i in shown]
        tokens = [{"id": i, "bytes": n.encode("utf-8", "surrogatepass").hex(), "text": n, "partial": False,
                   "special": _is_special(tok, i)} for i, n in zip(shown, names)]
    n_bytes = len(text.encode("utf-8", errors="surrogatepass"))
    return {
        "tokenizer": getattr(tok, "name", None) or type(tok).__name__,
        "n_vocab": tok.n_vocab,
        "count": len(ids),
        "n_chars": len(text),
        "n_bytes": n_bytes,
        "truncated": len(ids) > len(shown),
        "offset": offset,
        "shown": len(shown),
        "page_size": max_tokens,
        "pieces": "bytes" if token_bytes is not None else "model",
        "tokens": tokens,
    }


# --------------------------------------------------------------------------------------------------
# HTTP


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Handler(BaseHTTPRequestHandler):
    server: "VisualizerServer"
    server_version = "tokenforge-serve"
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_SECONDS  # per recv; the whole request is bounded by the watchdog below
    error_content_type = "application/json"
    error_message_format = '{"error": "%(message)s (%(code)d)"}'

    # -- one request, within REQUEST_SECONDS from the moment it is awaited

    def handle_one_request(self):
        self._answering = False
        self._expired = False
        watchdog = threading.Timer(self.server.request_seconds, self._expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            super().handle_one_request()
        except Exception as e:  # never a dropped connection without an answer
            if self._expired:
                self.close_connection = True
                return
            if not self._answering:
                try:
                    self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"internal error: {type(e).__name__}: {e}"},
                                    close=True)
                except OSError:
                    pass
            self.close_connection = True
        finally:
            watchdog.cancel()
        if self._expired:
            self.close_connection = True

    def _expire(self) -> None:
        """The request took too long (a slow client): answer 408 if nothing was sent yet, and close."""
        self._expired = True
        try:
            if not self._answering:
                self._answering = True
                body = json.dumps({"error": f"request not complete within {self.server.request_seconds:g} s"}).encode()
                head = "".join(f"{k}: {v}\r\n" for k, v in _SECURITY_HEADERS.items())
                self.connection.sendall(
                    b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\n"
                    + head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def parse_request(self):
        """http.server's, except that a request line of only other whitespace (NBSP, vertical tab,
        ...), which it drops without an answer as if it were the blank line HTTP allows before a
        request, is answered 400."""
        ok = super().parse_request()
        if not ok and not self._answering and getattr(self, "requestline", ""):
            self.send_error(HTTPStatus.BAD_REQUEST, "bad request line")
        return ok

    def send_error(self, code, message=None, explain=None):
        """http.server's own errors (bad request line, headers too long, unknown method) as JSON
        with the security headers, like every other answer."""
        try:
            status = HTTPStatus(code)
        except ValueError:
            status = HTTPStatus.BAD_REQUEST
        self.close_connection = True
        if self._answering:
            return
        text = message or status.phrase
        self._send_json(status, {"error": text}, close=True)

    # -- plumbing

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: HTTPStatus, body: bytes, content_type: str, *, close: bool = False) -> None:
        self._answering = True
        if getattr(self, "request_version", "HTTP/1.1") == "HTTP/0.9":
            self.request_version = "HTTP/1.1"  # always answer with a status line and headers
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in _SECURITY_HEADERS.items():
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: HTTPStatus, obj, *, close: bool = False) -> None:
        body = json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        self._send(status, body, "application/json", close=close)

    def _error(self, e: RequestError) -> None:
        # After an error the rest of the body may be unread: close instead of misreading it.
        self._send_json(e.status, {"error": str(e)}, close=True)

    def _check_host(self) -> None:
        # With a loopback address, refuse other Host names: a page on some other site that makes its
        # name resolve to 127.0.0.1 (DNS rebinding) could otherwise read the answers.
        if not self.server.loopback:
            return
        host = self.headers.get("Host", "")
        name = urlsplit("//" + host).hostname or ""
        if not _is_loopback(name):
            raise RequestError(HTTPStatus.FORBIDDEN, f"Host {host!r} is not a loopback name")

    # -- methods

    def _no_body(self) -> None:
        """A GET / HEAD with a body would leave the body to be read as the next request: refused."""
        if self.headers.get("Transfer-Encoding") or self.headers.get("Content-Length", "0").strip() != "0":
            raise RequestError(HTTPStatus.BAD_REQUEST, f"a {self.command} request takes no body")

    def do_GET(self):  # noqa: N802 - http.server's naming
        try:
            self._check_host()
            self._no_body()
            path = urlsplit(self.path).path
            if path == "/api/tokenizers":
                tokenizers = self.server.tokenizers
                self._send_json(HTTPStatus.OK, {"tokenizers": tokenizers.describe(), "models": tokenizers.models()})
                return
            entry = _STATIC.get(path)
            if entry is None:
                raise RequestError(HTTPStatus.NOT_FOUND, f"no such page: {path}")
            name, content_type = entry
            self._send(HTTPStatus.OK, resources.files("tokenforge").joinpath("static", name).read_bytes(), content_type)
        except RequestError as e:
            self._error(e)

    do_HEAD = do_GET

    def do_POST(self):  # noqa: N802
        try:
            self._check_host()
            path = urlsplit(self.path).path
            if path != "/api/tokenize":
                raise RequestError(HTTPStatus.NOT_FOUND, f"no such endpoint: POST {path}")
            request = self._read_json()
            if "messages" in request:
                self._send_json(HTTPStatus.OK, self._chat(request))
                return
            text = request.get("text")
            name = request.get("tokenizer")
            allow_special = request.get("allow_special", False)
            offset = request.get("offset", 0)
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise RequestError(HTTPStatus.BAD_REQUEST, '"offset" must be a non-negative integer')
            if not isinstance(text, str):
                raise RequestError(HTTPStatus.BAD_REQUEST, '"text" must be a string')
            if not isinstance(name, str):
                raise RequestError(HTTPStatus.BAD_REQUEST, '"tokenizer" must be a string (a name from /api/tokenizers)')
            if not isinstance(allow_special, bool):
                raise RequestError(HTTPStatus.BAD_REQUEST, '"allow_special" must be true or false')
            tok = self.server.tokenizers.get(name)
            answer = tokenize(tok, text, allow_special=allow_special, max_tokens=self.server.max_tokens, offset=offset)
            answer["tokenizer"] = self.server.tokenizers.resolve(name)
            self._send_json(HTTPStatus.OK, answer)
        except RequestError as e:
            self._error(e)

    def _chat(self, request: dict) -> dict:
        """The answer for {"messages": [...], "tokenizer": ...}: the messages rendered with the
        tokenizer's chat format (chat.py), tokenized, and the rendered text."""
        from . import chat

        name, offset = request.get("tokenizer"), request.get("offset", 0)
        if not isinstance(name, str):
            raise RequestError(HTTPStatus.BAD_REQUEST, '"tokenizer" must be a string (a name from /api/tokenizers)')
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise RequestError(HTTPStatus.BAD_REQUEST, '"offset" must be a non-negative integer')
        tok = self.server.tokenizers.get(name)
        try:
            shown_by, text, ids = chat.chat_ids(tok, request["messages"], name=name)
        except ValueError as e:
            raise RequestError(HTTPStatus.BAD_REQUEST, str(e)) from None
        answer = tokenize(shown_by, text, max_tokens=self.server.max_tokens, offset=offset, ids=ids)
        answer.update(tokenizer=self.server.tokenizers.resolve(name), chat_text=text, messages=len(request["messages"]))
        return answer

    def _read_json(self) -> dict:
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            # Also keeps other web sites out: a cross-site JSON POST needs a CORS preflight, which
            # this server never grants.
            raise RequestError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send the request as Content-Type: application/json")
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise RequestError(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length, not a chunked body")
        lengths = self.headers.get_all("Content-Length") or []
        if not lengths:
            raise RequestError(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
        if len(set(lengths)) != 1 or not _DIGITS.fullmatch(lengths[0]):
            # int() would accept "1_0", "+5", " 5" and full-width digits; HTTP allows only 1*DIGIT
            raise RequestError(HTTPStatus.BAD_REQUEST, f"bad Content-Length {', '.join(lengths)!r}")
        length = int(lengths[0])
        if length > self.server.max_body:
            raise RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"request body of {length} bytes is over the limit of {self.server.max_body} bytes",
            )
        body = self.rfile.read(length)
        if len(body) != length:
            raise RequestError(HTTPStatus.BAD_REQUEST, "request body shorter than its Content-Length")
        try:
            obj = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"request body is not valid JSON: {e}") from None
        except RecursionError:
            raise RequestError(HTTPStatus.BAD_REQUEST, "request body is nested too deeply") from None
        if not isinstance(obj, dict):
            raise RequestError(HTTPStatus.BAD_REQUEST, "request body must be a JSON object")
        return obj


class VisualizerServer(ThreadingHTTPServer):
    """The HTTP server; `url` is where the page is. Stop it with shutdown() and server_close()."""

    daemon_threads = True  # connections in progress do not keep the process alive
    # socketserver's default backlog of 5 resets connections when a burst arrives while the
    # accepting thread waits for the GIL (e.g. while a vocabulary loads).
    request_queue_size = 128

    def __init__(self, address, tokenizers: TokenizerSet, *, max_body: int, max_tokens: int, verbose: bool,
                 max_connections: int = MAX_CONNECTIONS, request_seconds: float = REQUEST_SECONDS):
        super().__init__(address, _Handler)
        self.tokenizers = tokenizers
        self.max_body = max_body
        self.max_tokens = max_tokens
        self.verbose = verbose
        self.loopback = _is_loopback(address[0])
        self.request_seconds = request_seconds
        self._slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request, client_address):
        """A thread per connection, at most max_connections at once; beyond that a short 503."""
        if not self._slots.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                body = b'{"error": "too many connections; try again"}'
                head = "".join(f"{k}: {v}\r\n" for k, v in _SECURITY_HEADERS.items()).encode()
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Connection: close\r\nRetry-After: 1\r\n" + head
                                + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/"


class _VisualizerServer6(VisualizerServer):
    address_family = socket.AF_INET6


def make_server(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    tokenizer_files: Iterable[str | os.PathLike] = (),
    tokenizers: Mapping[str, object] | None = None,
    encodings: Iterable[str] | None = None,
    max_body: int = MAX_BODY,
    max_tokens: int = MAX_TOKENS,
    max_connections: int = MAX_CONNECTIONS,
    request_seconds: float = REQUEST_SECONDS,
    verbose: bool = False,
) -> VisualizerServer:
    """A visualizer server bound to (host, port), not yet serving: call serve_forever() on it.

    port=0 picks a free port (see `server.url`). The page offers `encodings` (default: every
    pretrained encoding, loaded on first use), the tokenizers in `tokenizers` (name -> Tokenizer)
    and the saved tokenizer files in `tokenizer_files` (loaded now, named by file name).
    """
    if not isinstance(max_body, int) or max_body < 1:
        raise ValueError(f"max_body must be a positive int, got {max_body!r}")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    tokset = TokenizerSet(encodings=encodings, tokenizer_files=tokenizer_files, tokenizers=tokenizers)
    cls = _VisualizerServer6 if ":" in host else VisualizerServer
    if not isinstance(max_connections, int) or max_connections < 1:
        raise ValueError(f"max_connections must be a positive int, got {max_connections!r}")
    if not isinstance(request_seconds, (int, float)) or not request_seconds > 0:
        raise ValueError(f"request_seconds must be positive, got {request_seconds!r}")
    return cls((host, port), tokset, max_body=max_body, max_tokens=max_tokens, verbose=verbose,
               max_connections=max_connections, request_seconds=float(request_seconds))


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    tokenizer_files: Iterable[str | os.PathLike] = (),
    open_browser: bool = False,
    verbose: bool = True,
    **options,
) -> None:
    """Serves the visualizer until interrupted (Ctrl-C). Options as for make_server."""
    try:
        server = make_server(host, port, tokenizer_files=tokenizer_files, verbose=verbose, **options)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise OSError(f"{host}:{port} is in use by another program (--port PORT, or --port 0 for any free one)"
                          ) from None
        raise
    if not server.loopback:
        print(
            f"warning: listening on {host}, not a loopback address: anyone who can reach it can use it",
            file=sys.stderr,
        )
    print(f"tokenforge visualizer at {server.url} (Ctrl-C stops)", file=sys.stderr)
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
