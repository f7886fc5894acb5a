"""An index that travels with git: the store's vectors as a commit on ``refs/llmwiki/index``.

``publish`` writes every vector of the local store (keyed by chunk hash) with the model
fingerprint, the width and a digest, as one commit built with plumbing (no work tree, no
index file, no branch touched) whose parent is the previous index commit; the ref moves by
compare-and-swap, under the repository lock the caller holds. An unchanged store publishes
nothing. ``fetch`` brings a remote's ref into ``refs/llmwiki/remotes/<remote>/index`` and
moves ``refs/llmwiki/index`` to it when that is a fast-forward. ``read`` validates a ref
before any vector of it is used: the indexer (and a fresh clone's first `context`) then take
the vector of every chunk the ref holds instead of embedding it.

The commit's tree holds exactly three files (docs/index.md, "An index that travels with git"):

* ``index.json``: ``{"format": "llmwiki-index", "version": 1, "fingerprint", "backend",
  "model", "dimensions", "chunks", "dtype": "float16", "digest", "source"}``; ``digest`` is
  the sha256 of ``hashes`` followed by ``vectors``; ``source`` the commit HEAD was at.
* ``hashes``: the chunk hashes (16 lowercase hex digits and a line feed each), sorted, unique.
* ``vectors``: one float16 little-endian row of ``dimensions`` values per hash, in that order.
* optionally, the rest of the store as it was published (a snapshot: all of these or none):
  ``store.json`` (the page table, ``.llmwiki/embeddings.json``) and ``lexical.<file>`` for
  each file of ``.llmwiki/bm25/``; ``index.json``'s ``snapshot`` gives each one's sha256.
  A fresh clone with no index of its own `materialize`s it (its vectors from ``vectors``),
  checked by the store's and the lexical index's own loaders, and then follows the wiki
  from there: only pages that differ from the publisher's are read.

A digest stored beside the payload catches a damaged or mismatched ref, not a deliberate
forger, who can write a matching digest: vectors decide ranking only (what `context` quotes
is always read from the live pages), and every vector must be finite and of unit length.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import confine
from ..errors import GitError, IndexRefError, PathRefused
from ..gitstore import datarefs
from ..gitstore.git import Git
from .store import MAX_DIMENSIONS, Store
from .storetable import STORE_KINDS
from .vectors import SharedIndex

if TYPE_CHECKING:
    pass

REF = "refs/llmwiki/index"
FORMAT = "llmwiki-index"
VERSION = 1
DTYPE = "float16"
FILES = ("hashes", "index.json", "vectors")
LEXICAL_FILES = (
    "doc_ids.npy",
    "indptr.npy",
    "lengths.npy",
    "meta.json",
    "term_offsets.npy",
    "terms.npy",
    "tf.npy",
    "weights.npy",
)
SNAPSHOT = ("store.json", *(f"lexical.{name}" for name in LEXICAL_FILES))
MAX_SNAPSHOT_BYTES = 2 << 30  # the page table and the lexical index together
MAX_META_BYTES = 64 * 1024
MAX_VECTOR_BYTES = 2 << 30  # 2 GiB: some 2.8 million 384-d chunks
HASH_LINE = 17  # 16 hex digits and a line feed
NORM_SLACK = 0.01  # float16 keeps a unit vector's length within ~1e-3
_HASH = re.compile(r"[0-9a-f]{16}")


def tracking_ref(remote: str) -> str:
    """Where ``fetch`` puts ``remote``'s index (a ref only fetch writes)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", remote).strip(".-") or "remote"
    return f"refs/llmwiki/remotes/{safe}/index"


@dataclass(frozen=True)
class Payload:
    """What a publish writes: the three files and the digest inside ``index.json``."""

    files: dict[str, bytes]
    digest: str
    chunks: int
    snapshot: dict[str, str]  # snapshot file -> sha256

    @property
    def size(self) -> int:
        return sum(len(data) for data in self.files.values())


def payload_digest(hashes: bytes | bytearray, vectors: bytes | bytearray) -> str:
    digest = hashlib.sha256(hashes)
    digest.update(vectors)
    return digest.hexdigest()


def snapshot_files(state: Path, git: Git | None = None) -> dict[str, bytes] | None:
    """The rest of the local store in ``state``, to publish beside the vectors: the page table
    (``embeddings.json`` without what changes on every write: token, vectors digest, time)
    and the lexical index's files. None when they cannot be read whole (no snapshot then).
    With ``git``, the files that are not evidence (the generated ``index.md`` the index run
    just rewrote in the work tree, say) are recorded as HEAD holds them, or not at all:
    a clone of HEAD then finds its pages to be the snapshot's, and has nothing to follow."""
    from . import store as store_mod
    from .lexical import LEXICAL_DIR

    files: dict[str, bytes] = {}
    try:
        meta = confine.read_json(
            state / store_mod.JSON_NAME,
            max_bytes=store_mod.MAX_JSON_BYTES,
            name=store_mod.JSON_NAME,
        )
        for name in sorted(os.listdir(state / LEXICAL_DIR)):
            if name not in LEXICAL_FILES:
                return None
            files[f"lexical.{name}"] = confine.read_file(
                state / LEXICAL_DIR / name, max_bytes=MAX_SNAPSHOT_BYTES, name=name
            )
    except (OSError, PathRefused, ValueError):
        return None
    if "lexical.meta.json" not in files or not isinstance(meta, dict):
        return None
    if meta.get("vectorStore") is not None and meta.get("overlay"):
        return None  # vectors embedded here that the shared store lacks: no snapshot of it (`payload` says so)
    for key in (
        "token",
        "vectorsDigest",
        "updatedAt",
        "vectorStore",
        "overlay",
    ):  # one copy's, never published
        meta.pop(key, None)
    skipped = meta.get("skipped")
    if git is not None and isinstance(skipped, dict) and skipped:
        at_head = git.blob_ids("HEAD", sorted(skipped))
        meta["skipped"] = {path: at_head[path] for path in skipped if path in at_head}
    files["store.json"] = json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode()
    return files


def payload(
    store: Store,
    source: str | None,
    snapshot: dict[str, bytes] | None = None,
    *,
    shared: bool = False,
) -> Payload:
    """The published form of ``store``'s vectors: each distinct chunk once, sorted by hash,
    as float16; with ``snapshot`` (`snapshot_files`) beside them. ``shared``: the vectors
    are in the team's shared store (storetable.py): the snapshot alone, no vector, and
    ``vectorStore`` in index.json. Refused for a lexical-only store or vectors that cannot
    be trusted (or, shared, vectors the shared store lacks)."""
    dims = store.dimensions
    if not dims:
        raise IndexRefError(
            "the local index is lexical-only (built with --fast): there are no vectors to publish",
            hint="run `llmwiki index --full` to embed the wiki, then publish",
        )
    if shared:
        return _snapshot_payload(store, source, snapshot)
    problem = store.vectors.problem()
    if problem is not None:
        raise IndexRefError(
            f"the local vectors cannot be trusted ({problem}); nothing was published",
            hint="run `llmwiki index --full` to rebuild them, then publish",
        )
    hashes, hash_bytes, vector_bytes = _published_rows(store, dims)
    digest = payload_digest(hash_bytes, vector_bytes)
    sums = {
        name: hashlib.sha256(data).hexdigest() for name, data in sorted((snapshot or {}).items())
    }
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "fingerprint": store.fingerprint,
        "backend": store.backend,
        "model": store.model,
        "dimensions": dims,
        "chunks": len(hashes),
        "dtype": DTYPE,
        "digest": digest,
        "source": source or "",
        "snapshot": sums,
    }
    return Payload(
        {
            "index.json": (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode(),
            "hashes": hash_bytes,
            "vectors": vector_bytes,
            **(snapshot or {}),
        },
        digest,
        len(hashes),
        sums,
    )


def _published_rows(store: Store, dims: int) -> tuple[list[str], bytes, bytes]:
    """Each distinct chunk of ``store`` with a unit vector, sorted by hash: the hashes, the
    ``hashes`` file and the float16 ``vectors`` file."""
    wanted = sorted(set(store.pages.row_hashes()))
    found = store.vectors.get(wanted)
    hashes = [h for h in wanted if h in found and _HASH.fullmatch(h)]
    matrix = (
        np.stack([found[h] for h in hashes]).astype(np.float32)
        if hashes
        else np.zeros((0, dims), dtype=np.float32)
    )
    norms = np.linalg.norm(matrix, axis=1) if len(hashes) else np.zeros(0)
    keep = np.flatnonzero(np.abs(norms - 1.0) <= NORM_SLACK)  # a zero row is no vector
    hashes = [hashes[i] for i in keep.tolist()]
    hash_bytes = "".join(f"{h}\n" for h in hashes).encode("ascii")
    return hashes, hash_bytes, np.ascontiguousarray(matrix[keep], dtype="<f2").tobytes()


def _snapshot_payload(
    store: Store, source: str | None, snapshot: dict[str, bytes] | None
) -> Payload:
    """`payload` of an index whose vectors are in the shared store: its snapshot, no vector."""
    if not isinstance(store.vectors, SharedIndex):
        raise IndexRefError(
            "the local index's vectors are not in the shared store (it was built without "
            "LLMWIKI_VECTOR_STORE); nothing was published",
            hint="run `llmwiki index` with the setting, then publish",
        )
    kind, overlay = store.vectors.kind, len(store.vectors.overlay)
    if overlay:
        raise IndexRefError(
            f"{overlay} chunk vector(s) of this index were embedded here and are not in the shared "
            "store (this role may not write to it), so clones could not rank them; nothing was published",
            hint="publish from the CI job whose role writes to the shared store (docs/team.md)",
        )
    if snapshot is None:
        raise IndexRefError(
            "the local index could not be read whole (.llmwiki/embeddings.json and bm25/); "
            "nothing was published",
            hint="run `llmwiki index`, then publish",
        )
    digest = payload_digest(b"", b"")
    sums = {name: hashlib.sha256(data).hexdigest() for name, data in sorted(snapshot.items())}
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "fingerprint": store.fingerprint,
        "backend": store.backend,
        "model": store.model,
        "dimensions": store.dimensions,
        "chunks": 0,
        "dtype": DTYPE,
        "digest": digest,
        "source": source or "",
        "snapshot": sums,
        "vectorStore": kind,
    }
    return Payload(
        {
            "index.json": (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode(),
            "hashes": b"",
            "vectors": b"",
            **snapshot,
        },
        digest,
        0,
        sums,
    )


BLOCK = 4096  # rows widened at a time: a block stays in the cache, no float32 copy of the whole ref


@dataclass(frozen=True)
class Published:
    """A validated ``refs/llmwiki/index`` commit: its vectors by chunk hash, kept as the
    float16 rows it publishes (widened to float32 only for the rows asked for)."""

    commit: str
    fingerprint: str
    backend: str
    model: str
    dimensions: int
    digest: str
    hashes: np.ndarray  # dtype S16, sorted
    half: np.ndarray  # chunks x dimensions, float16, as published
    norms: (
        np.ndarray
    )  # each row's length (float32, checked within NORM_SLACK of 1): rows are divided by it
    snapshot: dict[
        str, tuple[str, str]
    ]  # snapshot file -> (blob id, sha256); empty: none published
    vector_store: str = (
        ""  # a store kind (storetable.STORE_KINDS): a snapshot whose vectors are in a shared store
    )

    def __len__(self) -> int:
        return int(self.hashes.shape[0])

    @property
    def unit(self) -> np.ndarray:
        """Every row as a float32 unit vector (a whole copy: for measuring, not the read path)."""
        return self.rows(np.arange(len(self)))

    def rows(self, at: np.ndarray) -> np.ndarray:
        """The float32 unit vectors of rows ``at``."""
        wide: np.ndarray = np.asarray(self.half[at], dtype=np.float32) / self.norms[at, None]
        return wide

    def get(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The float32 unit vectors of those of ``hashes`` the ref holds."""
        wanted = [h for h in dict.fromkeys(hashes) if len(h) == 16 and h.isascii()]
        if not wanted or not len(self):
            return {}
        keys = np.array([h.encode("ascii") for h in wanted], dtype="S16")
        at = np.searchsorted(self.hashes, keys)
        at_clipped = np.minimum(at, len(self) - 1)
        hit = self.hashes[at_clipped] == keys
        rows = self.rows(at_clipped[hit])
        chosen = [h for h, ok in zip(wanted, hit.tolist()) if ok]
        return dict(zip(chosen, rows))

    def positions(self, hashes: Sequence[str]) -> np.ndarray | None:
        """The row of each of ``hashes``, in that order (None: the ref lacks one)."""
        if not len(self):
            return None if len(hashes) else np.zeros(0, dtype=np.int64)
        try:
            keys = np.array(hashes, dtype="S16")
        except UnicodeEncodeError:
            return None
        at = np.minimum(np.searchsorted(self.hashes, keys), len(self) - 1)
        if len(hashes) and not bool((self.hashes[at] == keys).all()):
            return None
        return at

    def write_rows(self, at: np.ndarray, write: Callable[[memoryview], object]) -> str:
        """Write rows ``at`` as float32 unit vectors (little-endian, row-major) a block at a
        time through ``write``, the same two buffers reused for every block (no fresh memory
        per block); the sha256 of what was written (`filevectors.vectors_digest`)."""
        digest = hashlib.sha256()
        half = np.empty((BLOCK, self.dimensions), dtype="<f2")
        wide = np.empty((BLOCK, self.dimensions), dtype="<f4")
        for start in range(0, len(at), BLOCK):
            rows = at[start : start + BLOCK]
            n = len(rows)
            np.take(self.half, rows, axis=0, out=half[:n])
            np.copyto(wide[:n], half[:n])
            np.divide(wide[:n], self.norms[rows, None], out=wide[:n])
            block = wide[:n].data.cast("B")
            digest.update(block)
            write(block)
        return digest.hexdigest()


def refuse(commit: str, why: str) -> IndexRefError:
    return IndexRefError(
        f"{REF} ({commit[:12]}) is refused: {why}; nothing was taken from it",
        hint="publish it again from a trusted clone (`llmwiki index --publish`), or delete it "
        f"(`git update-ref -d {REF}`)",
    )


def read(
    git: Git, ref: str = REF, *, fingerprint: str | None = None, dimensions: int | None = None
) -> Published | None:
    """The vectors ``ref`` holds, every check passed (None: no such ref). IndexRefError, before
    reading any vector, for anything else than a commit of the three files, sizes outside the
    bounds, another model (``fingerprint``, ``dimensions``); after reading, for a digest that
    does not match, hashes that are not sorted chunk hashes, or vectors that are not finite
    unit vectors."""
    oid = git.object_id(ref)
    if oid is None:
        return None
    kind = git.object_type(oid)
    if kind != "commit":
        raise refuse(oid, f"it points to a {kind or 'missing object'}, not a commit")
    entries = _tree(git, oid)
    extra = sorted(set(entries) - set(FILES))
    meta_entry = entries["index.json"]
    if not 0 < meta_entry.size <= MAX_META_BYTES:
        raise refuse(oid, f"index.json is {meta_entry.size} bytes (at most {MAX_META_BYTES})")
    meta = _meta(oid, git.read_blob(meta_entry.oid))
    if fingerprint is not None and meta.fingerprint != fingerprint:
        raise IndexRefError(
            f"{REF} was published with {meta.fingerprint[:200]!r}, but the active model is "
            f"{fingerprint!r}; vectors of two models are never mixed, nothing was taken from it",
            hint="use the model it was published with, or publish again with this one",
        )
    dims, chunks = meta.dimensions, meta.chunks
    if dimensions is not None and dimensions and dims != dimensions:
        raise refuse(oid, f"its vectors have {dims} dimensions, the active model's {dimensions}")
    want_vectors = chunks * dims * 2
    if want_vectors > MAX_VECTOR_BYTES:
        raise refuse(
            oid, f"{chunks} vectors of {dims} dimensions are more than {MAX_VECTOR_BYTES >> 20} MiB"
        )
    if entries["hashes"].size != chunks * HASH_LINE or entries["vectors"].size != want_vectors:
        raise refuse(
            oid,
            f"its files are not the size index.json says ({chunks} chunks of {dims} dimensions: "
            f"hashes {entries['hashes'].size} bytes, vectors {entries['vectors'].size} bytes)",
        )
    hashes, half, norms = _vectors(git, oid, entries, meta)
    if sorted(meta.snapshot) != extra or (
        extra and not {"store.json", "lexical.meta.json"} <= set(extra)
    ):
        raise refuse(oid, "its store snapshot files are not the ones index.json lists")
    if sum(entries[name].size for name in extra) > MAX_SNAPSHOT_BYTES:
        raise refuse(oid, f"its store snapshot is more than {MAX_SNAPSHOT_BYTES >> 20} MiB")
    snapshot = {name: (entries[name].oid, meta.snapshot[name]) for name in extra}
    return Published(
        oid, meta.fingerprint, meta.backend, meta.model, dims, meta.digest, hashes, half, norms,
        snapshot, meta.vector_store,
    )  # fmt: skip


def _tree(git: Git, oid: str) -> dict[str, datarefs.DataEntry]:
    """The entries of commit ``oid``'s tree by name, checked: the three files, and snapshot
    files only, all plain files."""
    try:
        tree, _parents = datarefs.read_commit_tree(git, oid)
        entries = {e.name: e for e in datarefs.tree_entries(git, tree)}
    except GitError as exc:
        raise refuse(oid, f"its commit cannot be read ({exc.message.strip()[:200]})") from exc
    extra = sorted(set(entries) - set(FILES))
    if (
        not set(FILES) <= set(entries)
        or not set(extra) <= set(SNAPSHOT)
        or any(e.mode != "100644" or e.kind != "blob" for e in entries.values())
    ):
        unexpected = (
            sorted(set(extra) - set(SNAPSHOT))
            or sorted(set(FILES) - set(entries))
            or sorted(entries)
        )
        raise refuse(
            oid,
            f"its tree must hold exactly {', '.join(FILES)} (and a store snapshot) as plain files "
            f"({', '.join(repr(n[:60]) for n in unexpected[:5])} differ)",
        )
    return entries


def _vectors(
    git: Git, oid: str, entries: dict[str, datarefs.DataEntry], meta: _Meta
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hash list, the float16 rows and their lengths, read whole and checked against
    the digest, the hash rules and unit length (sizes already checked by `read`)."""
    chunks, dims = meta.chunks, meta.dimensions
    blobs = git.read_large_blobs([entries["hashes"].oid, entries["vectors"].oid])
    hash_bytes, vector_bytes = (
        blobs.get(entries["hashes"].oid, b""),
        blobs.get(entries["vectors"].oid, b""),
    )
    if len(hash_bytes) != chunks * HASH_LINE or len(vector_bytes) != chunks * dims * 2:
        raise refuse(oid, "its files could not be read whole")
    if payload_digest(hash_bytes, vector_bytes) != meta.digest:
        raise refuse(
            oid, "its files do not match the digest in index.json (damaged, or written by hand)"
        )
    hashes = _hashes(oid, hash_bytes, chunks)
    half = np.frombuffer(vector_bytes, dtype="<f2").reshape(chunks, dims)
    return hashes, half, _unit_norms(oid, half)


@dataclass(frozen=True)
class _Meta:
    fingerprint: str
    backend: str
    model: str
    dimensions: int
    chunks: int
    digest: str
    snapshot: dict[str, str]
    vector_store: str


def _meta(oid: str, raw: bytes) -> _Meta:
    try:
        meta = confine.load_json(raw, name="index.json")
    except (ValueError, UnicodeDecodeError) as exc:
        raise refuse(oid, f"index.json is not JSON ({str(exc)[:120]})") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise refuse(oid, "index.json is not an llmwiki index")
    if meta.get("version") != VERSION:
        raise refuse(
            oid,
            f"index.json has format version {meta.get('version')!r}; this llmwiki reads {VERSION}",
        )

    def count(name: str, low: int, high: int) -> None:
        value = meta.get(name)
        if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
            raise refuse(
                oid,
                f"index.json's {name} is {str(value)[:40]!r}, not a whole number from {low} to {high}",
            )

    count("dimensions", 1, MAX_DIMENSIONS)
    count("chunks", 0, MAX_VECTOR_BYTES // 2)
    if not isinstance(meta.get("fingerprint"), str) or not meta["fingerprint"]:
        raise refuse(oid, "index.json names no model fingerprint")
    if meta.get("dtype") != DTYPE:
        raise refuse(oid, f"index.json's dtype is {str(meta.get('dtype'))[:40]!r}, not {DTYPE!r}")
    if not (isinstance(meta.get("digest"), str) and re.fullmatch(r"[0-9a-f]{64}", meta["digest"])):
        raise refuse(oid, "index.json's digest is not a sha256")
    snapshot = meta.get("snapshot") or {}
    if not (
        isinstance(snapshot, dict)
        and all(
            name in SNAPSHOT and isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha)
            for name, sha in snapshot.items()
        )
    ):
        raise refuse(oid, "index.json's snapshot is not a list of store files and their sha256")
    shared = meta.get("vectorStore") or ""
    if shared and (
        not (isinstance(shared, str) and shared in STORE_KINDS) or meta["chunks"] or not snapshot
    ):
        raise refuse(
            oid,
            f"index.json's vectorStore is {str(shared)[:40]!r}: only "
            f"{', '.join(repr(k) for k in sorted(STORE_KINDS))}, for a snapshot without vectors, is known",
        )
    return _Meta(
        meta["fingerprint"],
        str(meta.get("backend") or "")[:200],
        str(meta.get("model") or "")[:200],
        meta["dimensions"],
        meta["chunks"],
        meta["digest"],
        snapshot,
        shared,
    )


def _hashes(oid: str, data: bytes | bytearray, chunks: int) -> np.ndarray:
    """The hash list as an S16 array, checked: 16 lowercase hex digits a line, strictly
    increasing (so sorted and unique)."""
    if not chunks:
        return np.zeros(0, dtype="S16")
    grid = np.frombuffer(data, dtype=np.uint8).reshape(chunks, HASH_LINE)
    digits = grid[:, :16]
    hexdigit = ((digits >= ord("0")) & (digits <= ord("9"))) | (
        (digits >= ord("a")) & (digits <= ord("f"))
    )
    if not bool((grid[:, 16] == ord("\n")).all()) or not bool(hexdigit.all()):
        bad = int(np.flatnonzero(~hexdigit.all(axis=1) | (grid[:, 16] != ord("\n")))[0])
        raise refuse(oid, f"line {bad + 1} of hashes is not a chunk hash")
    hashes = np.ascontiguousarray(digits).view("S16").reshape(chunks)
    if chunks > 1 and not bool((hashes[1:] > hashes[:-1]).all()):
        raise refuse(oid, "hashes are not sorted and unique")
    return hashes


def _unit_norms(oid: str, half: np.ndarray) -> np.ndarray:
    """The length of every float16 row, after checking that each is finite and of unit
    length (a block at a time: no float32 copy of the whole ref)."""
    norms = np.zeros(half.shape[0], dtype=np.float32)
    for start in range(0, half.shape[0], BLOCK):
        wide = half[start : start + BLOCK].astype(np.float32)
        if not bool(np.isfinite(wide).all()):
            raise refuse(oid, "its vectors hold NaN or infinite values")
        norms[start : start + BLOCK] = np.sqrt(np.einsum("ij,ij->i", wide, wide))
    bad = np.flatnonzero(np.abs(norms - 1.0) > NORM_SLACK)
    if len(bad):
        raise refuse(
            oid,
            f"{len(bad)} of its vectors are not unit vectors (row {int(bad[0]) + 1}: "
            f"length {float(norms[bad[0]]):.3f})",
        )
    return norms


@dataclass(frozen=True)
class Publication:
    commit: str
    changed: bool  # False: the store was already published as it is
    chunks: int
    bytes: int
    shared: bool = False  # the snapshot alone: the vectors are in the shared store


def publish(
    git: Git, store: Store, snapshot: dict[str, bytes] | None = None, *, shared: bool = False
) -> Publication:
    """Write ``store``'s vectors (and ``snapshot``, `snapshot_files`) as a commit on `REF`
    (parent: the commit it is at), moving it by compare-and-swap; nothing new when the ref
    already holds exactly these files for this model. ``shared``: the snapshot alone
    (`payload`). The caller holds the repository lock."""
    data = payload(store, git.rev_parse("HEAD"), snapshot, shared=shared)
    old = git.object_id(REF)
    if old is not None and git.object_type(old) == "commit":
        same = _published_digest(git, old)
        if same == (store.fingerprint, data.digest, data.snapshot):
            return Publication(old, False, data.chunks, data.size, shared)
    elif old is not None:
        raise refuse(old, "it does not point to a commit, so it cannot be the parent of a new one")
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    what = (
        "the page table and lexical index (vectors in the shared store)"
        if shared
        else f"{data.chunks} chunk vectors"
    )
    message = (
        f"llmwiki index: {what} of {store.model or store.fingerprint}\n\n"
        f"Published {now} from {git.rev_parse('HEAD') or 'an unborn branch'}.\n"
    )
    commit = datarefs.commit_files(git, data.files, old, message)
    git.update_ref(REF, commit, old or "", message=f"llmwiki index --publish: {data.chunks} chunks")
    return Publication(commit, True, data.chunks, data.size, shared)


def _published_digest(git: Git, commit: str) -> tuple[object, object, object] | None:
    """(fingerprint, digest, snapshot) that ``commit``'s index.json states (None: unreadable)."""
    size = git.object_size(f"{commit}:index.json")
    raw = (
        git.read_blob_at(commit, "index.json")
        if size is not None and size <= MAX_META_BYTES
        else None
    )
    if raw is None:
        return None
    try:
        meta = confine.load_json(raw, name="index.json")
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(meta, dict):
        return None
    return meta.get("fingerprint"), meta.get("digest"), meta.get("snapshot") or {}


@dataclass(frozen=True)
class Fetched:
    published: Published  # what was fetched, checked
    moved: bool  # refs/llmwiki/index now names it
    kept_local: str | None  # the local commit kept because it is not an ancestor of the fetched one


def fetch(git: Git, remote: str, *, fingerprint: str | None, dimensions: int | None) -> Fetched:
    """Fetch ``remote``'s `REF` into `tracking_ref`, validate it (`read`), then move the local
    `REF` to it by compare-and-swap when that is a fast-forward (or there is none yet); a
    local commit the fetched one does not contain (published here, not pushed) is kept."""
    tracking = tracking_ref(remote)
    commit = datarefs.fetch_ref(git, remote, REF, tracking)
    if commit is None:
        raise IndexRefError(
            f"{remote} has no {REF}: nothing was fetched",
            hint=f"publish it from a clone with an index: `llmwiki index --publish` then "
            f"`git push {remote} {REF}`",
        )
    published = read(git, tracking, fingerprint=fingerprint, dimensions=dimensions)
    assert published is not None  # just fetched
    old = git.object_id(REF)
    if old == commit:
        return Fetched(published, True, None)
    if old is not None and not (
        git.object_type(old) == "commit" and datarefs.is_ancestor(git, old, commit)
    ):
        return Fetched(published, False, old)
    git.update_ref(REF, commit, old or "", message=f"llmwiki index --fetch {remote}")
    return Fetched(published, True, None)


class SnapshotPrefetch:
    """The snapshot's blobs of the commit at `REF` read, and hashed, in a thread (git
    inflating them on the other core) while `read` checks the vectors: what a fresh clone's
    first read restores next. Unchecked until `read_snapshot` finds them to be the blobs
    ``read`` validated (any failure here only means they are read again there)."""

    def __init__(self, git: Git) -> None:
        import threading

        self._git = git
        self._blobs: dict[str, tuple[bytearray, str]] = {}
        self._thread = threading.Thread(target=self._run, name="llmwiki-snapshot", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            entries = [
                e
                for e in datarefs.tree_entries(self._git, f"{REF}^{{tree}}")
                if e.name in SNAPSHOT and e.kind == "blob"
            ]
            if sum(max(e.size, 0) for e in entries) > MAX_SNAPSHOT_BYTES:
                return
            blobs = self._git.read_large_blobs(e.oid for e in entries)
            self._blobs = {
                oid: (data, hashlib.sha256(data).hexdigest()) for oid, data in blobs.items()
            }
        except (GitError, OSError, ValueError):
            pass

    def blobs(self) -> dict[str, tuple[bytearray, str]]:
        """Blob id -> (bytes, sha256) of what was read."""
        self._thread.join()
        return self._blobs


def read_snapshot(
    git: Git, published: Published, prefetched: SnapshotPrefetch | None = None
) -> dict[str, bytes | bytearray]:
    """The snapshot files of ``published`` (sizes bounded by `read`), each checked against
    its sha256 in index.json; IndexRefError when one differs. ``prefetched``: blobs already
    read (and hashed) in a thread, used where they are the ones ``published`` names."""
    early = prefetched.blobs() if prefetched is not None else {}
    wanted = [oid for oid, _sha in published.snapshot.values() if oid not in early]
    blobs = {
        oid: (data, hashlib.sha256(data).hexdigest())
        for oid, data in git.read_large_blobs(wanted).items()
    }
    out = {}
    for name, (oid, sha) in published.snapshot.items():
        data, digest = early.get(oid) or blobs.get(oid) or (b"", "")
        if digest != sha:
            raise refuse(published.commit, f"its {name} does not match its sha256 in index.json")
        out[name] = data
    return out
