#!/usr/bin/env python3
"""Benchmark an index that travels with git (refs/llmwiki/index, issue 29): publish, fetch and
a fresh clone's first `context`, with sizes, at 10,000 pages.

    python benchmarks/indexref.py [--work DIR] [--pages 10000] [--repeat 3]

1. A wiki of ``--pages`` pages (``benchmarks/check.py``'s generator, deterministic: 51,525
   chunks at 10,000 pages, the wiki of the other 10,000-page rows) in ``--work/publisher``. Its store is built by the real indexer with **synthetic
   vectors**: a stand-in embedder with the local model's fingerprint and width (384) that
   makes a unit vector from each chunk's hash, because the local model embeds ~20 chunks/s
   here (~40 minutes for 51,500 chunks). Everything after that is the real CLI in fresh
   processes with the real local model (which then embeds only the questions).
2. ``llmwiki index --publish`` (fresh process; the index is current, so its cost is the
   freshness pass plus the publish) and the publish alone in process; a second publish
   (unchanged: nothing new). Sizes: the payload, the repository's objects before and after
   (loose, then packed by ``git gc``), float16 against float32.
3. Push to a bare repository; per run a fresh clone: ``git fetch origin
   refs/llmwiki/index:refs/llmwiki/index`` then the first ``llmwiki context --json`` (no
   local index: the store snapshot is restored with the ref's vectors) and a second one; the
   same first call with the ref rewritten to hold the vectors alone (every page is read and
   indexed lexically); in another fresh clone ``llmwiki index --fetch``. Median of
   ``--repeat`` clones.
4. float16's effect: the largest |cosine(f16) - cosine(f32)| over 1,000 random unit
   queries against the published vectors, and how often the top 10 differ.

Prints markdown tables; always exits 0 (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from llmwiki_git.gitstore.git import Git

HERE = Path(__file__).resolve().parent
QUESTIONS = (
    "how do I link notes together",
    "daily journal template",
    "publishing a site from markdown",
)
FIRST_CONTEXT_TARGET = 1.0  # seconds, issue 29


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("LLMWIKI_", "GIT_"))}
    out.update(
        {
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        }
    )
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    return out


CPU: list[float] = []  # CPU seconds (user + system) of each command `run` ran, in order


def run(cmd: Sequence[str], cwd: Path) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, env=env(), capture_output=True, text=True)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}: {proc.stderr[-2000:]}")
    return took, proc.stdout


def llmwiki(cwd: Path, *args: str) -> tuple[float, str]:
    return run([sys.executable, "-m", "llmwiki_git", *args], cwd)


class SyntheticEmbedder:
    """The local model's fingerprint and width; each chunk's vector made from its text's hash
    (deterministic, unit length), at numpy speed instead of ~20 chunks/s."""

    name = "onnx-minilm"
    dimension = 384

    def __init__(self) -> None:
        from llmwiki_git.retrieval.embedding_onnx import OnnxMiniLMEmbedder

        real = OnnxMiniLMEmbedder(optimize=False)
        self.fingerprint, self.model, self.name = real.fingerprint, real.model, real.name

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: object = None
    ) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            out[i] = np.random.default_rng(seed).standard_normal(self.dimension)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


def build_publisher(work: Path, pages: int) -> Path:
    folder = work / "publisher"
    if not (folder / ".git").is_dir():
        import importlib.util

        spec = importlib.util.spec_from_file_location("_llmwiki_bench_check", HERE / "check.py")
        assert spec is not None and spec.loader is not None
        check = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = check  # its dataclasses need the module registered
        spec.loader.exec_module(check)
        folder.mkdir(parents=True)
        check.build_wiki(folder, pages)  # a committed git repository
    if not (folder / ".llmwiki" / "embeddings.json").exists():
        from llmwiki_git.retrieval import indexer
        from llmwiki_git.workspace import Workspace

        ws = Workspace.open(folder, environ=env())
        wiki = ws.retrieval().wiki()
        read, skipped = indexer.read_pages(wiki)
        (folder / ".llmwiki").mkdir(exist_ok=True)
        indexer.build(
            folder / ".llmwiki",
            read,
            SyntheticEmbedder(),
            skipped=skipped,
            names=indexer.names_digest(wiki),
        )
    return folder


def vectors_only(git: Git) -> None:
    """Rewrite the clone's refs/llmwiki/index without its store snapshot (the vectors alone)."""
    from llmwiki_git.gitstore import datarefs
    from llmwiki_git.retrieval import indexref

    old = git.object_id(indexref.REF) or ""
    files = {
        name: git.read_blob(f"{indexref.REF}:{name}")
        for name in ("hashes", "index.json", "vectors")
    }
    meta = json.loads(files["index.json"])
    meta["snapshot"] = {}
    files["index.json"] = json.dumps(meta).encode()
    git.update_ref(indexref.REF, datarefs.commit_files(git, files, old, "vectors only"), old)


def objects_size(repo: Path) -> int:
    out = subprocess.run(
        ["git", "count-objects", "-v"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    fields = dict(line.split(": ") for line in out.splitlines())
    return (int(fields["size"]) + int(fields["size-pack"])) * 1024


def fmt(seconds: float) -> str:
    return f"{seconds:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/llmwiki-indexref-bench"))
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE.parent))
    from llmwiki_git.gitstore.git import Git
    from llmwiki_git.retrieval import indexref
    from llmwiki_git.retrieval import store as store_mod

    print(
        f"Machine: {os.cpu_count()} cores; load average {os.getloadavg()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
    )
    started = time.perf_counter()
    publisher = build_publisher(work, args.pages)
    print(f"(wiki and synthetic-vector store ready in {time.perf_counter() - started:.0f} s)\n")
    git = Git(publisher)
    llmwiki(publisher, "index")  # regenerates wiki/index.md: committed, as a team's flow commits it
    if subprocess.run(
        ["git", "status", "--porcelain"], cwd=publisher, capture_output=True, text=True
    ).stdout.strip():
        run(["git", "add", "-A"], publisher)
        run(["git", "commit", "-qm", "the generated table of contents"], publisher)
        llmwiki(publisher, "index")
    store = store_mod.load(publisher / ".llmwiki")
    rows: list[tuple[str, str]] = [
        ("pages / chunks (rows) in the store", f"{len(store.pages)} / {store.rows}")
    ]

    subprocess.run(["git", "update-ref", "-d", indexref.REF], cwd=publisher, capture_output=True)
    subprocess.run(["git", "gc", "-q", "--prune=now"], cwd=publisher, check=True)
    before = objects_size(publisher)
    t0 = time.perf_counter()
    snapshot = indexref.snapshot_files(publisher / ".llmwiki")
    payload = indexref.payload(store, git.rev_parse("HEAD"), snapshot)
    t_payload = time.perf_counter() - t0
    t0 = time.perf_counter()
    done = indexref.publish(git, store, snapshot)
    t_publish = time.perf_counter() - t0
    loose = objects_size(publisher) - before
    vectors_part = sum(len(payload.files[n]) for n in ("index.json", "hashes", "vectors"))
    rows += [
        ("distinct chunks published", f"{done.chunks}"),
        (
            "payload: vectors part (index.json + hashes + float16 vectors)",
            f"{vectors_part / 1e6:.1f} MB",
        ),
        (
            "payload: store snapshot (page table + lexical index)",
            f"{(payload.size - vectors_part) / 1e6:.1f} MB",
        ),
        (
            "the vectors as float32 instead",
            f"{(vectors_part + len(payload.files['vectors'])) / 1e6:.1f} MB",
        ),
        (
            "publish in process (payload / payload + objects + ref)",
            f"{fmt(t_payload)} / {fmt(t_publish)} s",
        ),
        ("objects added (loose, zlib)", f"{loose / 1e6:.1f} MB"),
    ]
    subprocess.run(["git", "gc", "-q", "--prune=now"], cwd=publisher, check=True)
    rows.append(
        ("objects added, packed by git gc", f"{(objects_size(publisher) - before) / 1e6:.1f} MB")
    )
    t_cli, out = llmwiki(publisher, "index", "--publish", "--json")
    rows.append(
        (
            "`llmwiki index --publish` (fresh process, index current, nothing new)",
            f"{fmt(t_cli)} s (changed: {json.loads(out)['published']['changed']})",
        )
    )

    bare = work / "origin.git"
    shutil.rmtree(bare, ignore_errors=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    t_push, _ = run(["git", "push", "-q", str(bare), "main", indexref.REF], publisher)
    rows.append(("git push of main and the ref to a local bare repository", f"{fmt(t_push)} s"))

    fetch_t, first_t, second_t, fetchcmd_t, plain_t, edited_t = [], [], [], [], [], []
    first_cpu: list[float] = []
    second_cpu: list[float] = []
    for i in range(args.repeat):
        clone = work / f"clone-{i}"
        shutil.rmtree(clone, ignore_errors=True)
        run(["git", "clone", "-q", str(bare), str(clone)], work)
        took, _ = run(["git", "fetch", "-q", "origin", f"{indexref.REF}:{indexref.REF}"], clone)
        fetch_t.append(took)
        took, out = llmwiki(clone, "context", QUESTIONS[i % len(QUESTIONS)], "--json")
        first_cpu.append(CPU[-1])
        pack = json.loads(out)
        assert not pack["warnings"] and pack["primary"], pack["warnings"]
        assert (clone / ".llmwiki" / "embeddings.bin").stat().st_size > 50_000_000
        first_t.append(took)
        took, _ = llmwiki(clone, "context", QUESTIONS[(i + 1) % len(QUESTIONS)], "--json")
        second_t.append(took)
        second_cpu.append(CPU[-1])
        shutil.rmtree(clone)
        run(
            ["git", "clone", "-q", str(bare), str(clone)], work
        )  # one page differs from the publisher's
        run(["git", "fetch", "-q", "origin", f"{indexref.REF}:{indexref.REF}"], clone)
        edited = sorted((clone / "wiki").rglob("*.md"))[i + 1]
        edited.write_text(edited.read_text() + "\nOne more line, written in the clone.\n")
        took, _ = llmwiki(clone, "context", QUESTIONS[i % len(QUESTIONS)], "--json")
        edited_t.append(took)
        shutil.rmtree(clone)
        run(
            ["git", "clone", "-q", str(bare), str(clone)], work
        )  # the vectors alone: every page read
        run(["git", "fetch", "-q", "origin", f"{indexref.REF}:{indexref.REF}"], clone)
        vectors_only(Git(clone))
        took, out = llmwiki(clone, "context", QUESTIONS[i % len(QUESTIONS)], "--json")
        assert not json.loads(out)["warnings"]
        plain_t.append(took)
        shutil.rmtree(clone)
        run(["git", "clone", "-q", str(bare), str(clone)], work)
        took, out = llmwiki(clone, "index", "--fetch", "--json")
        summary = json.loads(out)
        assert summary["embedded"] == 0, summary
        fetchcmd_t.append(took)
        shutil.rmtree(clone)
    med = statistics.median
    verdict = "met" if med(first_t) < FIRST_CONTEXT_TARGET else "missed"
    rows += [
        (
            "`git fetch origin refs/llmwiki/index:refs/llmwiki/index` (fresh clone)",
            f"{fmt(med(fetch_t))} s",
        ),
        (
            "first `context --json` in the fresh clone (no local index: the snapshot restored)",
            f"**{fmt(med(first_t))} s** (target < {FIRST_CONTEXT_TARGET:.0f} s: {verdict}; runs "
            f"{', '.join(fmt(t) for t in first_t)}); CPU {fmt(med(first_cpu))} s",
        ),
        (
            "second `context --json` (the store it wrote)",
            f"{fmt(med(second_t))} s; CPU {fmt(med(second_cpu))} s",
        ),
        (
            "first `context --json`, one page edited in the clone (the snapshot restored, then the wiki "
            "scanned once to follow the edit)",
            f"{fmt(med(edited_t))} s",
        ),
        (
            "first `context --json`, a ref of vectors only (every page read and indexed lexically)",
            f"{fmt(med(plain_t))} s",
        ),
        ("`llmwiki index --fetch` in a fresh clone (0 embedded)", f"{fmt(med(fetchcmd_t))} s"),
    ]

    published = indexref.read(git)
    assert published is not None
    wide = published.unit
    exact = wide / np.linalg.norm(wide, axis=1, keepdims=True)
    original = store.vectors.get([h.decode() for h in published.hashes.tolist()])
    full = np.stack([original[h.decode()] for h in published.hashes.tolist()])
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((1000, full.shape[1])).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    worst, differ = 0.0, 0
    for q in queries:
        a, b = full @ q, exact @ q
        worst = max(worst, float(np.abs(a - b).max()))
        differ += set(np.argsort(-a)[:10].tolist()) != set(np.argsort(-b)[:10].tolist())
    rows += [
        ("float16: largest |cosine difference| over 1,000 random queries", f"{worst:.5f}"),
        ("float16: queries whose top 10 differ from float32's", f"{differ} / 1000"),
    ]

    print("| measurement | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
