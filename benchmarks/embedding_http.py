#!/usr/bin/env python3
"""Benchmark the HTTP embedding path: what each batch of ``llmwiki index`` pays for HTTP.

    python benchmarks/embedding_http.py [--texts 640] [--batch 64] [--repeat 5]

1. **Client construction**: CPU time to build one ``httpx.Client`` the way the old
   embedding path did for every batch (``httpx.Client(timeout=60)``: loads the CA bundle),
   against the shared-TLS client the provider loop builds (``HttpSettings().client()``).
2. **Embedding run**: ``HttpEmbedder.embed`` of ``--texts`` texts in batches of ``--batch``
   against a local keep-alive server speaking Ollama's ``/api/embed``: wall and CPU time,
   and how many TCP connections the run opened (one client for all batches: one).

Prints markdown tables; always exits 0 (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _construction(repeat: int) -> list[tuple[str, float]]:
    import httpx

    from llmwiki_git.providers.http import HttpSettings

    settings = HttpSettings()
    settings.client().close()  # the TLS context is built once per process
    rows = []
    for label, make in (
        ("httpx.Client(timeout=60) (old: per batch)", lambda: httpx.Client(timeout=60.0)),
        ("HttpSettings().client() (now: per run)", settings.client),
    ):
        samples = []
        for _ in range(repeat):
            start = time.process_time()
            for _ in range(10):
                make().close()
            samples.append((time.process_time() - start) / 10 * 1000)
        rows.append((label, statistics.median(samples)))
    return rows


def _server() -> tuple[ThreadingHTTPServer, list[int]]:
    ports: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            ports.append(self.client_address[1])
            data = json.dumps(
                {"embeddings": [[float(len(t)), 1.0, 0.5] for t in body["input"]]}
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, ports


def _run(texts: int, batch: int, repeat: int) -> tuple[float, float, int, int]:
    from llmwiki_git.retrieval.embedding_http import HttpEmbedder

    server, ports = _server()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    walls, cpus = [], []
    try:
        for _ in range(repeat):
            ports.clear()
            embedder = HttpEmbedder.from_env("ollama", {"OLLAMA_HOST": url}, "bench")
            wall, cpu = time.perf_counter(), time.process_time()
            embedder.embed([f"text number {i}" for i in range(texts)], batch_size=batch)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    finally:
        server.shutdown()
        server.server_close()
    return statistics.median(walls), statistics.median(cpus), len(ports), len(set(ports))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=640)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| client | CPU ms per construction (median) |\n|---|---|")
    for label, ms in _construction(args.repeat):
        print(f"| {label} | {ms:.1f} |")
    wall, cpu, requests, connections = _run(args.texts, args.batch, args.repeat)
    print(
        "\n| texts | batch | requests | TCP connections | wall s (median) | CPU s (median) |\n|---|---|---|---|---|---|"
    )
    print(f"| {args.texts} | {args.batch} | {requests} | {connections} | {wall:.3f} | {cpu:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
