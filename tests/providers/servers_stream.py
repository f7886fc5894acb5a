"""Real HTTP/1.1 servers on 127.0.0.1 that stream scripted answers (SSE or NDJSON).

A request records whether the client closed the connection before the reply was written
(``client_closed``) and how many pieces were written (``written``).

``stream_server(script)`` starts a server; ``script(request)`` returns a :class:`Reply`
for each request: a status, headers and body pieces, each written and flushed as its own
HTTP chunk as soon as it is reached (callables in the body run in between, e.g. to wait
until the client has read the first piece). A reply can drop the connection before
answering (``drop=True``) or in the middle of the body (``drop_after=n``), or end the body
by closing the connection (``chunked=False``), as HTTP/1.0 servers do.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Piece = bytes | Callable[[], None]


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: list[Piece] = field(default_factory=list)
    drop: bool = False
    drop_after: int | None = None
    chunked: bool = True


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    #: set when writing the reply failed because the client had closed the connection
    #: (a client that stops reading: a cut answer, a timeout, Ctrl-C)
    client_closed: threading.Event = field(default_factory=threading.Event)
    written: int = 0  # body pieces written before the end or the client's close

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


Script = Callable[[Request], Reply]


def replies(*sequence: Reply) -> Script:
    """A script answering successive requests with successive replies (the last repeats)."""
    state = {"i": 0}
    lock = threading.Lock()

    def script(_request: Request) -> Reply:
        with lock:
            i = min(state["i"], len(sequence) - 1)
            state["i"] += 1
        return sequence[i]

    return script


@contextmanager
def stream_server(script: Script) -> Iterator[tuple[str, list[Request]]]:
    """Yield ``(base_url, requests)`` for a server answering with ``script``."""
    seen: list[Request] = []

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            request = Request(
                "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw
            )
            seen.append(request)
            reply = script(request)
            if reply.drop:
                self._drop()
                return
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            pieces = reply.body
            if reply.chunked:
                self.send_header("transfer-encoding", "chunked")
            else:
                self.send_header("connection", "close")
                self.close_connection = True
            self.end_headers()
            written = 0
            for piece in pieces:
                if callable(piece):
                    piece()
                    continue
                if reply.drop_after is not None and written >= reply.drop_after:
                    self._drop()
                    return
                try:
                    if reply.chunked:
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    else:
                        self.wfile.write(piece)
                    self.wfile.flush()
                except OSError:  # BrokenPipe / ConnectionReset: the client hung up
                    request.client_closed.set()
                    self.close_connection = True
                    return
                written += 1
                request.written = written
            if reply.drop_after is not None and written >= reply.drop_after:
                self._drop()
                return
            if reply.chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        def _drop(self) -> None:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def log_message(self, *args: Any) -> None:
            pass

    class _Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client that went away mid-answer is part of the tests

    server = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ body helpers


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event (``data`` as JSON unless it is already a string)."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def ndjson(data: Any) -> bytes:
    return (json.dumps(data) + "\n").encode()


def json_reply(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    body = json.dumps(data).encode()
    return Reply(status, {"content-type": "application/json", **(headers or {})}, [body])


def sse_reply(pieces: list[Piece], **kwargs: Any) -> Reply:
    return Reply(
        200, {"content-type": "text/event-stream", "cache-control": "no-cache"}, pieces, **kwargs
    )


def ndjson_reply(pieces: list[Piece], **kwargs: Any) -> Reply:
    return Reply(200, {"content-type": "application/x-ndjson"}, pieces, **kwargs)
