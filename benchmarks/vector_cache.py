"""A persistent cache of embedding vectors for the benchmarks, keyed by the embedded text.

Embedding the four benchmark wikis with the default local model takes tens of minutes on a
shared 2-core machine; every experiment that changes what is embedded only changes some
chunks. :class:`CachedEmbedder` wraps a real embedder: a text whose vector is in the cache
(same model fingerprint, same exact text) is never embedded again, and new vectors are
saved as they come, so an interrupted run keeps what it paid for.

Layout: ``<cache>/<fingerprint as a file name>/shard-<time>-<pid>.npz``, each shard holding
``keys`` (the first 32 hex digits of the text's SHA-256, as bytes) and ``vectors``
(float32). Shards are written atomically (temp file + rename) and only ever added; any
number of runs may share a cache folder. The cache lives outside the repository (it is
derived data, ~1.6 KB a chunk).

Standalone: stdlib and numpy only; no llmwiki_git import, so a baseline revision's package
can use it too.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: Texts embedded between two saves (a shard each): an interrupted run loses at most this.
SAVE_EVERY = 256


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32].encode()


class VectorCache:
    """Vectors of one model, by text."""

    def __init__(self, root: Path, fingerprint: str) -> None:
        self.folder = Path(root) / re.sub(r"[^A-Za-z0-9._=+-]+", "_", fingerprint)[:150]
        self.folder.mkdir(parents=True, exist_ok=True)
        self._vectors: dict[bytes, np.ndarray] = {}
        self._seen: set[str] = set()
        self.reload()

    def reload(self) -> None:
        """Read shards written since the last look (by this or another process)."""
        for path in sorted(self.folder.glob("shard-*.npz")):
            if path.name in self._seen:
                continue
            try:
                with np.load(path) as data:
                    keys, vectors = data["keys"], data["vectors"]
            except (OSError, ValueError, KeyError):
                continue  # a shard being written by another process; read next time
            self._seen.add(path.name)
            for key, vector in zip(keys.tolist(), vectors):
                self._vectors[key] = vector

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, text: str) -> np.ndarray | None:
        return self._vectors.get(text_key(text))

    def put(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if not len(texts):
            return
        keys = np.array([text_key(t) for t in texts], dtype="S32")
        name = f"shard-{time.time_ns()}-{os.getpid()}.npz"
        tmp = self.folder / f".{name}.tmp"
        with open(tmp, "wb") as handle:
            np.savez(handle, keys=keys, vectors=np.asarray(vectors, dtype=np.float32))
        os.replace(tmp, self.folder / name)
        self._seen.add(name)
        for key, vector in zip(keys.tolist(), np.asarray(vectors, dtype=np.float32)):
            self._vectors[key] = vector


class CachedEmbedder:
    """An embedder (the library's protocol) that asks ``inner`` only for texts the cache
    lacks. ``stats`` counts texts served from the cache and embedded."""

    def __init__(
        self, inner: Any, cache_root: Path, log: Callable[[str], object] | None = None
    ) -> None:
        self._inner = inner
        self.name, self.model = inner.name, inner.model
        self.dimension, self.fingerprint = inner.dimension, inner.fingerprint
        self.cache = VectorCache(cache_root, inner.fingerprint)
        self.stats = {"cached": 0, "embedded": 0, "seconds": 0.0}
        self._log = log

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: Any = None
    ) -> np.ndarray:
        texts = list(texts)
        out: list[np.ndarray | None] = [self.cache.get(t) for t in texts]
        missing: dict[str, list[int]] = {}
        for i, (text, vector) in enumerate(zip(texts, out)):
            if vector is None:
                missing.setdefault(text, []).append(i)
        self.stats["cached"] += len(texts) - sum(len(v) for v in missing.values())
        todo = list(missing)
        started = time.perf_counter()
        for start in range(0, len(todo), SAVE_EVERY):
            batch = todo[start : start + SAVE_EVERY]
            vectors = np.asarray(self._inner.embed(batch), dtype=np.float32)
            if vectors.shape[0]:
                self.dimension = vectors.shape[1]
            self.cache.put(batch, vectors)
            for text, vector in zip(batch, vectors):
                for i in missing[text]:
                    out[i] = vector
            self.stats["embedded"] += len(batch)
            if self._log is not None and len(todo) > 1:
                done = start + len(batch)
                rate = done / max(time.perf_counter() - started, 1e-9)
                self._log(f"embedded {done}/{len(todo)} new texts ({rate:.1f}/s)")
            if progress is not None:
                progress(start + len(batch), len(todo))
        self.stats["seconds"] += time.perf_counter() - started
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([np.asarray(v, dtype=np.float32) for v in out])  # type: ignore[arg-type]
