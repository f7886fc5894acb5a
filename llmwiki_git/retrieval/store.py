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

import hashlib
import json
import os
import secrets
import stat
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple
from pathlib import Path
from typing import Any

import numpy as np

from .. import confine
from ..errors import LlmwikiError, PathRefused, StoreError

VERSION = 1
MAGIC = b"LLMWEMB1"
HEADER = struct.Struct("<8s16sII")
JSON_NAME = "embeddings.json"
BIN_NAME = "embeddings.bin"
MAX_JSON_BYTES = 1 << 30
MAX_DIMENSIONS = 65536


class PageEntry(NamedTuple):
    """One page of the store. A NamedTuple, and the JSON lists are kept as they are parsed:
    frozen dataclasses with tuple copies made loading 10,000 entries slower on the `context`
    path (benchmarks/retrieval.py measures that path)."""

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
    digest: str = ""  # sha256 of the vectors when saved ("" for stores written before it was kept)
    names: str = ""  # digest of what link resolution depends on (indexer.names_digest; "": unknown)
    _row_page: list[int] = field(default_factory=list, repr=False)
    _rows: int = field(default=-1, repr=False)
    _by_id: dict[str, PageEntry] | None = field(default=None, repr=False)
    _reverse: dict[str, list[str]] | None = field(default=None, repr=False)
    _link_questions: int = field(default=0, repr=False)

    @property
    def rows(self) -> int:
        if self._rows < 0:  # counted once: a warm server asks on every call
            self._rows = sum(len(p.hashes) for p in self.pages)
        return self._rows

    def row_owner(self) -> list[int]:
        """Index into ``pages`` for every row (built once)."""
        if not self._row_page:
            owner: list[int] = []
            for index, page in enumerate(self.pages):
                owner.extend([index] * len(page.hashes))
            self._row_page = owner
        return self._row_page

    def by_id(self) -> dict[str, PageEntry]:
        """Page id -> entry (built once per store)."""
        if self._by_id is None:
            self._by_id = {p.page_id: p for p in self.pages}
        return self._by_id

    def linked_from(self, targets: set[str]) -> dict[str, list[str]]:
        """Pages linking to each of ``targets``, in store order. The first question scans the
        pages for these targets only (the full reverse graph cost 0.27 s on 10,000 pages, too
        much for a one-question process); a store asked again (a long-lived server) builds
        the reverse graph once and answers from it."""
        if self._reverse is None and self._link_questions == 0:
            self._link_questions += 1
            found: dict[str, list[str]] = {t: [] for t in targets}
            for page in self.pages:
                if not page.links or targets.isdisjoint(page.links):
                    continue
                for target in page.links:
                    if target in found:
                        found[target].append(page.page_id)
            return found
        if self._reverse is None:
            reverse: dict[str, list[str]] = {}
            for page in self.pages:
                for target in dict.fromkeys(page.links):
                    reverse.setdefault(target, []).append(page.page_id)
            self._reverse = reverse
        return {t: list(self._reverse.get(t, ())) for t in targets}

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
    _clear_non_file(path)
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


def _clear_non_file(path: Path) -> None:
    """A folder, FIFO or symlink where a store file belongs is moved aside (``<name>.bad-<hex>``)
    so the rebuilt file can take its place; nothing is deleted or followed."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode):
        return
    os.replace(path, path.with_name(f"{path.name}.bad-{secrets.token_hex(4)}"))


def vectors_digest(vectors: np.ndarray) -> str:
    """sha256 of the vectors as stored (float32 little-endian, row-major)."""
    return hashlib.sha256(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).hexdigest()


def verify_vectors(store: Store) -> str | None:
    """Why the vectors cannot be trusted (None: they can): the digest recorded at save time
    no longer matches (bytes overwritten), or a value is NaN or infinite. Reads every
    vector: `index` runs it before reusing any; queries rely on the cheaper score check."""
    if store.dimensions == 0 or store.rows == 0:
        return None
    if store.digest and vectors_digest(store.vectors) != store.digest:
        return f".llmwiki/{BIN_NAME} does not match the digest recorded when it was written (overwritten?)"
    if not bool(np.isfinite(store.vectors).all()):
        return f".llmwiki/{BIN_NAME} holds NaN or infinite values"
    return None


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
        "vectorsDigest": vectors_digest(vectors),
        "updatedAt": store.updated_at,
        "pages": [p.to_json() for p in store.pages],
        "skipped": store.skipped,
        "namesDigest": store.names,
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
    if not json_path.exists():
        raise StoreError("no embedding store yet (.llmwiki/embeddings.json)")
    try:
        meta = json.loads(confine.read_file(json_path, max_bytes=MAX_JSON_BYTES, name=f".llmwiki/{JSON_NAME}"))
    except PathRefused as exc:
        raise StoreError(f"{exc}", "embedding-store-corrupt") from exc
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
        problem = _shape_problem(pages, rows, dims)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(f".llmwiki/{JSON_NAME} is corrupt (missing {exc})", "embedding-store-corrupt") from exc
    if problem is not None:
        raise StoreError(f".llmwiki/{JSON_NAME} is corrupt ({problem})", "embedding-store-corrupt")
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
    digest = meta.get("vectorsDigest")
    names = meta.get("namesDigest")
    return Store(meta["fingerprint"], meta.get("backend", ""), meta.get("model", ""), dims, pages, vectors,
                 meta.get("updatedAt", ""), dict(skipped) if isinstance(skipped, dict) else {},
                 digest=digest if isinstance(digest, str) else "", names=names if isinstance(names, str) else "")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _strings(value: object) -> bool:
    """A list of strings: ``str.join`` checks every item's type at C speed (a fresh
    `context` validates some 200,000 of them on a 10,000-page store)."""
    if not isinstance(value, (list, tuple)):
        return False
    try:
        "".join(value)
    except TypeError:
        return False
    return True


def _shape_problem(pages: list[PageEntry], rows: int, dims: int) -> str | None:
    """What is wrong with the page table (None: nothing): every field of the right type,
    each page's rows ``firstRow .. firstRow + len(hashes)`` inside the store and disjoint."""
    if not (0 <= dims <= MAX_DIMENSIONS) or rows < 0:
        return f"{rows} rows of {dims} dimensions"
    spans = []
    for page in pages:
        if not _strings((page.page_id, page.path, page.blob, page.title, page.summary)):
            return f"a page entry of the wrong shape ({str(page.page_id)[:80]!r})"
        if not (_is_int(page.first_row) and _strings(page.hashes) and _strings(page.links) and _strings(page.dangling)):
            return f"page {page.page_id[:80]!r} has a firstRow, hashes or links of the wrong type"
        if page.first_row < 0 or page.first_row + len(page.hashes) > rows:
            return f"page {page.page_id[:80]!r} has firstRow {page.first_row}, outside the {rows} rows"
        if page.hashes:
            spans.append((page.first_row, page.first_row + len(page.hashes)))
    spans.sort()
    for (_, end), (start, _) in zip(spans, spans[1:]):
        if start < end:
            return "two pages claim the same rows"
    return None


def _map_vectors(bin_path: Path, token: bytes, rows: int, dims: int) -> np.ndarray:
    expected = HEADER.size + rows * dims * 4
    try:
        info = os.stat(bin_path)
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(f".llmwiki/{BIN_NAME} is not a regular file", "embedding-store-corrupt")
        size = info.st_size
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
          vectors: np.ndarray, updated_at: str, skipped: dict[str, str] | None = None, names: str = "") -> Store:
    return Store(fingerprint, backend, model, dimensions, list(pages), vectors, updated_at, dict(skipped or {}),
                 names=names)
