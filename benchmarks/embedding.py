#!/usr/bin/env python3
"""Benchmark the local model's indexing throughput: chunks per second, three ways.

    python benchmarks/embedding.py [--chunks 200] [--rounds 2]

The chunks are this repository's own docs (``docs/*.md``, ``README.md``) cut into
~700-character pieces (a typical chunk), the first ``--chunks`` of them. Each round embeds
them all with, in turn (interleaved, so that the load of a shared machine hits each alike):

* **before** - one run at a time, onnxruntime intra-op threads = the CPUs (the default
  until issue 15);
* **one thread** - one run at a time, one intra-op thread (the floor);
* **after** - one run per CPU at once on threads sharing the session, one intra-op
  thread each (the default now: ``OnnxMiniLMEmbedder()``).

Worker processes were not measured separately: ``InferenceSession.run`` releases the GIL,
so threads already run the model on every core, without a second copy of the model in
memory. Printed per way: median chunks/s (wall), CPU seconds per chunk, the ratio to
"before" (target >= 1.7x), and the smallest cosine between its vectors and "before"'s
(target >= 0.999), with the load average.

Always exits 0: a measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def chunks(n: int) -> list[str]:
    text = "\n".join(
        p.read_text(encoding="utf-8")
        for p in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
    )
    words = text.split()
    out, current = [], []
    for word in words:
        current.append(word)
        if sum(len(w) + 1 for w in current) >= 700:
            out.append(" ".join(current))
            current = []
        if len(out) == n:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    from llmwiki_git.retrieval.embedding_onnx import OnnxMiniLMEmbedder, _default_threads

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200, help="chunks embedded per way and round")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    args = parser.parse_args(argv)
    texts = chunks(args.chunks)
    cpus = _default_threads()
    ways = {
        "before (1 run at a time, intra-op threads = CPUs)": OnnxMiniLMEmbedder(
            workers=1, threads=cpus
        ),
        "one thread": OnnxMiniLMEmbedder(workers=1, threads=1),
        f"after ({cpus} runs at once, 1 intra-op thread each)": OnnxMiniLMEmbedder(),
    }
    for embedder in ways.values():
        embedder.embed(texts[:2])  # load the session
    print(
        f"- date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; CPUs: {cpus}; {len(texts)} chunks of "
        f"~700 characters; load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    rates: dict[str, list[float]] = {k: [] for k in ways}
    cpu: dict[str, list[float]] = {k: [] for k in ways}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, embedder in ways.items():
            wall, used = time.perf_counter(), time.process_time()
            vectors[name] = embedder.embed(texts)
            wall, used = time.perf_counter() - wall, time.process_time() - used
            rates[name].append(len(texts) / wall)
            cpu[name].append(used / len(texts))
    before = next(iter(ways))
    base = statistics.median(rates[before])
    print("| way | chunks/s (median) | CPU s per chunk | vs before | min cosine vs before |")
    print("|---|---|---|---|---|")
    for name in ways:
        rate = statistics.median(rates[name])
        cosine = float(np.min(np.sum(vectors[name] * vectors[before], axis=1)))
        ratio = rate / base
        verdict = f" ({'met' if ratio >= 1.7 else 'missed'} >= 1.7x)" if name != before else ""
        print(
            f"| {name} | {rate:.1f} | {statistics.median(cpu[name]):.3f} | {ratio:.2f}x{verdict} | "
            f"{cosine:.6f} ({'met' if cosine >= 0.999 else 'missed'} >= 0.999) |"
        )
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
