"""A fresh clone's store written from the snapshot of ``refs/llmwiki/index`` (indexref.py):
the page table, the lexical index and the vectors of a published store, checked as their own
loaders check them and written in the forms the normal read maps -- without decoding and
encoding them again. Measured (docs/benchmarks.md, issue 29): the first `context` of a fresh
clone pays this once; the files it writes are the ones every later call memory-maps.

* the page table: ``store.json`` parsed and checked once (`store.checked_table`), then
  written as it was published with this copy's keys in front (its token, the vectors'
  digest, the time) and the page-table sidecar made from it;
* the lexical index: its files written as published into a scratch folder of the state
  folder, each already checked against its sha256 in ``index.json`` (which must be the
  sha256 its own ``meta.json`` records), its postings checked, then renamed into place;
* the vectors: each row of the page table taken from the ref's float16 rows, widened and
  normalised a block at a time straight into ``embeddings.bin`` (no float32 copy of the
  whole ref in memory), their digest computed as they are written.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .. import confine
from ..errors import IndexRefError, LexicalIndexError, StoreError
from ..gitstore.transaction import crash_point
from ..wiki import frontmatter
from ..wiki.pages import decode
from ..wiki.titles import page_title
from . import store as store_mod
from .indexref import Published, refuse
from .lexical import LEXICAL_DIR, LexicalIndex
from .pagetable import PageTable

SCRATCH = ".incoming-"  # scratch folders in the state folder: .incoming-<pid>-<hex>
_SCRATCH_RE = re.compile(r"^\.incoming-(\d+)-[0-9a-f]+$")
LOCAL_KEYS = (
    "token",
    "vectorsDigest",
    "updatedAt",
    "vectorStore",
    "overlay",
)  # one copy's, never published


def sweep_scratch(state: Path) -> None:
    """Remove scratch folders left by a restore that was killed (its pid is gone)."""
    from ..gitstore.lock import sweep_dead

    sweep_dead(state, _SCRATCH_RE)


def restore(
    state: Path,
    published: Published,
    files: dict[str, bytes | bytearray],
    live: Mapping[str, str] | None = None,
    read_blobs: Callable[[list[str]], Mapping[str, bytes]] | None = None,
) -> None:
    """Write the store and lexical index of ``published``'s snapshot (``files``, read and
    checked against their sha256 by `indexref.read_snapshot`) into ``state``. The caller
    holds the repository lock and found no usable store. A snapshot of a shared store's
    index (``published.vector_store``) is written as such a store: its vectors are the
    shared store's, its bin holds none. IndexRefError, and no store written, for anything
    that fails a check.

    ``live`` (path -> blob of the live pages) and ``read_blobs``: what the snapshot says of a
    page the work tree holds unchanged (its id, title, summary) is checked against that page
    (`disagreeing`); a page it misstates is written as changed, so that following the wiki
    reads it again: what a clone quotes comes from the live pages, never from the ref alone."""
    why = published.commit
    raw = files["store.json"]
    meta, table = _checked_table(published, raw)
    shared = bool(
        published.vector_store
    )  # the vectors are in the team's shared store: the bin holds none
    at = published.positions(table.row_hashes()) if not shared else np.zeros(0, dtype=np.int64)
    if at is None:
        raise refuse(why, "its store.json names chunks whose vector it does not hold")

    def amend() -> tuple[bytes, dict[str, Any], PageTable] | None:
        """The page table with the pages it misstates marked changed (None: it states every
        live page as it is). Run while the bin is written: the rows do not change."""
        wrong = disagreeing(table, live, read_blobs) if live is not None and read_blobs else set()
        if not wrong:
            return None
        for entry in meta["pages"]:  # rare (forged, or derived otherwise): encoded again
            if entry["pageId"] in wrong:
                entry["blob"] = ""  # no live page has it: the page is read again
        return (
            json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode(),
            meta,
            store_mod.checked_table(meta),
        )

    sweep_scratch(state)
    store_mod.save_restored(
        state,
        raw,
        meta,
        table,
        len(at),
        lambda write: published.write_rows(at, write),
        {"vectorStore": published.vector_store, "overlay": []} if shared else {},
        alongside=lambda: _install_lexical(state, published, files, table.rows),
        amend=amend,
    )


def _checked_table(
    published: Published, raw: bytes | bytearray
) -> tuple[dict[str, Any], PageTable]:
    """The snapshot's ``store.json`` parsed and checked once: of the vectors' model, holding
    none of one copy's keys, a page table the store's own check accepts."""
    why = published.commit
    try:
        meta = confine.load_json(raw, name="store.json")
    except (ValueError, UnicodeDecodeError) as exc:
        raise refuse(why, f"its store.json is not JSON ({str(exc)[:120]})") from exc
    if (
        not isinstance(meta, dict)
        or meta.get("fingerprint") != published.fingerprint
        or meta.get("dimensions") != published.dimensions
    ):
        raise refuse(why, "its store.json is of another model than its vectors")
    local = sorted(set(LOCAL_KEYS) & set(meta))
    if local or not raw.startswith(b"{"):
        raise refuse(
            why,
            f"its store.json holds what only a local store holds ({', '.join(local) or 'not an object'})",
        )
    try:
        return meta, store_mod.checked_table(meta)
    except StoreError as exc:
        raise refuse(why, f"its store.json: {exc.message}") from exc


def disagreeing(
    table: PageTable,
    live: Mapping[str, str],
    read_blobs: Callable[[list[str]], Mapping[str, bytes]],
) -> set[str]:
    """The ids of the pages whose entry in ``table`` misstates the live page it names: a
    page at that path with that blob whose id, title or summary are not what the indexer
    derives from it (`indexer.read_pages`). Pages changed since, or gone, are not checked:
    following the wiki reads them anyway. One ``cat-file --batch`` for the pages checked."""
    same = [e for e in table if e.blob and live.get(e.path) == e.blob]
    data = read_blobs(sorted({e.blob for e in same}))
    # An id is its path from the wiki folder without ".md": one folder for every page.
    folders = Counter(
        e.path[: -len(e.page_id) - 3] for e in table if e.path.endswith(f"{e.page_id}.md")
    )
    folder = folders.most_common(1)[0][0] if folders else ""
    wrong: set[str] = set()
    for entry in same:
        raw = data.get(entry.blob)
        text = decode(raw)[0] if raw is not None else None
        if text is None or entry.path != f"{folder}{entry.page_id}.md":
            wrong.add(entry.page_id)
            continue
        meta = frontmatter.parse(text)
        body = text[meta.body_offset :]
        summary = meta.data.get("summary")
        title = page_title(meta.data, body, entry.page_id.rsplit("/", 1)[-1])
        if (entry.title, entry.summary) != (title, summary if isinstance(summary, str) else ""):
            wrong.add(entry.page_id)
    return wrong


def _install_lexical(
    state: Path, published: Published, files: dict[str, bytes | bytearray], docs: int
) -> None:
    """The snapshot's lexical files, written to a scratch folder, checked, renamed to
    ``state/bm25`` (`LexicalIndex.install`)."""
    scratch = state / f"{SCRATCH}{os.getpid()}-{secrets.token_hex(4)}"
    scratch.mkdir(parents=True)
    try:
        for name, data in files.items():
            if name.startswith("lexical."):
                with open(scratch / name.removeprefix("lexical."), "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
        crash_point(
            "snapshot"
        )  # the crash tests kill a reader here: its scratch folder is swept next time
        sums = {
            name.removeprefix("lexical."): sha
            for name, (_oid, sha) in published.snapshot.items()
            if name.startswith("lexical.")
        }
        try:
            LexicalIndex.install(scratch, state / LEXICAL_DIR, sums, docs)
        except LexicalIndexError as exc:
            raise refuse(published.commit, f"its lexical index: {exc}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


__all__ = ["IndexRefError", "SCRATCH", "restore", "sweep_scratch"]
