"""The embedding store: ``.llmwiki/embeddings.json`` (metadata) + ``.llmwiki/embeddings.bin``
(float32 vectors, little-endian, row-major, behind a 32-byte header), loaded with mmap.

Format (documented in docs/formats.md):

* ``embeddings.bin``: ``b"LLMWEMB1"`` + a 16-byte random token + rows (uint32 LE) +
  dimensions (uint32 LE), then ``rows x dimensions`` float32 values.
* ``embeddings.json``: ``{"version": 1, "fingerprint", "backend", "model", "dimensions",
  "rows", "token", "updatedAt", "pages": [{"pageId", "path", "blob", "title", "summary",
  "firstRow", "hashes": [...], "links": [...], "dangling": [...]}], "skipped": {path: blob}}``:
  page p's chunk i is row ``firstRow + i``; ``links``/``dangling`` are the wikilink graph at
  index time; ``skipped`` lists the pages that are not evidence (generated index, journal,
  binary or oversize files), so that a later call can tell which pages changed since.

The token ties the two files together: a json written with a bin from another run, a bin
truncated by a crash, or a bin of the wrong size is detected and reported, never used.
Both files are replaced atomically (temp file + rename), the bin first.
"""

from __future__ import annotations

import json
import os
import secrets
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import LlmwikiError

VERSION = 1
MAGIC = b"LLMWEMB1"
HEADER = struct.Struct("<8s16sII")
JSON_NAME = "embeddings.json"
BIN_NAME = "embeddings.bin"


class StoreError(LlmwikiError):
    """The store is missing, corrupt, truncated, or from another embedding model."""

    def __init__(self, message: str, code: str = "embedding-store-missing") -> None:
        super().__init__(message, hint="run `llmwiki index` to build or rebuild it")
        self.code = code


class PageEntry(NamedTuple):
    """One page of the store. A NamedTuple, and the JSON lists are kept as they are parsed:
    loading 10,000 entries as frozen dataclasses with tuple copies cost 0.18 s of the
    `context` budget (measured)."""

    page_id: str
    path: str
    blob: str
    title: str
    summary: str
    first_row: int
    hashes: Sequence[str]
    links: Sequence[str] = ()  # page ids this page links to (resolved at index time)
    dangling: Sequence[str] = ()  # targets of its links that resolved to nothing

    def to_json(self) -> dict[str, Any]:
        return {"pageId": self.page_id, "path": self.path, "blob": self.blob, "title": self.title,
                "summary": self.summary, "firstRow": self.first_row, "hashes": list(self.hashes),
                "links": list(self.links), "dangling": list(self.dangling)}


@dataclass
class Store:
    fingerprint: str
    backend: str
    model: str
    dimensions: int
    pages: list[PageEntry]
    vectors: np.ndarray  # (rows, dimensions) float32; a memmap when loaded from disk
    updated_at: str = ""
    skipped: dict[str, str] = field(default_factory=dict)  # pages that are not evidence: path -> blob
    _row_page: list[int] = field(default_factory=list, repr=False)

    @property
    def rows(self) -> int:
        return sum(len(p.hashes) for p in self.pages)

    def row_owner(self) -> list[int]:
        """Index into ``pages`` for every row (built once)."""
        if not self._row_page:
            owner: list[int] = []
            for index, page in enumerate(self.pages):
                owner.extend([index] * len(page.hashes))
            self._row_page = owner
        return self._row_page

    def vectors_by_hash(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        if self.dimensions == 0:
            return out
        for page in self.pages:
            for offset, chunk_hash in enumerate(page.hashes):
                out.setdefault(chunk_hash, self.vectors[page.first_row + offset])
        return out


def _atomic_write(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save(folder: Path, store: Store) -> None:
    token = secrets.token_bytes(16)
    rows = store.rows
    vectors = np.ascontiguousarray(store.vectors, dtype="<f4").reshape(rows, store.dimensions)

    def write_bin(handle: Any) -> None:
        handle.write(HEADER.pack(MAGIC, token, rows, store.dimensions))
        handle.write(vectors.tobytes())

    meta = {
        "version": VERSION,
        "fingerprint": store.fingerprint,
        "backend": store.backend,
        "model": store.model,
        "dimensions": store.dimensions,
        "rows": rows,
        "token": token.hex(),
        "updatedAt": store.updated_at,
        "pages": [p.to_json() for p in store.pages],
        "skipped": store.skipped,
    }
    _atomic_write(folder / BIN_NAME, write_bin)
    _atomic_write(folder / JSON_NAME, lambda h: h.write(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode()))


def add_skipped(folder: Path, entries: dict[str, str]) -> None:
    """Record pages that are not evidence (a generated file written after the store was
    built) in ``embeddings.json``, leaving the vectors alone."""
    path = folder / JSON_NAME
    meta = json.loads(path.read_bytes())
    meta["skipped"] = {**(meta.get("skipped") or {}), **entries}
    _atomic_write(path, lambda h: h.write(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode()))


def load(folder: Path, *, expected_fingerprint: str | None = None) -> Store:
    """Read the store; raise StoreError (with a warning code) when it cannot be used."""
    json_path, bin_path = folder / JSON_NAME, folder / BIN_NAME
    if json_path.is_symlink() or bin_path.is_symlink():
        raise StoreError("the embedding store is a symlink; refusing to read it", "embedding-store-corrupt")
    try:
        meta = json.loads(json_path.read_bytes())
    except FileNotFoundError:
        raise StoreError("no embedding store yet (.llmwiki/embeddings.json)") from None
    except (OSError, ValueError) as exc:
        raise StoreError(f".llmwiki/{JSON_NAME} is corrupt ({exc})", "embedding-store-corrupt") from exc
    if not isinstance(meta, dict) or meta.get("version") != VERSION:
        raise StoreError(f".llmwiki/{JSON_NAME} has an unknown format version", "embedding-index-outdated")
    try:
        dims, rows, token = int(meta["dimensions"]), int(meta["rows"]), bytes.fromhex(meta["token"])
        pages = [
            PageEntry(p["pageId"], p["path"], p["blob"], p.get("title", ""), p.get("summary", ""),
                      p["firstRow"], p["hashes"], p.get("links", ()), p.get("dangling", ()))
            for p in meta["pages"]
        ]
        if not all(isinstance(p.first_row, int) and isinstance(p.hashes, list) for p in pages):
            raise ValueError("firstRow/hashes")
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f".llmwiki/{JSON_NAME} is corrupt (missing {exc})", "embedding-store-corrupt") from exc
    if expected_fingerprint is not None and meta.get("fingerprint") != expected_fingerprint:
        raise StoreError(
            f"the embedding store was built with {meta.get('fingerprint')!r}, but the active model is "
            f"{expected_fingerprint!r}; vectors of two models are never mixed",
            "embedding-model-mismatch",
        )
    if sum(len(p.hashes) for p in pages) != rows:
        raise StoreError(f".llmwiki/{JSON_NAME} is corrupt (row count)", "embedding-store-corrupt")
    vectors: np.ndarray = np.zeros((0, dims), dtype="<f4")
    if dims:
        vectors = _map_vectors(bin_path, token, rows, dims)
    skipped = meta.get("skipped")
    return Store(meta["fingerprint"], meta.get("backend", ""), meta.get("model", ""), dims, pages, vectors,
                 meta.get("updatedAt", ""), dict(skipped) if isinstance(skipped, dict) else {})


def _map_vectors(bin_path: Path, token: bytes, rows: int, dims: int) -> np.ndarray:
    expected = HEADER.size + rows * dims * 4
    try:
        size = bin_path.stat().st_size
        with open(bin_path, "rb") as handle:
            magic, bin_token, bin_rows, bin_dims = HEADER.unpack(handle.read(HEADER.size))
    except FileNotFoundError:
        raise StoreError(f".llmwiki/{BIN_NAME} is missing", "embedding-store-corrupt") from None
    except (OSError, struct.error) as exc:
        raise StoreError(f".llmwiki/{BIN_NAME} is unreadable ({exc})", "embedding-store-corrupt") from exc
    if magic != MAGIC or bin_token != token or (bin_rows, bin_dims) != (rows, dims):
        raise StoreError(f".llmwiki/{BIN_NAME} does not belong to .llmwiki/{JSON_NAME}", "embedding-store-corrupt")
    if size != expected:
        raise StoreError(f".llmwiki/{BIN_NAME} is truncated ({size} of {expected} bytes)", "embedding-store-corrupt")
    if rows == 0:
        return np.zeros((0, dims), dtype="<f4")
    return np.memmap(bin_path, dtype="<f4", mode="r", offset=HEADER.size, shape=(rows, dims))


def build(fingerprint: str, backend: str, model: str, dimensions: int, pages: Sequence[PageEntry],
          vectors: np.ndarray, updated_at: str, skipped: dict[str, str] | None = None) -> Store:
    return Store(fingerprint, backend, model, dimensions, list(pages), vectors, updated_at, dict(skipped or {}))
