#!/usr/bin/env python3
"""``llmwiki merge-pages --suggest`` on pages sharing one title (issue 34, item 6).

    python benchmarks/suggest.py [--sizes 1000,2000,10000] [--package DIR] [--timeout 300]

For each size N, builds a git repository holding N pages of one shape and runs the real CLI
(``merge-pages --suggest --json``) once in a fresh process, reporting the child's CPU seconds
(user + system) and the number of groups it offered:

* ``folders``: ``wiki/tNNNN/note.md`` titled "Note" (titles that repeat their file names:
  nothing to offer);
* ``dated``: ``wiki/journal/2024-NNNN.md`` titled "Daily" (a copied title in a dated series:
  nothing to offer);
* ``copied``: ``wiki/c/copy-WORD.md`` titled "Blob" (one concept written N times: one group).

``--package DIR`` runs the ``llmwiki_git`` package in DIR (``git archive main llmwiki_git |
tar -x -C DIR``): the "before" column. A run over ``--timeout`` CPU-limited seconds is
stopped and shows as ``>N s``. Prints a markdown table; always exits 0 (a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "LLMWIKI_EMBEDDING_PROVIDER": "none",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "b@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "b@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
SHAPES = ("folders", "dated", "copied")


def word(i: int) -> str:
    """A name without digits (numbered file names are a series, never offered)."""
    return "".join(chr(ord("a") + int(d)) for d in f"{i:05d}")


def pages(shape: str, n: int) -> dict[str, str]:
    def page(title: str) -> str:
        return f"---\ntitle: {title}\n---\nSome text.\n"

    if shape == "folders":
        return {f"wiki/t{i:05d}/note.md": page("Note") for i in range(n)}
    if shape == "dated":
        return {f"wiki/journal/2024-{i:05d}.md": page("Daily") for i in range(n)}
    return {f"wiki/c/copy-{word(i)}.md": page("Blob") for i in range(n)}


def build(root: Path, shape: str, n: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=ENV)
    for path, text in pages(shape, n).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=ENV)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "pages"], check=True, env=ENV)


def run(root: Path, package: Path, timeout: int) -> tuple[float, str]:
    """(CPU seconds of the child, groups offered or the reason there are none)."""
    env = {**ENV, "PYTHONPATH": str(package)}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (timeout, timeout + 5))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-m", "llmwiki_git", "merge-pages", "--suggest", "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode < 0:
        return cpu, f">{timeout} s"
    if proc.returncode != 0:
        return cpu, f"exit {proc.returncode}: {proc.stderr.strip()[:60]}"
    return cpu, str(len(json.loads(proc.stdout)["groups"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,2000,10000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--package", type=Path, default=ROOT, help="where llmwiki_git is")
    parser.add_argument("--timeout", type=int, default=300, help="CPU seconds per run")
    args = parser.parse_args()
    print(f"package: {args.package}\n")
    print("| shape | pages | CPU s | groups |\n|---|---:|---:|---:|")
    for shape in args.shapes.split(","):
        for n in (int(x) for x in args.sizes.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                build(Path(tmp), shape, n)
                cpu, groups = run(Path(tmp), args.package, args.timeout)
            print(f"| {shape} | {n:,} | {cpu:.2f} | {groups} |", flush=True)


if __name__ == "__main__":
    main()
