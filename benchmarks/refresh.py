#!/usr/bin/env python3
"""Benchmark the index following the wiki (retrieval/refresh.py): what a read pays.

    python benchmarks/refresh.py [--work DIR] [--pages 1000,10000] [--repeat 5] [--baseline REV|none]
                                 [--no-embedding] [--fresh-only]

1. **Freshness check** (every read pays it): listing the live pages' blob ids and comparing
   them with the store, in process, on generated wikis (benchmarks/check.py's generator) of
   ``--pages`` sizes, committed and indexed with ``--fast``; and a warm context pack in one
   long-lived workspace (the MCP server's case, which reuses its listing while no file
   changes), without and with the check.
2. **Lexical refresh**: ``llmwiki context --json`` in a fresh process with nothing changed,
   right after committing a one-line edit of one page, and right after committing one new
   page (the call refreshes the index and saves it), for this tree and for git revision
   ``--baseline`` (default ``main``; ``git archive`` of its package, run with ``PYTHONPATH``,
   on its own copy of the wiki), interleaved run by run; wall and CPU seconds, the target
   (< 3 s for a one-page edit at 10,000 pages) with met/missed.
2b. **Fresh context, nothing changed** (``--fresh-only`` runs this alone): ``llmwiki context
   "<a page's title>" --json`` in fresh processes, this tree and ``--baseline`` interleaved,
   each revision run once first (bytecode written, files cached): wall and CPU seconds, the
   target (< 0.3 s at 10,000 pages) with met/missed. ``PYTHONDONTWRITEBYTECODE`` is dropped
   from the children's environment: with it every run compiles the package (~0.1 s), which
   an installed package never does. The git index's stat data is refreshed first (as any
   ``git status`` does): in a copied work tree git would otherwise re-hash every file on
   every listing (~0.2 s at 10,000 pages, before and after alike).
3. **On-the-fly embedding**: the local model's cost per chunk for batches of 1-64 chunks
   (model already loaded, as it is for a query embedding), which sets ``ON_THE_FLY_CHUNKS``.

Prints markdown tables; always exits 0 (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EDIT_TARGET = 3.0  # seconds: issue 15, a one-page edit of a 10,000-page index
FRESH_TARGET = 0.3  # seconds: issue 15, a fresh `context` with nothing changed, 10,000 pages


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
    subprocess.run(
        [sys.executable, "-m", "llmwiki_git", "index", "--fast"],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
    )
    return folder


def freshness_check(folder: Path, repeat: int) -> float:
    from llmwiki_git.retrieval import refresh
    from llmwiki_git.retrieval import store as store_mod
    from llmwiki_git.workspace import Workspace

    ws = Workspace.open(folder)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        stale = refresh.staleness(store_mod.load(ws.state_dir), ws.listing())
        times.append(time.perf_counter() - started)
        assert not stale, stale
    return statistics.median(times)


def warm_context(folder: Path, repeat: int) -> tuple[float, float]:
    """An MCP server's warm `get_context_pack`: in process, one long-lived workspace that
    reuses its page listing while no file changes; without and with the freshness check."""
    from llmwiki_git.retrieval.context import ContextOptions
    from llmwiki_git.workspace import Workspace

    ws = Workspace.open(folder, long_lived=True)
    retrieval = ws.retrieval()  # one service, warm between calls, as the server's
    listing = retrieval._list_pages

    def once(follow: bool) -> float:
        retrieval._list_pages = listing if follow else None
        started = time.perf_counter()
        retrieval.context("how are pages linked", ContextOptions())
        return time.perf_counter() - started

    results = []
    for follow in (False, True):
        once(follow)
        results.append(statistics.median(once(follow) for _ in range(max(repeat, 9))))
    return results[0], results[1]


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the child) and stdout of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, out


def _commit(folder: Path, env: dict[str, str], message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=folder, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", message], cwd=folder, env=env, check=True)


def context_runs(
    bench: Any, folders: dict[str, tuple[Path, dict[str, str]]], repeat: int
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """``llmwiki context --json`` in fresh processes, per revision (its own copy of the wiki),
    interleaved run by run: nothing changed; right after committing a one-line edit of one
    existing page; right after committing one new page (each call refreshes and saves)."""
    cmd = [sys.executable, "-m", "llmwiki_git", "context", "medlar bletted", "--json"]
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {
        k: {"quiet": [], "edit": [], "add": []} for k in folders
    }
    for i in range(repeat):
        for label, (folder, env) in folders.items():
            wiki = folder / "wiki" if (folder / "wiki").is_dir() else folder
            runs[label]["quiet"].append(_timed(cmd, folder, env)[:2])
            edited = sorted((wiki / "concepts").glob("*.md"))[i % 7]
            with open(edited, "a", encoding="utf-8") as fh:
                fh.write(f"\nA medlar is bletted, edit {i}, benchmark{i}edit.\n")
            _commit(folder, env, f"edit {i}")
            # The question names this edit's own word: earlier edits and new pages say
            # "medlar bletted" too, and the pack holds five pages.
            wall, cpu, out = _timed(
                [*cmd[:-2], f"medlar bletted benchmark{i}edit", "--json"], folder, env
            )
            runs[label]["edit"].append((wall, cpu))
            assert f"edit {i}" in out, "the edited text was not found"
            new = wiki / "bench-new"
            new.mkdir(exist_ok=True)
            (new / f"{i}.md").write_text(
                f"# New {i}\n\nA medlar is bletted, run {i}, benchmark{i}new.\n"
            )
            _commit(folder, env, f"new {i}")
            wall, cpu, out = _timed(
                [*cmd[:-2], f"medlar bletted benchmark{i}new", "--json"], folder, env
            )
            runs[label]["add"].append((wall, cpu))
            assert f"bench-new/{i}" in out, "the new page was not found"
    for folder, env in folders.values():
        subprocess.run(
            ["git", "checkout", "-q", "HEAD~" + str(2 * repeat), "--", "."],
            cwd=folder,
            env=env,
            check=True,
        )
        new = (folder / "wiki" if (folder / "wiki").is_dir() else folder) / "bench-new"
        for path in new.glob("*.md"):
            path.unlink()
        _commit(folder, env, "undo the benchmark's edits")
    return runs


def _question(folder: Path) -> str:
    """The title of the first concept page: a question that finds pages (and neighbours)."""
    wiki = folder / "wiki" if (folder / "wiki").is_dir() else folder
    first = sorted((wiki / "concepts").glob("*.md"))[0]
    for line in first.read_text(encoding="utf-8").splitlines():
        if line.startswith("title:"):
            return line.split(":", 1)[1].strip().strip('"').lower()
    return first.stem.replace("-", " ")


def fresh_context_runs(
    folders: dict[str, tuple[Path, dict[str, str]]], question: str, repeat: int
) -> dict[str, list[tuple[float, float]]]:
    """``llmwiki context QUESTION --json`` in fresh processes with nothing changed, per
    revision, interleaved run by run after one unmeasured run each."""
    cmd = [sys.executable, "-m", "llmwiki_git", "context", question, "--json"]
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in folders}
    for folder, env in folders.values():
        _timed(cmd, folder, env)
    for _ in range(repeat):
        for label, (folder, env) in folders.items():
            wall, cpu, out = _timed(cmd, folder, env)
            assert json.loads(out)["primary"], "the question found no page"
            runs[label].append((wall, cpu))
    return runs


def fresh_context_report(
    bench: Any, folder: Path, n: int, baseline: Path | None, label: str, repeat: int
) -> None:
    env = {k: v for k, v in bench.clean_env().items() if k != "PYTHONDONTWRITEBYTECODE"}
    folders = {"this tree": (folder, env)}
    if baseline is not None:
        base_env = {**env, "PYTHONPATH": str(baseline)}
        folders = {f"`{label}`": (_copy_for(folder, "baseline", base_env), base_env), **folders}
    for (
        copy,
        copy_env,
    ) in folders.values():  # stat data as after any `git status`: a copied work tree's
        # index no longer matches its files' inodes, and git then re-hashes every file on every listing
        subprocess.run(
            ["git", "update-index", "-q", "--refresh"], cwd=copy, env=copy_env, check=False
        )
    question = _question(folder)
    runs = fresh_context_runs(folders, question, repeat)
    print(
        f'\nFresh `llmwiki context "{question}" --json`, nothing changed, {n:,} pages, {repeat} runs per '
        "revision interleaved: median (min) wall seconds, median CPU seconds (user + system, with git).\n"
    )
    print("| revision | wall median (min) | CPU median (min) |")
    print("|---|---|---|")
    for name, times in runs.items():
        walls, cpus = [w for w, _ in times], [c for _, c in times]
        print(
            f"| {name} | {statistics.median(walls):.3f} ({min(walls):.3f}) s | "
            f"{statistics.median(cpus):.3f} ({min(cpus):.3f}) s |"
        )
    walls = [w for w, _ in runs["this tree"]]
    cpu = statistics.median(c for _, c in runs["this tree"])
    wall = statistics.median(walls)
    if n >= 10_000:
        print(
            f"\nfresh context, nothing changed, {n:,} pages: target < {FRESH_TARGET:g} s / measured {wall:.3f} s "
            f"wall ({cpu:.3f} s CPU) / {'met' if wall < FRESH_TARGET else 'missed'}"
        )


def _copy_for(folder: Path, label: str, env: dict[str, str]) -> Path:
    """A copy of ``folder`` indexed by the revision behind ``env`` (indexes never shared)."""
    import shutil  # noqa: PLC0415

    copy = folder.with_name(f"{folder.name}-{label}")
    if not copy.is_dir():
        shutil.copytree(folder, copy, symlinks=True)
    _run([sys.executable, "-m", "llmwiki_git", "index", "--fast"], copy, env)
    return copy


def embedding_cost(repeat: int) -> list[tuple[int, float]]:
    from llmwiki_git.retrieval.embedding_onnx import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder()
    embedder.embed(["warm up the session"])
    text = (
        "A medlar is bletted until soft before it is eaten; the fruit keeps through winter in a cool "
        "store and is eaten with cheese. "
    ) * 6  # about 700 characters, a typical chunk
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
    parser.add_argument(
        "--baseline",
        default="main",
        help="git revision measured beside this tree for the `context` rows (before/after, "
        "interleaved, each on its own copy of the wiki); 'none' to skip",
    )
    parser.add_argument(
        "--no-embedding",
        action="store_true",
        help="skip section 3 (the local model's cost per chunk)",
    )
    parser.add_argument(
        "--fresh-only",
        action="store_true",
        help="measure only the fresh `context` with nothing changed (section 2b)",
    )
    args = parser.parse_args(argv)
    bench = _retrieval_bench()
    baseline = (
        None
        if args.baseline == "none"
        else bench.archive_source(args.baseline, args.work / "baseline" / "src")
    )
    for line in bench.machine_info():
        print(line)
    print(f"load average at start: {bench.loadavg()}\n")
    if args.fresh_only:
        for n in (int(x) for x in args.pages.split(",")):
            fresh_context_report(
                bench, _wiki(bench, args.work, n), n, baseline, args.baseline, args.repeat
            )
        print(f"\nload average at end: {bench.loadavg()}")
        return 0
    print(
        "| wiki | freshness check (in process, median) | warm context pack (MCP), no check / with check |"
    )
    print("|---|---|---|")
    measured = []
    for n in (int(x) for x in args.pages.split(",")):
        folder = _wiki(bench, args.work, n)
        check = freshness_check(folder, args.repeat)
        plain, follow = warm_context(folder, args.repeat)
        print(
            f"| {n:,} pages | {check * 1000:.0f} ms | {plain * 1000:.0f} / {follow * 1000:.0f} ms |"
        )
        measured.append((n, folder))
    print(
        "\n`llmwiki context --json` in a fresh process, median wall seconds (CPU seconds, user + system), "
        "revisions interleaved run by run; each call after a commit refreshes the index and saves it. "
        f"Target for a one-page edit at 10,000 pages: < {EDIT_TARGET:g} s.\n"
    )
    print(
        "| wiki | revision | nothing changed | after a one-line edit of one page | after adding one page |"
    )
    print("|---|---|---|---|---|")
    for n, folder in measured:
        folders = {"this tree": (folder, bench.clean_env())}
        if baseline is not None:
            env = bench.clean_env(PYTHONPATH=str(baseline))
            folders = {f"`{args.baseline}`": (_copy_for(folder, "baseline", env), env), **folders}
        runs = context_runs(bench, folders, args.repeat)
        for label, kinds in runs.items():
            cells = []
            for kind in ("quiet", "edit", "add"):
                wall = statistics.median(w for w, _ in kinds[kind])
                cpu = statistics.median(c for _, c in kinds[kind])
                cell = f"{wall:.2f} s ({cpu:.2f} s CPU)"
                if kind == "edit" and n >= 10_000:
                    cell += (
                        " met"
                        if wall < EDIT_TARGET
                        else f" missed (CPU {'met' if cpu < EDIT_TARGET else 'missed'})"
                    )
                cells.append(cell)
            print(f"| {n:,} pages | {label} | " + " | ".join(cells) + " |")
    for n, folder in measured:
        fresh_context_report(bench, folder, n, baseline, args.baseline, args.repeat)
    print("\n| chunks embedded on the fly | seconds (median) | ms per chunk |")
    print("|---|---|---|")
    try:
        if args.no_embedding:
            raise RuntimeError("skipped (--no-embedding)")
        for n, seconds in embedding_cost(args.repeat):
            print(f"| {n} | {seconds:.2f} | {seconds / n * 1000:.0f} |")
    except Exception as exc:  # noqa: BLE001 - the model may be absent
        print(f"| local model unavailable: {exc} | | |")
    print(f"\nload average at end: {bench.loadavg()}")
    os.sync()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
