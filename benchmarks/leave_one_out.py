#!/usr/bin/env python3
"""Leave-one-wiki-out evaluation of the ranking: every choice made on three wikis, measured on the fourth.

    python benchmarks/retrieval.py --leave-one-out [--work DIR] [--cache DIR] [--baseline REV]
    python benchmarks/leave_one_out.py [same options]

(Stage 1: the shipped ranking of this tree and of a baseline revision, per wiki.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import retrieval as B  # noqa: E402 - benchmarks/retrieval.py: corpus copies, questions, environment
from vector_cache import CachedEmbedder  # noqa: E402

CORPUS_NAMES = ("foam-docs", "dendron-vault", "hugo-docs", "logseq-docs")
SHORT = {"foam-docs": "foam", "dendron-vault": "dendron", "hugo-docs": "hugo", "logseq-docs": "logseq"}
DEFAULT_CACHE = Path.home() / ".cache" / "llmwiki-bench-vectors"
DEFAULT_WORK = Path("/tmp/llmwiki-loo-bench")
#: "Before": the last commit before issue 25's work.
BASELINE = "c97a644"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def local_embedder(cache: Path) -> CachedEmbedder:
    from llmwiki_git.retrieval.embedders import make_embedder

    inner = make_embedder("local", {}, None)
    assert inner is not None
    return CachedEmbedder(inner, cache, log)


def index_copy(folder: Path, embedder: Any) -> dict[str, Any]:
    """Index ``folder`` in this process with the imported llmwiki_git (``embedder`` None: the
    fast option), embedding through the cache. The library's own indexer writes the store."""
    from llmwiki_git.retrieval import indexer
    from llmwiki_git.workspace import Workspace

    retrieval = Workspace.open(folder).retrieval(B.clean_env())
    wiki = retrieval._load_wiki()
    started = time.perf_counter()
    pages, skipped = indexer.read_pages(wiki)
    summary = indexer.build(retrieval.state, pages, embedder, skipped=skipped, names=indexer.names_digest(wiki))
    return {"pages": summary.pages, "chunks": summary.chunks, "seconds": round(time.perf_counter() - started, 1)}


def shipped_tops(work: Path, cache: Path, corpora: Sequence[str]) -> dict[str, Any]:
    """Per corpus and question: the first ten pages of the shipped ranking of the imported
    llmwiki_git, in the default mode (dense store, local model) and with the fast option."""
    from llmwiki_git.retrieval import search as search_mod
    from llmwiki_git.workspace import Workspace

    questions = [q for q in B.load_questions() if q.corpus in corpora]
    embedder = local_embedder(cache)
    embedder.embed([q.question for q in questions])  # one batch (and one cache shard) for all questions
    out: dict[str, Any] = {"hybrid": {}, "fast": {}, "index": {}}
    for corpus in corpora:
        for kind in ("hybrid", "fast"):
            folder = work / kind / corpus
            B.sync_tree(B.CORPORA / corpus, folder)
            log(f"indexing {corpus} ({kind})")
            out["index"][f"{corpus}/{kind}"] = index_copy(folder, embedder if kind == "hybrid" else None)
            env = B.clean_env(LLMWIKI_EMBEDDING_PROVIDER="local") if kind == "hybrid" else B.clean_env()
            retrieval = Workspace.open(folder).retrieval(env)
            loaded = retrieval.load()
            if loaded.warnings:
                log(f"{corpus} ({kind}): {loaded.warnings}")
            query_embedder = embedder if loaded.embedder is not None else None
            paths = {p.page_id: p.path for p in loaded.store.pages}
            for q in questions:
                if q.corpus != corpus:
                    continue
                result = search_mod.search(q.question, loaded.store, loaded.lexical, query_embedder,
                                           mode="rrf", keep=50, max_pages=10)
                out[kind][q.id] = [paths.get(pid, pid) for pid, _ in result.pages]
    return out


def baseline_tops(work: Path, cache: Path, rev: str, corpora: Sequence[str]) -> dict[str, Any] | None:
    """:func:`shipped_tops` with the llmwiki_git of revision ``rev``, in a child process."""
    src = B.archive_source(rev, work / "src")
    if src is None:
        return None
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--shipped-json", "--work", str(work),
                           "--cache", str(cache), "--corpora", ",".join(corpora)],
                          env=B.clean_env(PYTHONPATH=f"{src}"), cwd=HERE, capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-4000:])
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        log(f"baseline {rev} failed (rc={proc.returncode})")
        return None


def hit_mrr(tops: dict[str, list[str]], questions: Sequence[Any]) -> tuple[float, float, int]:
    hits = mrr = 0.0
    n = 0
    for q in questions:
        if q.id not in tops:
            continue
        n += 1
        rank = B.first_rank(tops[q.id], q.answers)
        hits += 1.0 if rank is not None and rank <= 5 else 0.0
        mrr += 1.0 / rank if rank is not None else 0.0
    return (hits / n, mrr / n, n) if n else (float("nan"), float("nan"), 0)


def print_shipped(label: str, tops: dict[str, Any], corpora: Sequence[str]) -> None:
    questions = B.load_questions()
    print(f"| {label} | " + " | ".join(f"{SHORT[c]} hit@5 / MRR@10" for c in corpora) + " |")
    print("|---|" + "---|" * len(corpora))
    for kind in ("hybrid", "fast"):
        cells = []
        for c in corpora:
            h, m, n = hit_mrr(tops[kind], [q for q in questions if q.corpus == c])
            cells.append(f"{h:.3f} / {m:.3f} (n={n})")
        print(f"| {kind} | " + " | ".join(cells) + " |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help=f"work folder (default {DEFAULT_WORK})")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"embedding vector cache, kept between runs (default {DEFAULT_CACHE})")
    parser.add_argument("--corpora", default=",".join(CORPUS_NAMES), help="comma-separated corpus folders")
    parser.add_argument("--baseline", default=BASELINE, help=f"'before' revision (default {BASELINE})")
    parser.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    parser.add_argument("--shipped-json", action="store_true", help="internal: the baseline child's measurement")
    args = parser.parse_args(argv)
    corpora = [c for c in args.corpora.split(",") if c]
    work, cache = args.work.resolve(), args.cache.resolve()
    if args.shipped_json:
        with contextlib.redirect_stdout(sys.stderr):
            tops = shipped_tops(work, cache, corpora)
        print(json.dumps(tops))
        return 0
    print("\n".join(B.machine_info()) + "\n")
    if not args.no_baseline:
        before = baseline_tops(work / f"baseline-{args.baseline}", cache, args.baseline, corpora)
        if before is not None:
            print_shipped(f"before (`{args.baseline}`)", before, corpora)
    after = shipped_tops(work / "tree", cache, corpora)
    print_shipped("after (this tree)", after, corpora)
    print(f"- load average at end: {B.loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
