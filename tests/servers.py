"""Real HTTP servers on 127.0.0.1 that speak the providers' wire formats (no mocks)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[str, dict[str, Any], dict[str, str]], tuple[int, dict[str, str], bytes]]


class Recorder:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.client_ports: list[int] = []


@contextmanager
def serve(handler: Handler, *, keep_alive: bool = False) -> Iterator[tuple[str, Recorder]]:
    """Start a server whose responses come from ``handler(path, json_body, headers)``.
    ``keep_alive`` speaks HTTP/1.1 so a client can reuse its connection (the recorder's
    ``client_ports`` then show how many connections were opened)."""
    recorder = Recorder()

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._answer({})  # a document fetched (`llmwiki ingest URL`): no body

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            self._answer(json.loads(raw) if raw else {})

        def _answer(self, body: dict[str, Any]) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            recorder.requests.append((self.path, body, headers))
            recorder.client_ports.append(self.client_address[1])
            status, extra, payload = handler(self.path, body, headers)
            if status == 0:  # drop the connection without answering
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.send_response(status)
            for key, value in extra.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", recorder
    finally:
        server.shutdown()
        server.server_close()


def json_response(data: Any, status: int = 200) -> tuple[int, dict[str, str], bytes]:
    return status, {"content-type": "application/json"}, json.dumps(data).encode()
