"""`llmwiki index`: chunk every page, embed only chunks whose content is new, write the store
and the lexical index, regenerate ``wiki/index.md``."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..wiki import frontmatter
from ..wiki.generated import is_evidence
from ..wiki.model import Page, Wiki
from ..wiki.slug import parse_target
from ..wiki.pages import decode
from ..wiki.sources import SourceFile
from . import store as store_mod
from .chunking import content_hash, split_into_chunks
from .embedders import Embedder
from .lexical import LexicalIndex

LEXICAL_DIR = "bm25"
NO_EMBEDDINGS = "none"


@dataclass(frozen=True)
class IndexedPage:
    page_id: str
    path: str
    blob: str
    title: str
    summary: str
    texts: tuple[str, ...]  # what is embedded and indexed: title + chunk
    links: tuple[str, ...] = ()
    dangling: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexSummary:
    pages: int
    chunks: int
    embedded: int
    reused: int
    seconds: float
    backend: str
    notes: tuple[str, ...] = ()


def page_title(meta: frontmatter.Frontmatter, body: str, stem: str) -> str:
    title = meta.data.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return stem


def read_pages(wiki: Wiki, only: set[str] | None = None) -> tuple[list[IndexedPage], dict[str, str]]:
    """Live text of every page that may be evidence (of those in ``only`` when given),
    chunked; and the pages left out (path -> blob): the generated index, the journal,
    binary and oversize files. The store records both, so a later call can tell what
    changed since (see `refresh`)."""
    wanted = [p for p in wiki.pages if only is None or p.path in only]
    data = wiki.read([SourceFile(p.path, p.blob) for p in wanted])
    pages: list[IndexedPage] = []
    skipped: dict[str, str] = {}
    for page in wanted:
        raw = data.get(page.path)
        if not isinstance(raw, bytes) or len(raw) > 8 * 1024 * 1024:
            skipped[page.path] = page.blob or ""
            continue
        text, _ = decode(raw)
        if text is None or not is_evidence(page.path, wiki.root_dir, text):
            skipped[page.path] = page.blob or ""
            continue
        meta = frontmatter.parse(text)
        body = text[meta.body_offset :]
        title = page_title(meta, body, page.stem)
        summary = meta.data.get("summary")
        texts = tuple(f"{title}\n\n{c.text}" for c in split_into_chunks(body))
        links, dangling = _graph(wiki, page)
        pages.append(IndexedPage(page.id, page.path, page.blob or "", title,
                                 summary if isinstance(summary, str) else "", texts, links, dangling))
    return pages, skipped


def reread_pages(wiki: Wiki, store: store_mod.Store, changed: set[str]) -> tuple[list[IndexedPage], dict[str, str]]:
    """``read_pages`` for a wiki of which only the pages in ``changed`` (added or edited)
    differ from ``store``: the others keep their recorded title, summary and link graph
    and are only re-chunked (the lexical index needs their text), with no YAML parse and
    no link resolution. A page whose chunks no longer match the store is read in full."""
    recorded = {e.path: e for e in store.pages}
    reuse = [p for p in wiki.pages if p.path not in changed and p.path in recorded
             and recorded[p.path].blob == (p.blob or "")]
    data = wiki.read([SourceFile(p.path, p.blob) for p in reuse])
    kept: dict[str, IndexedPage] = {}
    for page in reuse:
        entry = recorded[page.path]
        raw = data.get(page.path)
        text = decode(raw)[0] if isinstance(raw, bytes) else None
        if text is None:
            continue
        body = text[frontmatter.split(text)[1]:]
        texts = tuple(f"{entry.title}\n\n{c.text}" for c in split_into_chunks(body))
        if tuple(content_hash(t) for t in texts) == tuple(entry.hashes):
            kept[page.path] = IndexedPage(entry.page_id, entry.path, entry.blob, entry.title, entry.summary, texts,
                                          tuple(entry.links), tuple(entry.dangling))
    skipped = {p.path: store.skipped[p.path] for p in wiki.pages
               if p.path not in changed and store.skipped.get(p.path, None) == (p.blob or "") and p.blob}
    rest = {p.path for p in wiki.pages if p.path not in kept and p.path not in skipped}
    fresh, fresh_skipped = read_pages(wiki, rest)
    by_path = {**kept, **{p.path: p for p in fresh}}
    pages = [by_path[p.path] for p in wiki.pages if p.path in by_path]
    return pages, {**skipped, **fresh_skipped}


def _graph(wiki: Wiki, page: Page) -> tuple[tuple[str, ...], tuple[str, ...]]:
    links: dict[str, None] = {}
    dangling: dict[str, None] = {}
    for occ in page.scan.links:
        target = parse_target(occ.target)
        if target.is_self_anchor or target.is_empty:
            continue
        found = wiki.resolve(target)
        if found.page is not None:
            if found.page.id != page.id:
                links[found.page.id] = None
        elif not found.resolved:
            dangling[target.key] = None
    return tuple(links), tuple(dangling)


def build(
    folder: Path,
    pages: list[IndexedPage],
    embedder: Embedder | None,
    *,
    full: bool = False,
    progress: Callable[[int, int], object] | None = None,
    skipped: dict[str, str] | None = None,
    previous_store: store_mod.Store | None = None,
) -> IndexSummary:
    """Write ``folder``/embeddings.{json,bin} and ``folder``/bm25 for ``pages``."""
    started = time.perf_counter()
    fingerprint = embedder.fingerprint if embedder else NO_EMBEDDINGS
    dims = embedder.dimension if embedder else 0
    previous: dict[str, np.ndarray] = {}
    if embedder is not None and not full:
        if previous_store is not None and previous_store.fingerprint == fingerprint:
            previous = previous_store.vectors_by_hash()
        else:
            try:
                previous = store_mod.load(folder, expected_fingerprint=fingerprint).vectors_by_hash()
            except store_mod.StoreError:
                previous = {}
    entries: list[store_mod.PageEntry] = []
    all_texts: list[str] = []
    hashes_in_order: list[str] = []
    row = 0
    for page in pages:
        hashes = tuple(content_hash(t) for t in page.texts)
        entries.append(store_mod.PageEntry(page.page_id, page.path, page.blob, page.title, page.summary, row,
                                           hashes, page.links, page.dangling))
        row += len(hashes)
        all_texts.extend(page.texts)
        hashes_in_order.extend(hashes)
    vectors = np.zeros((row, dims), dtype=np.float32)
    embedded = reused = 0
    if embedder is not None:
        missing: dict[str, str] = {}
        for text, chunk_hash in zip(all_texts, hashes_in_order):
            if chunk_hash not in previous:
                missing.setdefault(chunk_hash, text)
        fresh = embedder.embed(list(missing.values()), progress=progress) if missing else np.zeros((0, dims), np.float32)
        if fresh.shape[0]:
            dims = fresh.shape[1]  # HTTP models tell their dimension only by answering
        elif previous:
            dims = len(next(iter(previous.values())))
        vectors = np.zeros((row, dims), dtype=np.float32)
        lookup = {**previous, **dict(zip(missing.keys(), fresh))}
        for i, chunk_hash in enumerate(hashes_in_order):
            vectors[i] = lookup[chunk_hash]
        embedded = len(missing)
        reused = row - sum(1 for h in hashes_in_order if h in missing)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    backend = embedder.name if embedder else NO_EMBEDDINGS
    model = embedder.model if embedder else NO_EMBEDDINGS
    LexicalIndex.build(all_texts).save(folder / LEXICAL_DIR)
    store_mod.save(folder, store_mod.build(fingerprint, backend, model, dims, entries, vectors, now, skipped))
    return IndexSummary(len(pages), row, embedded, reused, time.perf_counter() - started, backend)


def memory_index(pages: list[IndexedPage], base: store_mod.Store | None = None,
                 previous: Mapping[str, np.ndarray] | None = None,
                 skipped: dict[str, str] | None = None) -> tuple[store_mod.Store, LexicalIndex]:
    """A store built in memory from live pages (nothing is written): lexical-only when there
    is no usable store on disk; with ``base``, in its model's shape, every chunk whose
    content ``previous`` has a vector for gets it and new chunks get zeros (they are found
    lexically: a read that may not embed them all, see `refresh`)."""
    entries: list[store_mod.PageEntry] = []
    texts: list[str] = []
    hashes_in_order: list[str] = []
    for page in pages:
        hashes = tuple(content_hash(t) for t in page.texts)
        entries.append(store_mod.PageEntry(page.page_id, page.path, page.blob, page.title, page.summary,
                                           len(texts), hashes, page.links, page.dangling))
        texts.extend(page.texts)
        hashes_in_order.extend(hashes)
    if base is None:
        empty = np.zeros((len(texts), 0), dtype=np.float32)
        return store_mod.build(NO_EMBEDDINGS, NO_EMBEDDINGS, NO_EMBEDDINGS, 0, entries, empty, ""), LexicalIndex.build(texts)
    vectors = np.zeros((len(texts), base.dimensions), dtype=np.float32)
    for row, chunk_hash in enumerate(hashes_in_order):
        vector = (previous or {}).get(chunk_hash)
        if vector is not None and base.dimensions:
            vectors[row] = vector
    store = store_mod.build(base.fingerprint, base.backend, base.model, base.dimensions, entries, vectors,
                            base.updated_at, skipped)
    return store, LexicalIndex.build(texts)
