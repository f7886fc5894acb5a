"""Embedding that keeps its work: vectors are computed a slice at a time, and when the run is
cut short (Ctrl-C, a provider failing halfway, a long run's periodic save) the vectors made
so far are written to ``.llmwiki/embeddings.partial.npz``, so that the next ``index`` run
embeds only what is still missing.

The checkpoint is replaced atomically (temp file + rename) and holds the model fingerprint,
the chunk hashes and their float32 vectors; a checkpoint of another model, an unreadable
one, or one holding a value that is not finite is ignored. `index` deletes it once the store
holding its vectors is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import Interrupted
from ..gitstore.transaction import pause_point
from .embedders import Embedder

PARTIAL_NAME = "embeddings.partial.npz"
SLICE = 64  # chunks per embed call: at most this much work is lost to an interrupt
SAVE_EVERY = 30.0  # seconds between periodic saves of a long run (a kill -9 loses at most that)


def load(folder: Path, fingerprint: str) -> dict[str, np.ndarray]:
    """The vectors an interrupted run kept for this model (hash -> vector); empty when there is
    no checkpoint, or it is of another model, unreadable, or holds values that are not finite."""
    path = folder / PARTIAL_NAME
    if not path.is_file() or path.is_symlink():
        return {}
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["fingerprint"]) != fingerprint:
                return {}
            hashes = [str(h) for h in data["hashes"]]
            vectors = np.asarray(data["vectors"], dtype=np.float32)
    except (OSError, ValueError, KeyError):
        return {}
    if vectors.ndim != 2 or vectors.shape[0] != len(hashes) or not bool(np.isfinite(vectors).all()):
        return {}
    return dict(zip(hashes, vectors))


def save(folder: Path, fingerprint: str, vectors: Mapping[str, np.ndarray]) -> None:
    """Write the checkpoint (atomically) holding ``vectors``."""
    from .store import _atomic_write

    hashes = list(vectors)
    matrix = (
        np.stack([vectors[h] for h in hashes]).astype(np.float32)
        if hashes
        else np.zeros((0, 0), np.float32)
    )

    def write(handle: BinaryIO) -> None:
        np.savez(
            handle,
            fingerprint=np.array(fingerprint),
            hashes=np.array(hashes, dtype=str),
            vectors=matrix,
        )

    _atomic_write(folder / PARTIAL_NAME, write)


def remove(folder: Path) -> None:
    """Delete the checkpoint (its vectors are in the store now)."""
    try:
        (folder / PARTIAL_NAME).unlink()
    except FileNotFoundError:
        pass


def embed_kept(
    folder: Path,
    embedder: Embedder,
    fingerprint: str,
    missing: Mapping[str, str],
    progress: Callable[[int, int], object] | None = None,
) -> tuple[dict[str, np.ndarray], set[str]]:
    """Vectors for ``missing`` (chunk hash -> text to embed), and the hashes of those that came
    from the checkpoint of an interrupted run. New vectors are computed ``SLICE`` texts at a time;
    if that stops early, what was computed is saved to the checkpoint before the exception
    goes on (a Ctrl-C as `Interrupted`, saying what was kept)."""
    kept = {h: v for h, v in load(folder, fingerprint).items() if h in missing}
    todo = [h for h in missing if h not in kept]
    out = dict(kept)
    total = len(todo)
    saved_at = time.monotonic()
    saved = len(out)
    try:
        for start in range(0, total, SLICE):
            part = todo[start : start + SLICE]

            def step(done: int, _: int, offset: int = start) -> None:
                if progress is not None:
                    progress(offset + done, total)

            vectors = embedder.embed([missing[h] for h in part], progress=step)
            out.update(zip(part, vectors))
            pause_point("embedded")
            if time.monotonic() - saved_at > SAVE_EVERY and start + SLICE < total:
                save(folder, fingerprint, out)
                saved_at, saved = time.monotonic(), len(out)
    except BaseException as exc:
        fresh = len(out) - len(kept)
        if len(out) > saved:
            save(folder, fingerprint, out)
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            raise Interrupted(
                f"{fresh} of {total} chunks were embedded and are kept in {folder.name}/{PARTIAL_NAME}; "
                "run `llmwiki index` again to embed the rest"
            ) from exc
        raise
    return out, set(kept)
