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

* ``embeddings.pages``: the page table of the json as columns (pagetable.py), so that a
  fresh process reads it in milliseconds instead of parsing and checking every entry of the
  json: ``b"LLMWPGS1"`` + the json file's status (device, inode, size, mtime and ctime in
  ns) + sha256 of the rest + the size (uint32 LE) of a small json head (the json's metadata
  without ``pages``, each section's name and size), then the sections. A derived copy: used
  only while the json in place has that status and the digest matches; otherwise the json
  is read (and the sidecar rewritten). Stores of older versions have none: read from the
  json, they get one.

The token ties the bin to the json: a json written with a bin from another run, a bin
truncated by a crash, or a bin of the wrong size is detected and reported, never used.
All files are replaced atomically (temp file + rename): the bin, the json, the sidecar.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .. import confine
from ..errors import PathRefused, StoreError
from ..gitstore.transaction import crash_point
from .filevectors import FileVectors, vectors_digest
from .pagetable import EntriesById, PageEntry, PageTable
from .vectors import SharedIndex, VectorIndex

VERSION = 1
MAGIC = b"LLMWEMB1"
HEADER = struct.Struct("<8s16sII")
JSON_NAME = "embeddings.json"
BIN_NAME = "embeddings.bin"
SIDE_NAME = "embeddings.pages"
SIDE_MAGIC = b"LLMWPGS1"
SIDE_STAMP = struct.Struct("<QQQqq")  # the json's device, inode, size, mtime and ctime (ns)
SIDE_HEADER = struct.Struct(
    f"<8s{SIDE_STAMP.size}s32sI"
)  # magic, the json's stamp, sha256 of the rest, head size
MAX_JSON_BYTES = 1 << 30
MAX_DIMENSIONS = 65536
_BIN_LABEL = f".llmwiki/{BIN_NAME}"


@dataclass
class Store:
    """The index a search ranks from: the page table (pages, their chunks in row order, links)
    and the chunks' vectors (any `VectorIndex`; the file store's by default), with the
    metadata of the model that made them."""

    fingerprint: str
    backend: str
    model: str
    pages: PageTable  # a list of entries given here is wrapped in a table
    vectors: VectorIndex
    updated_at: str = ""
    skipped: dict[str, str] = field(
        default_factory=dict
    )  # pages that are not evidence: path -> blob
    names: str = ""  # digest of what link resolution depends on (indexer.names_digest; "": unknown)
    _reverse: dict[str, list[str]] | None = field(default=None, repr=False)
    _link_questions: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.pages, PageTable):
            self.pages = PageTable(list(self.pages))

    @property
    def dimensions(self) -> int:
        return self.vectors.dimensions

    @property
    def rows(self) -> int:
        return self.pages.rows

    def row_owner(self) -> list[int]:
        """Index into ``pages`` for every row (built once)."""
        return self.pages.row_owner()

    def owner_array(self) -> np.ndarray:
        """:meth:`row_owner` as an int64 array (built once)."""
        return self.pages.owner_array()

    def by_id(self) -> Mapping[str, PageEntry]:
        """Page id -> entry (the id table is built once per store; entries on demand)."""
        return EntriesById(self.pages)

    def path_blobs(self) -> dict[str, str]:
        """Path -> blob id of every page the store holds."""
        return self.pages.path_blobs()

    def linked_from(self, targets: set[str]) -> dict[str, list[str]]:
        """Pages linking to each of ``targets``, in store order. The first question scans the
        links for these targets only (the full reverse graph cost 0.27 s on 10,000 pages, too
        much for a one-question process); a store asked again (a long-lived server) builds
        the reverse graph once and answers from it."""
        if self._reverse is None and self._link_questions == 0:
            self._link_questions += 1
            return self.pages.linking_to(targets)
        if self._reverse is None:
            reverse: dict[str, list[str]] = {}
            for page in self.pages:
                for target in dict.fromkeys(page.links):
                    reverse.setdefault(target, []).append(page.page_id)
            self._reverse = reverse
        return {t: list(self._reverse.get(t, ())) for t in targets}


def empty_vectors(fingerprint: str, dimensions: int) -> VectorIndex:
    """A new, empty vector index for a model (the file store's: written by `save`)."""
    return FileVectors(
        np.zeros((0, dimensions), dtype=np.float32), PageTable([]), fingerprint, label=_BIN_LABEL
    )


def _atomic_write(path: Path, write: Any) -> None:
    """Replace the state file ``path`` as a whole (confinement's one write: never through a
    symlink from the project folder down), after moving a non-file at its place aside."""
    _clear_non_file(path)
    confine.replace_with(path.parent.parent, f"{path.parent.name}/{path.name}", write)


def _clear_non_file(path: Path) -> None:
    """A folder, FIFO or symlink where a store file belongs is moved aside (``<name>.bad-<hex>``)
    so the rebuilt file can take its place; nothing is deleted or followed."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode):
        return
    import secrets

    os.replace(path, path.with_name(f"{path.name}.bad-{secrets.token_hex(4)}"))


def save(folder: Path, store: Store) -> None:
    """Write the store: the page table and metadata (json and sidecar) and, for the file
    store, the vectors in the table's row order (embeddings.bin)."""
    import secrets

    token = secrets.token_bytes(16)
    rows = store.rows
    laid_out = store.vectors.for_rows(store.pages)
    shared: dict[str, Any] = {}
    if isinstance(laid_out, FileVectors):
        vectors = np.ascontiguousarray(laid_out.matrix, dtype="<f4").reshape(
            rows, laid_out.dimensions
        )
    elif isinstance(laid_out, SharedIndex):  # the bin holds only the overlay, what it lacks
        overlay = laid_out.overlay
        vectors = np.zeros((len(overlay), laid_out.dimensions), dtype="<f4")
        for i, value in enumerate(overlay.values()):
            vectors[i] = value
        shared = {"vectorStore": laid_out.kind, "overlay": list(overlay)}
    else:
        raise StoreError(f"vectors of a {type(laid_out).__name__} cannot be saved")

    def write_bin(handle: Any) -> None:
        handle.write(HEADER.pack(MAGIC, token, vectors.shape[0], laid_out.dimensions))
        handle.write(
            np.ascontiguousarray(vectors).reshape(-1).view(np.uint8).data
        )  # written in place, not copied first

    meta = {
        "version": VERSION,
        "fingerprint": store.fingerprint,
        "backend": store.backend,
        "model": store.model,
        "dimensions": laid_out.dimensions,
        "rows": rows,
        "token": token.hex(),
        "vectorsDigest": vectors_digest(vectors),
        "updatedAt": store.updated_at,
        "pages": [p.to_json() for p in store.pages],
        "skipped": store.skipped,
        "namesDigest": store.names,
        **shared,
    }
    _atomic_write(folder / BIN_NAME, write_bin)
    crash_point(
        "store"
    )  # the crash tests kill a writer here: a new bin, the old json (refused: tokens differ)
    _write_meta(folder, meta, store.pages)


def _write_meta(folder: Path, meta: dict[str, Any], table: PageTable) -> None:
    """Write ``embeddings.json``, then its page-table sidecar naming the json file just
    written (a reader between the two renames finds a sidecar naming another file: unused)."""
    data = json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode()
    _remove(folder / SIDE_NAME)
    _atomic_write(folder / JSON_NAME, lambda h: h.write(data))
    _write_sidecar(folder, _json_stamp(os.stat(folder / JSON_NAME)), meta, table)


def _remove(path: Path) -> None:
    """Hygiene only: a sidecar left behind names another json file and is never used."""
    try:
        os.unlink(path)
    except OSError:  # absent, or a folder in the way (moved aside when the sidecar is written)
        pass


def add_skipped(folder: Path, entries: dict[str, str], *, vector_store: str | None = None) -> None:
    """Record pages that are not evidence (a generated file written after the store was
    built) in ``embeddings.json``, leaving the vectors alone."""
    store = load(folder, vector_store=vector_store)
    meta = confine.read_json(
        folder / JSON_NAME, max_bytes=MAX_JSON_BYTES, name=f".llmwiki/{JSON_NAME}"
    )
    meta["skipped"] = {**(meta.get("skipped") or {}), **entries}
    _write_meta(folder, meta, store.pages)


# -- the page-table sidecar -----------------------------------------------------------------


def _json_stamp(info: os.stat_result) -> bytes:
    """What ties the sidecar to one version of ``embeddings.json``: its device, inode, size,
    and modification and change times in nanoseconds. Any write of the json (a new store,
    a hand edit, a copy) changes the inode or the change time, which no tool can set back."""
    return SIDE_STAMP.pack(
        info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns
    )


def _write_sidecar(
    folder: Path,
    stamp: bytes,
    meta: dict[str, Any],
    table: PageTable,
    encoded: dict[str, bytes] | None = None,
) -> None:
    """Write ``embeddings.pages`` for the json of ``stamp`` (none when a page id, path or
    blob holds a NUL: that store is read from the json); ``encoded``: ``table.encode()``
    made already."""
    sections = encoded if encoded is not None else table.encode()
    if sections is None:
        return
    head = json.dumps(
        {
            "meta": {k: v for k, v in meta.items() if k != "pages"},
            "sections": [[name, len(data)] for name, data in sections.items()],
        },
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()
    body = head + b"".join(sections.values())
    side = SIDE_HEADER.pack(SIDE_MAGIC, stamp, hashlib.sha256(body).digest(), len(head)) + body
    _atomic_write(folder / SIDE_NAME, lambda h: h.write(side))


def _read_whole(path: Path, limit: int) -> tuple[bytes, os.stat_result] | None:
    """The bytes of the regular file ``path`` (no symlink, at most ``limit`` bytes) and its
    status when opened; None when it cannot be read so."""
    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        parts = [os.read(fd, info.st_size)]  # one call for a regular file, as a rule
        done = len(parts[0])
        while done < info.st_size:
            more = os.read(fd, info.st_size - done)
            if not more:
                return None  # shrank while read
            parts.append(more)
            done += len(more)
        return (parts[0] if len(parts) == 1 else b"".join(parts)), info
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_sidecar(folder: Path) -> tuple[dict[str, Any], PageTable] | None:
    """The metadata and page table of ``embeddings.pages`` when it was written for the
    ``embeddings.json`` now in place and is intact (None otherwise: the json is read)."""
    whole = _read_whole(folder / SIDE_NAME, 2 * MAX_JSON_BYTES)
    if whole is None or len(whole[0]) < SIDE_HEADER.size:
        return None
    data = whole[0]
    magic, stamp, body_digest, head_size = SIDE_HEADER.unpack_from(data)
    try:
        json_now = _json_stamp(os.stat(folder / JSON_NAME, follow_symlinks=False))
    except OSError:
        return None
    body = memoryview(data)[SIDE_HEADER.size :]
    if magic != SIDE_MAGIC or stamp != json_now or body_digest != hashlib.sha256(body).digest():
        return None
    try:
        head = confine.load_json(bytes(body[:head_size]), name=f".llmwiki/{SIDE_NAME}")
        meta, offset, sections = head["meta"], head_size, {}
        for name, size in head["sections"]:
            sections[name] = body[offset : offset + size]
            offset += size
        if offset != len(body) or not isinstance(meta, dict):
            return None
        return meta, PageTable.decode(sections)
    except (KeyError, TypeError, ValueError, StoreError):
        return None


def load(
    folder: Path,
    *,
    expected_fingerprint: str | None = None,
    vector_store: str | None = None,
    repair: bool = True,
) -> Store:
    """Read the store; raise StoreError (with a warning code) when it cannot be used.
    ``vector_store``: the shared store's URI (``LLMWIKI_VECTOR_STORE``), for a store whose
    vectors live there (its bin then holds only the overlay, see vectors.SharedIndex).
    The page table comes from the sidecar when it matches the json (a few milliseconds on
    10,000 pages), else from the json, validated entry by entry; the sidecar is then
    rewritten (best effort) so that the next read is fast again."""
    json_path, bin_path = folder / JSON_NAME, folder / BIN_NAME
    if json_path.is_symlink() or bin_path.is_symlink():
        raise StoreError(
            "the embedding store is a symlink; refusing to read it", "embedding-store-corrupt"
        )
    if not json_path.exists():
        raise StoreError("no embedding store yet (.llmwiki/embeddings.json)")
    meta, table, problem, json_info = _read_table(folder, json_path)
    dims, rows, token = _checked_meta(meta, table, problem, expected_fingerprint)
    skipped = meta.get("skipped")
    names = meta.get("namesDigest")
    store = Store(
        meta["fingerprint"],
        meta.get("backend", ""),
        meta.get("model", ""),
        table,
        _vectors_of(bin_path, meta, table, token, rows, dims, vector_store),
        meta.get("updatedAt", ""),
        dict(skipped) if isinstance(skipped, dict) else {},
        names=names if isinstance(names, str) else "",
    )
    if (
        json_info is not None and repair
    ):  # not for a store read once (a published one checked in scratch)
        _repair_sidecar(folder, json_info, meta, table)
    return store


def _read_table(
    folder: Path, json_path: Path
) -> tuple[Any, PageTable, str | None, os.stat_result | None]:
    """The store's metadata, page table and the table's first problem (None: sound): from
    the sidecar when it matches the json, else from the json (with the json's status, for
    rewriting the sidecar)."""
    side = _read_sidecar(folder)
    if side is not None:
        meta, table = side
        return meta, table, _table_problem(table), None
    try:
        json_info = os.stat(json_path)
        raw = confine.read_file(json_path, max_bytes=MAX_JSON_BYTES, name=f".llmwiki/{JSON_NAME}")
    except PathRefused as exc:
        raise StoreError(f"{exc}", "embedding-store-corrupt") from exc
    except OSError as exc:
        raise StoreError(
            f".llmwiki/{JSON_NAME} is unreadable ({exc})", "embedding-store-corrupt"
        ) from exc
    meta, table, problem = _parse_json(raw)
    return meta, table, problem, json_info


def _checked_meta(
    meta: Any, table: PageTable, problem: str | None, expected_fingerprint: str | None
) -> tuple[int, int, bytes]:
    """The store's dimensions, rows and token, once its version, sizes and model are
    checked: StoreError (with its warning code) when the store cannot be used."""
    if not isinstance(meta, dict) or meta.get("version") != VERSION:
        raise StoreError(
            f".llmwiki/{JSON_NAME} has an unknown format version", "embedding-index-outdated"
        )
    try:
        dims, rows, token = int(meta["dimensions"]), int(meta["rows"]), bytes.fromhex(meta["token"])
        if problem is None:
            problem = _size_problem(table, rows, dims)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise StoreError(
            f".llmwiki/{JSON_NAME} is corrupt (missing {exc})", "embedding-store-corrupt"
        ) from exc
    if problem is not None:
        raise StoreError(f".llmwiki/{JSON_NAME} is corrupt ({problem})", "embedding-store-corrupt")
    if expected_fingerprint is not None and meta.get("fingerprint") != expected_fingerprint:
        raise StoreError(
            f"the embedding store was built with {meta.get('fingerprint')!r}, but the active model is "
            f"{expected_fingerprint!r}; vectors of two models are never mixed",
            "embedding-model-mismatch",
        )
    return dims, rows, token


def _vectors_of(
    bin_path: Path,
    meta: dict[str, Any],
    table: PageTable,
    token: bytes,
    rows: int,
    dims: int,
    vector_store: str | None,
) -> VectorIndex:
    """The store's vectors: a shared store's (storetable.py), else the bin, memory-mapped."""
    if meta.get("vectorStore"):
        return _shared_vectors(bin_path, meta, token, dims, vector_store)
    matrix: np.ndarray = np.zeros((0, dims), dtype="<f4")
    if dims:
        matrix = _map_vectors(bin_path, token, rows, dims)
    digest = meta.get("vectorsDigest")
    return FileVectors(
        matrix,
        table,
        meta["fingerprint"],
        generation=token.hex(),
        digest=digest if isinstance(digest, str) else "",
        label=_BIN_LABEL,
    )


def _shared_vectors(
    bin_path: Path, meta: dict[str, Any], token: bytes, dims: int, vector_store: str | None
) -> VectorIndex:
    """The vectors of a store indexed into a shared store: its table, and the overlay kept in
    the bin (chunks embedded here that the table does not hold)."""
    overlay_hashes = meta.get("overlay")
    if not isinstance(overlay_hashes, list) or not all(isinstance(h, str) for h in overlay_hashes):
        raise StoreError(f".llmwiki/{JSON_NAME} is corrupt (overlay)", "embedding-store-corrupt")
    if not vector_store:
        raise StoreError(
            "the index's vectors are in a shared vector store and LLMWIKI_VECTOR_STORE is not set "
            "(docs/team.md)",
            "vector-store-unavailable",
        )
    matrix = (
        _map_vectors(bin_path, token, len(overlay_hashes), dims)
        if dims
        else np.zeros((0, 0), dtype="<f4")
    )
    from . import storetable

    recorded, configured = meta.get("vectorStore"), storetable.kind(vector_store)
    if recorded != configured:
        raise StoreError(
            f"the index's vectors are in a {str(recorded)[:20]!r} store and LLMWIKI_VECTOR_STORE "
            f"names a {configured!r} one (docs/team.md)",
            "vector-store-unavailable",
        )
    vectors = storetable.open_shared(vector_store, meta["fingerprint"], dims, create=False)
    vectors.overlay.update(
        {h: np.asarray(matrix[i], dtype=np.float32) for i, h in enumerate(overlay_hashes)}
    )
    return vectors


def _parse_json(raw: bytes) -> tuple[Any, PageTable, str | None]:
    """The metadata, page table and shape problem (None: none) of ``embeddings.json``."""
    try:
        meta = confine.load_json(raw, name=f".llmwiki/{JSON_NAME}")
    except ValueError as exc:
        raise StoreError(
            f".llmwiki/{JSON_NAME} is corrupt ({exc})", "embedding-store-corrupt"
        ) from exc
    return _table_of(meta)


def checked_table(meta: Any) -> PageTable:
    """The page table of the parsed ``embeddings.json`` ``meta`` (a published one, restored),
    checked as `load` checks a store's (shapes, rows, sizes); StoreError otherwise."""
    meta, table, problem = _table_of(meta)
    if not isinstance(meta, dict) or meta.get("version") != VERSION:
        raise StoreError(f"{JSON_NAME} has an unknown format version", "embedding-index-outdated")
    try:
        problem = problem or _size_problem(table, int(meta["rows"]), int(meta["dimensions"]))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise StoreError(
            f"{JSON_NAME} is corrupt (missing {exc})", "embedding-store-corrupt"
        ) from exc
    if problem is not None:
        raise StoreError(f"{JSON_NAME} is corrupt ({problem})", "embedding-store-corrupt")
    return table


def save_restored(
    folder: Path,
    raw: bytes | bytearray,
    meta: dict[str, Any],
    table: PageTable,
    rows: int,
    write_rows: Callable[[Callable[[memoryview], object]], str],
    local: dict[str, Any],
    alongside: Callable[[], object] | None = None,
    amend: Callable[[], tuple[bytes, dict[str, Any], PageTable] | None] | None = None,
) -> None:
    """Write a store restored from a published one (indexref.py): ``raw`` is its
    ``embeddings.json`` without what one copy holds alone (token, vectors digest, time),
    ``meta`` and ``table`` what `checked_table` read from it; ``write_rows`` writes the
    bin's ``rows`` vectors and returns their digest; ``local``: more keys of this copy (a
    shared store's). The json is written as published with those keys put in front, not
    encoded again; files in `save`'s order (the bin, the json, the sidecar). The bin is
    written in a thread (widening, hashing and writing leave the interpreter free) while
    ``alongside`` runs (the lexical index, written before the json as `build` does) and the
    sidecar is encoded; an error of either is raised before the json is written. ``amend``
    (run there too): another ``raw``, ``meta`` and ``table`` of the same rows (None: none)."""
    import secrets
    from concurrent.futures import ThreadPoolExecutor

    if not raw.startswith(b"{") or not meta:
        raise StoreError(f"{JSON_NAME} is not a JSON object", "embedding-store-corrupt")
    token = secrets.token_bytes(16)
    digest = ""

    def write_bin(handle: Any) -> None:
        nonlocal digest
        handle.write(HEADER.pack(MAGIC, token, rows, int(meta["dimensions"])))
        digest = write_rows(handle.write)

    with ThreadPoolExecutor(1, thread_name_prefix="llmwiki-restore-bin") as pool:
        written = pool.submit(_atomic_write, folder / BIN_NAME, write_bin)
        if alongside is not None:
            alongside()
        amended = amend() if amend is not None else None
        if amended is not None:
            raw, meta, table = amended
        sections = table.encode()
        written.result()  # its error, if any, raised here: before the json
    crash_point("store")
    added = {
        "token": token.hex(),
        "vectorsDigest": digest,
        "updatedAt": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **local,
    }
    data = (
        json.dumps(added, ensure_ascii=False, separators=(",", ":"))[:-1].encode() + b"," + raw[1:]
    )
    _remove(folder / SIDE_NAME)
    _atomic_write(folder / JSON_NAME, lambda h: h.write(data))
    _write_sidecar(
        folder, _json_stamp(os.stat(folder / JSON_NAME)), {**meta, **added}, table, sections
    )


def _table_of(meta: Any) -> tuple[Any, PageTable, str | None]:
    if not isinstance(meta, dict) or meta.get("version") != VERSION:
        return meta, PageTable([]), None
    try:
        pages = [
            PageEntry(
                p["pageId"],
                p["path"],
                p["blob"],
                p.get("title", ""),
                p.get("summary", ""),
                p["firstRow"],
                p["hashes"],
                p.get("links", ()),
                p.get("dangling", ()),
            )
            for p in meta["pages"]
        ]
        problem = _shape_problem(pages)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(
            f".llmwiki/{JSON_NAME} is corrupt (missing {exc})", "embedding-store-corrupt"
        ) from exc
    return meta, PageTable(pages), problem


def _repair_sidecar(
    folder: Path, json_info: os.stat_result, meta: dict[str, Any], table: PageTable
) -> None:
    """Write the sidecar of a json read without one (a store from an older version, or one
    whose sidecar was stale or damaged). Best effort and safe without the lock: the sidecar
    names the json file it was made from (as it was before it was read), so a json replaced
    meanwhile makes it unused, never wrong."""
    try:
        stamp = _json_stamp(json_info)
        if _json_stamp(os.stat(folder / JSON_NAME)) == stamp:  # still the file that was read
            _write_sidecar(folder, stamp, meta, table)
    except (OSError, ValueError):
        pass


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


def _shape_problem(pages: list[PageEntry]) -> str | None:
    """What is wrong with the types of a page table read from json (None: nothing)."""
    for page in pages:
        if not _strings((page.page_id, page.path, page.blob, page.title, page.summary)):
            return f"a page entry of the wrong shape ({str(page.page_id)[:80]!r})"
        if not (
            _is_int(page.first_row)
            and _strings(page.hashes)
            and _strings(page.links)
            and _strings(page.dangling)
        ):
            return f"page {page.page_id[:80]!r} has a firstRow, hashes or links of the wrong type"
    return None


def _table_problem(table: PageTable) -> str | None:
    """What is wrong with a page table read from the sidecar (None: nothing): its columns
    fit together (`PageTable.decode`); page ids are unique."""
    if len(table.positions()) != len(table):
        return "two pages share an id"
    return None


def _size_problem(table: PageTable, rows: int, dims: int) -> str | None:
    """Each page's rows ``firstRow .. firstRow + len(hashes)`` inside the store and disjoint,
    and the pages own exactly ``rows`` rows: checked on whole columns."""
    if not (0 <= dims <= MAX_DIMENSIONS) or rows < 0:
        return f"{rows} rows of {dims} dimensions"
    first, counts = table.first_rows(), table.hash_counts()
    outside = np.flatnonzero((first < 0) | (first + counts > rows))
    if len(outside):
        page = table[int(outside[0])]
        return f"page {page.page_id[:80]!r} has firstRow {page.first_row}, outside the {rows} rows"
    used = counts > 0
    starts, ends = first[used], (first + counts)[used]
    order = np.argsort(starts, kind="stable")
    if bool((starts[order][1:] < ends[order][:-1]).any()):
        return "two pages claim the same rows"
    if int(counts.sum()) != rows:
        return "row count"
    return None


def stored_dimensions(folder: Path) -> int:
    """The vector width the store in ``folder`` holds, from the 32-byte header of its vectors
    file alone (0: no store, a lexical-only one, or a file that is not ours). A hint for
    starting the model early, never a check: `load` validates everything."""
    try:  # non-blocking: a FIFO in its place is refused at once, never waited on
        magic, _token, rows, dims = HEADER.unpack(confine.read_head(folder / BIN_NAME, HEADER.size))
    except (PathRefused, struct.error):
        return 0
    return int(dims) if magic == MAGIC and rows else 0


def _map_vectors(bin_path: Path, token: bytes, rows: int, dims: int) -> np.ndarray:
    expected = HEADER.size + rows * dims * 4
    try:
        info = os.stat(bin_path)
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(
                f".llmwiki/{BIN_NAME} is not a regular file", "embedding-store-corrupt"
            )
        size = info.st_size
        magic, bin_token, bin_rows, bin_dims = HEADER.unpack(
            confine.read_head(bin_path, HEADER.size)
        )
    except FileNotFoundError:
        raise StoreError(f".llmwiki/{BIN_NAME} is missing", "embedding-store-corrupt") from None
    except PathRefused as exc:
        raise StoreError(f".llmwiki/{BIN_NAME}: {exc.reason}", "embedding-store-corrupt") from exc
    except (OSError, struct.error) as exc:
        raise StoreError(
            f".llmwiki/{BIN_NAME} is unreadable ({exc})", "embedding-store-corrupt"
        ) from exc
    if magic != MAGIC or bin_token != token or (bin_rows, bin_dims) != (rows, dims):
        raise StoreError(
            f".llmwiki/{BIN_NAME} does not belong to .llmwiki/{JSON_NAME}",
            "embedding-store-corrupt",
        )
    if size != expected:
        what = "truncated" if size < expected else "longer than its header says"
        raise StoreError(
            f".llmwiki/{BIN_NAME} is {what} ({size} bytes, {expected} expected)",
            "embedding-store-corrupt",
        )
    if rows == 0:
        return np.zeros((0, dims), dtype="<f4")
    return np.memmap(bin_path, dtype="<f4", mode="r", offset=HEADER.size, shape=(rows, dims))


def build(
    fingerprint: str,
    backend: str,
    model: str,
    dimensions: int,
    pages: Sequence[PageEntry],
    vectors: np.ndarray,
    updated_at: str,
    skipped: dict[str, str] | None = None,
    names: str = "",
) -> Store:
    """A file store in memory from entries and the matrix of their rows' vectors."""
    table = PageTable(list(pages))
    matrix = np.asarray(vectors, dtype=np.float32).reshape(table.rows, dimensions)
    return Store(
        fingerprint,
        backend,
        model,
        table,
        FileVectors(matrix, table, fingerprint, label=_BIN_LABEL),
        updated_at,
        dict(skipped or {}),
        names=names,
    )
