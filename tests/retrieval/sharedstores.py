"""What the vector-store tests have in common (test_vectors.py, test_shared_stores.py that runs
the contract against every store, test_pgvectors.py with what only PostgreSQL does): unit
vectors, and a writer in another process that can stop inside its transaction, to be killed
or released there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

DIMS = 8


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


WRITER = """
import sys
import numpy as np
from llmwiki_git.retrieval import storetable
uri, tag, pause = sys.argv[1], sys.argv[2], sys.argv[3] == "pause"
store = storetable.open_shared(uri, "m", 8, create=False)
rng = np.random.default_rng(len(tag))
vectors = {f"{tag}{i}": v / np.linalg.norm(v) for i, v in enumerate(rng.standard_normal((500, 8)).astype(np.float32))}
def hold():
    print("inside", flush=True)
    sys.stdin.readline()
store.write(vectors, before_commit=hold if pause else None)
print("done", flush=True)
"""


def writer(uri: str, tag: str, *, pause: bool) -> subprocess.Popen[str]:
    """A process writing 500 vectors named ``tag0``… to model ``m`` of the store at ``uri``;
    with ``pause`` it prints "inside" before committing and waits for a line on stdin."""
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, uri, tag, "pause" if pause else "go"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
