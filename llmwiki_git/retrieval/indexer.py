"""`llmwiki index`: chunk every page, embed only chunks whose content is new, write the store
and the lexical index, regenerate ``wiki/index.md``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..wiki import frontmatter
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


def read_pages(wiki: Wiki, skip: set[str]) -> list[IndexedPage]:
    """Live text of every page (the generated index page excluded), chunked."""
    wanted = [p for p in wiki.pages if p.path not in skip]
    data = wiki.read([SourceFile(p.path, p.blob) for p in wanted])
    pages: list[IndexedPage] = []
    for page in wanted:
        raw = data.get(page.path)
        if not isinstance(raw, bytes) or len(raw) > 8 * 1024 * 1024:
            continue
        text, _ = decode(raw)
        if text is None:
            continue
        meta = frontmatter.parse(text)
        body = text[meta.body_offset :]
        title = page_title(meta, body, page.stem)
        summary = meta.data.get("summary")
        texts = tuple(f"{title}\n\n{c.text}" for c in split_into_chunks(body))
        links, dangling = _graph(wiki, page)
        pages.append(IndexedPage(page.id, page.path, page.blob or "", title,
                                 summary if isinstance(summary, str) else "", texts, links, dangling))
    return pages


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
) -> IndexSummary:
    """Write ``folder``/embeddings.{json,bin} and ``folder``/bm25 for ``pages``."""
    started = time.perf_counter()
    fingerprint = embedder.fingerprint if embedder else NO_EMBEDDINGS
    dims = embedder.dimension if embedder else 0
    previous: dict[str, np.ndarray] = {}
    notes: list[str] = []
    if embedder is not None and not full:
        try:
            old = store_mod.load(folder, expected_fingerprint=fingerprint)
        except store_mod.StoreError as exc:
            if exc.code == "embedding-store-corrupt":
                notes.append(f"{exc.message}; rebuilt it")
        else:
            bad = store_mod.verify_vectors(old)  # never reuse vectors that cannot be trusted
            if bad is not None:
                notes.append(f"{bad}; every chunk was embedded again")
            else:
                previous = old.vectors_by_hash()
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
    store_mod.save(folder, store_mod.build(fingerprint, backend, model, dims, entries, vectors, now))
    return IndexSummary(len(pages), row, embedded, reused, time.perf_counter() - started, backend, tuple(notes))


def memory_index(pages: list[IndexedPage]) -> tuple[store_mod.Store, LexicalIndex]:
    """A lexical-only store built in memory from live pages: the fallback when there is no
    usable store on disk (nothing is written)."""
    entries: list[store_mod.PageEntry] = []
    texts: list[str] = []
    for page in pages:
        hashes = tuple(content_hash(t) for t in page.texts)
        entries.append(store_mod.PageEntry(page.page_id, page.path, page.blob, page.title, page.summary,
                                           len(texts), hashes, page.links, page.dangling))
        texts.extend(page.texts)
    empty = np.zeros((len(texts), 0), dtype=np.float32)
    return store_mod.build(NO_EMBEDDINGS, NO_EMBEDDINGS, NO_EMBEDDINGS, 0, entries, empty, ""), LexicalIndex.build(texts)
