#!/usr/bin/env python3
"""Benchmark the index following the wiki (retrieval/refresh.py): what a read pays.

    python benchmarks/refresh.py [--work DIR] [--pages 1000,10000] [--repeat 5]

1. **Freshness check** (every read pays it): listing the live pages' blob ids and comparing
   them with the store, in process, on generated wikis (benchmarks/check.py's generator) of
   ``--pages`` sizes, committed and indexed with ``--fast``; and a warm context pack in one
   long-lived workspace (the MCP server's case, which reuses its listing while no file
   changes), without and with the check.
2. **Lexical refresh**: ``llmwiki context --json`` in a fresh process with nothing changed,
   then right after committing one new page (the call rebuilds and saves the index).
3. **On-the-fly embedding**: the local model's cost per chunk for batches of 1-64 chunks
   (model already loaded, as it is for a query embedding), which sets ``ON_THE_FLY_CHUNKS``.

Prints markdown tables; always exits 0 (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _retrieval_bench() -> Any:
    """benchmarks/retrieval.py (its helpers: clean env, machine info, check generator)."""
    spec = importlib.util.spec_from_file_location("_llmwiki_bench_retrieval", HERE / "retrieval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def _wiki(bench: Any, work: Path, n: int) -> Path:
    folder = work / f"wiki{n}"
    env = bench.clean_env()
    if not (folder / ".git").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        bench.load_check_module().build_wiki(folder, n)  # a committed git repository
    subprocess.run([sys.executable, "-m", "llmwiki_git", "index", "--fast"], cwd=folder, env=env, check=True,
                   capture_output=True)
    return folder


def freshness_check(folder: Path, repeat: int) -> float:
    from llmwiki_git.retrieval import refresh
    from llmwiki_git.retrieval import store as store_mod
    from llmwiki_git.workspace import Workspace

    ws = Workspace.open(folder)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        stale = refresh.staleness(store_mod.load(ws.state_dir), ws._page_blobs())
        times.append(time.perf_counter() - started)
        assert not stale, stale
    return statistics.median(times)


def warm_context(folder: Path, repeat: int) -> tuple[float, float]:
    """An MCP server's warm `get_context_pack`: in process, one long-lived workspace that
    reuses its page listing while no file changes; without and with the freshness check."""
    from llmwiki_git.retrieval.context import ContextOptions
    from llmwiki_git.workspace import Workspace

    ws = Workspace.open(folder)
    ws.reuse_listing = True

    def once(follow: bool) -> float:
        retrieval = ws.retrieval()
        if not follow:
            retrieval._list_pages = None
        started = time.perf_counter()
        retrieval.context("how are pages linked", ContextOptions())
        return time.perf_counter() - started

    results = []
    for follow in (False, True):
        once(follow)
        results.append(statistics.median(once(follow) for _ in range(max(repeat, 9))))
    return results[0], results[1]


def context_runs(bench: Any, folder: Path, repeat: int) -> tuple[float, float]:
    env = bench.clean_env()
    cmd = [sys.executable, "-m", "llmwiki_git", "context", "medlar bletted", "--json"]
    quiet = statistics.median(_run(cmd, folder, env) for _ in range(repeat))
    refreshed = []
    new = (folder / "wiki" if (folder / "wiki").is_dir() else folder) / "bench-new"
    for i in range(repeat):
        new.mkdir(exist_ok=True)
        (new / f"{i}.md").write_text(f"# New {i}\n\nA medlar is bletted, run {i}.\n")
        subprocess.run(["git", "add", "-A"], cwd=folder, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", f"new {i}"], cwd=folder, env=env, check=True)
        refreshed.append(_run(cmd, folder, env))
        found = subprocess.run(cmd, cwd=folder, env=env, check=True, capture_output=True, text=True).stdout
        assert f"bench-new/{i}" in found, "the new page was not found"
    for i in range(repeat):
        (new / f"{i}.md").unlink()
    subprocess.run(["git", "commit", "-qam", "undo"], cwd=folder, env=env, check=True)
    _run([sys.executable, "-m", "llmwiki_git", "index", "--fast"], folder, env)
    return quiet, statistics.median(refreshed)


def embedding_cost(repeat: int) -> list[tuple[int, float]]:
    from llmwiki_git.retrieval.embedding_onnx import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder()
    embedder.embed(["warm up the session"])
    text = ("A medlar is bletted until soft before it is eaten; the fruit keeps through winter in a cool "
            "store and is eaten with cheese. ") * 6  # about 700 characters, a typical chunk
    rows = []
    for n in (1, 8, 24, 64):
        times = []
        for r in range(repeat):
            started = time.perf_counter()
            embedder.embed([f"{text} {r} {i}" for i in range(n)])
            times.append(time.perf_counter() - started)
        rows.append((n, statistics.median(times)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/llmwiki-refresh-bench"))
    parser.add_argument("--pages", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    bench = _retrieval_bench()
    for line in bench.machine_info():
        print(line)
    print(f"load average at start: {bench.loadavg()}\n")
    print("| wiki | freshness check (in process, median) | warm context pack (MCP), no check / with check | "
          "`context --json`, nothing changed | `context --json` after committing one page |")
    print("|---|---|---|---|---|")
    for n in (int(x) for x in args.pages.split(",")):
        folder = _wiki(bench, args.work, n)
        check = freshness_check(folder, args.repeat)
        plain, follow = warm_context(folder, args.repeat)
        quiet, refreshed = context_runs(bench, folder, args.repeat)
        print(f"| {n:,} pages | {check * 1000:.0f} ms | {plain * 1000:.0f} / {follow * 1000:.0f} ms | "
              f"{quiet:.2f} s | {refreshed:.2f} s |")
    print("\n| chunks embedded on the fly | seconds (median) | ms per chunk |")
    print("|---|---|---|")
    try:
        for n, seconds in embedding_cost(args.repeat):
            print(f"| {n} | {seconds:.2f} | {seconds / n * 1000:.0f} |")
    except Exception as exc:  # noqa: BLE001 - the model may be absent
        print(f"| local model unavailable: {exc} | | |")
    print(f"\nload average at end: {bench.loadavg()}")
    os.sync()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
