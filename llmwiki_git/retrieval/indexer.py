"""`llmwiki index`: chunk every page, embed only chunks whose content is new, write the store
and the lexical index, regenerate ``wiki/index.md``."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..errors import StoreError
from ..wiki import frontmatter
from ..wiki.generated import is_evidence
from ..wiki.model import Page, Wiki
from ..wiki.pages import MAX_PAGE_BYTES, decode
from ..wiki.parallel import MIN_PAGES, in_shares
from ..wiki.slug import parse_target
from ..wiki.snapshots import SourceFile
from ..wiki.titles import page_description, page_properties, page_title, property_list
from . import checkpoint
from . import store as store_mod
from .chunking import (
    chunk_key,
    content_hash,
    embedding_input,
    page_chunks,
    path_words,
    readable_text,
    store_fingerprint,
)
from .embedders import Embedder
from .pagetable import PageEntry, PageTable
from .vectors import VectorIndex

if TYPE_CHECKING:
    from .indexref import Publication
    from .vectors import SharedIndex
from .lexical import FIELD_WEIGHTS, LEXICAL_DIR, Document, LexicalIndex

NO_EMBEDDINGS = "none"


@dataclass(frozen=True)
class IndexedPage:
    page_id: str
    path: str
    blob: str
    title: str
    summary: str
    texts: tuple[str, ...]  # chunking.chunk_key: each chunk's identity (its hash) in the store
    links: tuple[str, ...] = ()
    dangling: tuple[str, ...] = ()
    embedded: tuple[str, ...] = ()  # what is embedded, per chunk (chunking.embedding_input)
    lexical: tuple[Document, ...] = ()  # what BM25 indexes, per chunk: weighted fields


@dataclass(frozen=True)
class IndexSummary:
    pages: int
    chunks: int
    embedded: int
    reused: int
    seconds: float
    backend: str
    notes: tuple[str, ...] = ()
    fetched: int = 0  # chunks whose vector came from refs/llmwiki/index (retrieval/indexref.py)
    read: int = 0  # pages read and chunked (the others kept their entries: `build_update`)
    publication: Publication | None = None  # what `llmwiki index --publish` wrote


# Vectors from elsewhere, asked for the chunks the store has none of before they are embedded:
# chunk hash -> float32 unit vector of the store's model (``indexref.Published.get``).
Seed = Callable[[list[str]], Mapping[str, np.ndarray]]


def read_pages(
    wiki: Wiki, only: set[str] | None = None
) -> tuple[list[IndexedPage], dict[str, str]]:
    """Live text of every page that may be evidence (of those in ``only`` when given),
    chunked; and the pages left out (path -> blob): the generated index, the journal,
    binary, oversize and non-UTF-8 files. The store records both, so a later call can tell what
    changed since (see `refresh`)."""
    wanted = [p for p in wiki.pages if only is None or p.path in only]
    if len(wanted) >= MIN_PAGES:
        wiki.build_tables()  # before the workers fork: each resolves its pages' links
    pages: list[IndexedPage] = []
    skipped: dict[str, str] = {}
    # On every core for a large wiki (wiki/parallel.py): reading, chunking and the text each
    # chunk is searched by are per page; the pages come back in order, as plain tuples.
    for share in in_shares(lambda share: _read_share(wiki, share), wanted):
        for item in share:
            if item[0] is None:
                skipped[item[1]] = item[2]
            else:
                pages.append(IndexedPage(*item))
    return pages, skipped


def _read_share(wiki: Wiki, wanted: list[Page]) -> list[tuple[Any, ...]]:
    """`read_pages` of some pages: each an `IndexedPage`'s fields, or (None, path, blob) for
    a page left out; plain data, for `marshal` to carry back from a worker."""
    data = wiki.read([SourceFile(p.path, p.blob) for p in wanted])
    out: list[tuple[Any, ...]] = []
    resolved: dict[str, tuple[str | None, str | None]] = {}  # link text -> (page id, dangling key)
    for page in wanted:
        raw = data.get(page.path)
        if not isinstance(raw, bytes) or len(raw) > MAX_PAGE_BYTES:
            out.append((None, page.path, page.blob or ""))
            continue
        text, issues = decode(raw)
        if (
            text is None or issues or not is_evidence(page.path, wiki.root_dir, text)
        ):  # never U+FFFD text
            out.append((None, page.path, page.blob or ""))
            continue
        meta = frontmatter.parse(text)
        body = text[meta.body_offset :]
        title = page_title(meta.data, body, page.stem)
        summary = meta.data.get("summary")
        about = page_description(meta.data, body)
        chunks = page_chunks(title, about, body)
        texts = tuple(chunk_key(title, about if c.index == 0 else "", c.text) for c in chunks)
        links, dangling = _graph(wiki, page, resolved)
        properties = page_properties(body) if "::" in body else {}
        names = "\n".join((title, *page.scan.aliases, *property_list(properties.get("alias", ""))))
        readable = ["" if c.card else readable_text(c.text) for c in chunks]
        where = path_words(page.path)
        lexical = tuple(lexical_fields(names, about, where, text) for text in readable)
        embedded = tuple(
            embedding_input(title, text, about if i == 0 else "") for i, text in enumerate(readable)
        )
        out.append(
            (
                page.id,
                page.path,
                page.blob or "",
                title,
                summary if isinstance(summary, str) else "",
                texts,
                links,
                dangling,
                embedded,
                lexical,
            )
        )
    return out


def lexical_fields(names: str, about: str, where: str, readable: str) -> Document:
    """One chunk for BM25F: title and aliases; the frontmatter description; the page's path
    words (``chunking.path_words``); the body as a reader reads it (``chunking.readable_text``).
    Each weighted by :data:`lexical.FIELD_WEIGHTS`."""
    return (
        (names, FIELD_WEIGHTS["title"]),
        (about, FIELD_WEIGHTS["description"]),
        (where, FIELD_WEIGHTS["path"]),
        (readable, FIELD_WEIGHTS["body"]),
    )


def _graph(
    wiki: Wiki, page: Page, resolved: dict[str, tuple[str | None, str | None]] | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The pages ``page`` links to and the targets it names that nothing answers;
    ``resolved`` remembers each link text's meaning across pages (a wiki names the same
    targets from many pages)."""
    links: dict[str, None] = {}
    dangling: dict[str, None] = {}
    known = resolved if resolved is not None else {}
    for _line, _col, _inner, text, _label, _embed in page.scan.raw_links:
        meaning = known.get(text)
        if meaning is None:
            target = parse_target(text)
            if target.is_self_anchor or target.is_empty:
                meaning = (None, None)
            else:
                found = wiki.resolve(target)
                meaning = (
                    found.page.id if found.page is not None else None,
                    None if found.resolved else target.key,
                )
            known[text] = meaning
        page_id, missing = meaning
        if page_id is not None:
            if page_id != page.id:
                links[page_id] = None
        elif missing is not None:
            dangling[missing] = None
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
    names: str = "",
    vector_store: str | None = None,
    seed: Seed | None = None,
    known: set[str] | None = None,
) -> IndexSummary:
    """Write ``folder``/embeddings.{json,bin} and ``folder``/bm25 for ``pages``. With
    ``vector_store`` (a shared store's URI, storetable.py) the vectors go there, reused from
    there, and from the previous local store, before any chunk is embedded. ``seed``: where
    vectors the store lacks are looked up before they are embedded (refs/llmwiki/index).
    ``known``: the chunks of ``pages`` the caller just found ``previous_store``'s vectors to
    hold (`refresh.plan`), not asked again (a shared store answers 51,000 hashes in ~0.3 s)."""
    started = time.perf_counter()
    table, hashes_in_order, texts, documents = _table_of(pages)
    written = _write(
        folder,
        table,
        hashes_in_order,
        texts,
        lambda: LexicalIndex.build(documents),
        embedder,
        full=full,
        progress=progress,
        skipped=skipped,
        previous_store=previous_store,
        names=names,
        vector_store=vector_store,
        seed=seed,
        started=started,
        read=len(pages),
        known=known,
    )
    assert written is not None  # every chunk's text is at hand: nothing can be missing
    return written


def _table_of(
    pages: list[IndexedPage],
) -> tuple[PageTable, list[str], dict[str, str], list[Document]]:
    """The page table of ``pages`` (chunks in row order), their chunks' hashes in that order,
    each chunk's embedding input by hash, and the lexical documents."""
    entries: list[PageEntry] = []
    texts: dict[str, str] = {}  # chunk hash -> embedding input
    documents: list[Document] = []
    hashes_in_order: list[str] = []
    for page in pages:
        hashes = tuple(content_hash(t) for t in page.texts)
        entries.append(
            PageEntry(
                page.page_id,
                page.path,
                page.blob,
                page.title,
                page.summary,
                len(hashes_in_order),
                hashes,
                page.links,
                page.dangling,
            )
        )
        for text, chunk_hash in zip(page.embedded, hashes):
            texts.setdefault(chunk_hash, text)
        documents.extend(page.lexical)
        hashes_in_order.extend(hashes)
    return PageTable(entries), hashes_in_order, texts, documents


def build_update(
    folder: Path,
    update: Update,
    store: store_mod.Store,
    lexical: LexicalIndex,
    embedder: Embedder | None,
    *,
    progress: Callable[[int, int], object] | None = None,
    vector_store: str | None = None,
    seed: Seed | None = None,
) -> IndexSummary | None:
    """`build` of a wiki that changed since ``store`` and ``lexical`` (its index as saved),
    from `plan_update`: only the changed pages were read, only their chunks are tokenized
    and embedded, and what is written equals a build from every page. None (nothing
    written) when a chunk kept from ``store`` has no vector there (a store damaged under
    us): build from every page instead."""
    return _write(
        folder,
        PageTable(update.entries),
        update.hashes,
        update.missing,
        lambda: lexical.updated(update.layout),
        embedder,
        progress=progress,
        skipped=update.skipped,
        previous_store=store,
        names=update.names,
        vector_store=vector_store,
        seed=seed,
        started=time.perf_counter(),
        read=update.read,
    )


def _write(
    folder: Path,
    table: PageTable,
    hashes_in_order: list[str],
    texts: Mapping[str, str],
    lexical: Callable[[], LexicalIndex],
    embedder: Embedder | None,
    *,
    full: bool = False,
    progress: Callable[[int, int], object] | None,
    skipped: dict[str, str] | None,
    previous_store: store_mod.Store | None,
    names: str,
    vector_store: str | None,
    seed: Seed | None,
    started: float,
    read: int,
    known: set[str] | None = None,
) -> IndexSummary | None:
    """Embed what ``table``'s chunks lack (``texts``: chunk hash -> embedding input, for at
    least every chunk no vector is reused for), then write the lexical index and the store.
    None, before anything is written, when a chunk has neither a vector nor a text."""
    fingerprint = store_fingerprint(embedder.fingerprint) if embedder else NO_EMBEDDINGS
    notes: list[str] = []
    target = _vector_target(
        folder, embedder, fingerprint, full, previous_store, vector_store, notes
    )
    row = len(hashes_in_order)
    counts = _Counts(0, 0, 0)
    if embedder is not None:
        reuse = known if target.old is not None and target.old is previous_store else None
        chunks = _Chunks(hashes_in_order, texts, reuse)
        embedded = _embed_missing(
            folder, embedder, fingerprint, target, chunks, full, seed, progress
        )
        if embedded is None:
            return None
        counts = embedded
    backend, model = _save(
        folder, fingerprint, embedder, table, target.vectors, lexical, skipped, names
    )
    if target.shared is not None:
        notes.append(target.shared.describe())
    return IndexSummary(
        len(table),
        row,
        counts.embedded,
        counts.reused,
        time.perf_counter() - started,
        backend,
        tuple(notes),
        counts.fetched,
        read=read,
    )


def _save(
    folder: Path,
    fingerprint: str,
    embedder: Embedder | None,
    table: PageTable,
    vectors: VectorIndex,
    lexical: Callable[[], LexicalIndex],
    skipped: dict[str, str] | None,
    names: str,
) -> tuple[str, str]:
    """Write the lexical index, then the store (the page table and ``vectors`` of its rows);
    drop the embedding checkpoint the store now holds: the store's backend and model."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    backend = embedder.name if embedder else NO_EMBEDDINGS
    model = embedder.model if embedder else NO_EMBEDDINGS
    lexical().save(folder / LEXICAL_DIR)
    store = store_mod.Store(
        fingerprint, backend, model, table, vectors.for_rows(table), now, dict(skipped or {}), names
    )
    store_mod.save(folder, store)
    if embedder is not None:
        checkpoint.remove(folder)  # its vectors are in the store now
    return backend, model


class _Target(NamedTuple):
    """Where an index run's vectors come from and go to."""

    old: store_mod.Store | None  # the previous store whose vectors are reused, if any
    vectors: VectorIndex  # the vectors to reuse and to add the new ones to
    carry: VectorIndex | None  # a previous store's vectors, carried into a shared store
    shared: SharedIndex | None  # the shared store, when one is configured


class _Chunks(NamedTuple):
    """The table's chunks in row order, each new one's text to embed, and the chunks the
    warm previous store holds (None: ask the vectors)."""

    hashes_in_order: list[str]
    texts: Mapping[str, str]
    known: set[str] | None


class _Counts(NamedTuple):
    embedded: int
    reused: int
    fetched: int


def _reusable_store(
    folder: Path,
    fingerprint: str,
    previous_store: store_mod.Store | None,
    vector_store: str | None,
    notes: list[str],
) -> store_mod.Store | None:
    """The previous store whose vectors this run may reuse: the warm one when it was made by
    this model, else the one on disk; None (said in ``notes``) when it cannot be trusted."""
    old = (
        previous_store
        if previous_store is not None and previous_store.fingerprint == fingerprint
        else None
    )
    if old is None:
        try:
            old = store_mod.load(
                folder, expected_fingerprint=fingerprint, vector_store=vector_store
            )
        except StoreError as exc:
            if exc.code == "embedding-store-corrupt":
                notes.append(f"{exc.message}; rebuilt it")
    if old is not None:
        bad = old.vectors.problem()  # never reuse vectors that cannot be trusted
        if bad is not None:
            notes.append(f"{bad}; every chunk was embedded again")
            return None
    return old


def _vector_target(
    folder: Path,
    embedder: Embedder | None,
    fingerprint: str,
    full: bool,
    previous_store: store_mod.Store | None,
    vector_store: str | None,
    notes: list[str],
) -> _Target:
    """The vectors to reuse and the index the new ones go to: the previous store's (unless
    ``full``), a shared store's when one is configured, else an empty one."""
    old = None
    index: VectorIndex | None = None
    if embedder is not None and not full:
        old = _reusable_store(folder, fingerprint, previous_store, vector_store, notes)
        index = old.vectors if old is not None else None
    carry: VectorIndex | None = None
    shared: SharedIndex | None = None
    if embedder is not None and vector_store:
        from . import storetable

        shared = storetable.open_shared(vector_store, fingerprint, embedder.dimension, create=True)
        shared.overwrite = full  # --full: every chunk embedded again, its stored vector replaced
        carry, index = index, shared
    if index is None:
        index = store_mod.empty_vectors(fingerprint, embedder.dimension if embedder else 0)
    return _Target(old, index, carry, shared)


def _embed_missing(
    folder: Path,
    embedder: Embedder,
    fingerprint: str,
    target: _Target,
    chunks: _Chunks,
    full: bool,
    seed: Seed | None,
    progress: Callable[[int, int], object] | None,
) -> _Counts | None:
    """Add to ``target.vectors`` a vector for every chunk it lacks: carried from a previous
    store, fetched from a published seed, else embedded (``known``: the chunks the warm
    previous store holds). None, before anything is added, when a chunk has no text."""
    index, old, carry = target.vectors, target.old, target.carry
    hashes_in_order, texts, known = chunks
    if full:
        previous: set[str] = set()
    elif known is not None:
        previous = set(known)
    else:
        previous = index.known(hashes_in_order)
    if carry is not None and carry is not index and len(previous) < len(set(hashes_in_order)):
        carried = carry.get(h for h in hashes_in_order if h not in previous)
        index.add(carried)
        previous.update(carried)
    missing: dict[str, str] = {}
    for chunk_hash in hashes_in_order:
        if chunk_hash not in previous and chunk_hash not in missing:
            text = texts.get(chunk_hash)
            if text is None:
                return None
            missing[chunk_hash] = text
    fetched = 0
    if seed is not None and missing:
        seeded = dict(seed(list(missing)))
        index.add(seeded)
        for chunk_hash in seeded:
            del missing[chunk_hash]
        fetched = sum(1 for h in hashes_in_order if h in seeded)
    # A slice at a time, the work of an interrupted run reused (retrieval/checkpoint.py)
    with collector_running():  # minutes to hours of provider calls: collect their cycles
        fresh, kept = checkpoint.embed_kept(folder, embedder, fingerprint, missing, progress)
    index.add(fresh)
    if old is not None:  # chunks no page has any more (the file store writes only the table's rows)
        index.remove(set(old.pages.row_hashes()).difference(hashes_in_order))
    embedded = len(missing) - len(kept)
    row = len(hashes_in_order)
    reused = row - fetched - sum(1 for h in hashes_in_order if h in missing and h not in kept)
    return _Counts(embedded, reused, fetched)


@contextmanager
def collector_running() -> Iterator[None]:
    """The cycle collector on for a while, as it was after: `Retrieval.index` pauses it for
    the wiki and the tables (no cycles there), but embedding runs long and its HTTP clients
    and model sessions may leave cycles behind."""
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not enabled:
            gc.disable()


def memory_index(
    pages: list[IndexedPage],
    base: store_mod.Store | None = None,
    skipped: dict[str, str] | None = None,
) -> tuple[store_mod.Store, LexicalIndex]:
    """A store built in memory from live pages (nothing is written): lexical-only when there
    is no usable store on disk; with ``base``, in its model's shape, every chunk ``base``'s
    vectors hold keeps its vector and new chunks get zeros (they are found lexically: a read
    that may not embed them all, see `refresh`)."""
    entries: list[PageEntry] = []
    documents: list[Document] = []
    hashes_in_order: list[str] = []
    for page in pages:
        hashes = tuple(content_hash(t) for t in page.texts)
        entries.append(
            PageEntry(
                page.page_id,
                page.path,
                page.blob,
                page.title,
                page.summary,
                len(documents),
                hashes,
                page.links,
                page.dangling,
            )
        )
        documents.extend(page.lexical)
        hashes_in_order.extend(hashes)
    table = PageTable(entries)
    if base is None:
        vectors = store_mod.empty_vectors(NO_EMBEDDINGS, 0).for_rows(table)
        return (
            store_mod.Store(NO_EMBEDDINGS, NO_EMBEDDINGS, NO_EMBEDDINGS, table, vectors, ""),
            LexicalIndex.build(documents),
        )
    store = store_mod.Store(
        base.fingerprint,
        base.backend,
        base.model,
        table,
        base.vectors.for_rows(table),
        base.updated_at,
        dict(skipped or {}),
    )
    return store, LexicalIndex.build(documents)


def names_digest(wiki: Wiki) -> str:
    """A digest of everything link resolution depends on (page paths, alias slugs, other
    files' names): while it is unchanged, an unchanged page's links resolve as before."""
    import hashlib  # noqa: PLC0415 - refresh only

    digest = hashlib.blake2b(digest_size=16)
    for page in wiki.pages:
        digest.update(
            f"{page.path}\x00{chr(1).join(page.scan.alias_slugs)}\n".encode(
                "utf-8", "surrogatepass"
            )
        )
    for path in sorted(wiki.other_files):
        digest.update(f"\x02{path}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@dataclass
class Update:
    """The index of a changed wiki by difference with the store it had: only pages whose
    blob changed (or that are new) are read and chunked; the rest keep their store entries
    and their rows of the lexical index (``layout``, see ``LexicalIndex.updated``)."""

    entries: list[PageEntry]
    hashes: list[str]  # chunk hash of every row, in order
    missing: dict[str, str]  # chunk hash -> embedding input, for chunks the store has no vector of
    layout: list[int | Document]
    skipped: dict[str, str]
    names: str
    read: int  # pages read


def plan_update(wiki: Wiki, store: store_mod.Store) -> Update:
    """What `build` would write for ``wiki``, reading only the pages that changed since
    ``store`` (same entries, rows and order as a build from every page)."""
    old = {e.path: e for e in store.pages}
    kept_skipped, touched = _changed(wiki, store, old)
    fresh_pages, fresh_skipped = read_pages(wiki, only=touched) if touched else ([], {})
    fresh = {p.path: p for p in fresh_pages}
    names = names_digest(wiki)
    same_names = bool(store.names) and store.names == names
    known = {h for e in store.pages for h in e.hashes} if store.dimensions else set()
    entries: list[PageEntry] = []
    hashes: list[str] = []
    layout: list[int | Document] = []
    missing: dict[str, str] = {}
    for page in wiki.pages:
        indexed = fresh.get(page.path)
        if indexed is not None:
            chunk_hashes = tuple(content_hash(t) for t in indexed.texts)
            entries.append(_entry(indexed, len(hashes), chunk_hashes))
            layout.extend(indexed.lexical)
            if store.dimensions:  # a lexical-only store has no vectors to miss
                for text, chunk_hash in zip(indexed.embedded, chunk_hashes):
                    if chunk_hash not in known:
                        missing.setdefault(chunk_hash, text)
            hashes.extend(chunk_hashes)
        elif page.path not in touched and page.path in old:
            entry = old[page.path]
            entries.append(_kept(entry, len(hashes), None if same_names else (wiki, page)))
            layout.extend(range(entry.first_row, entry.first_row + len(entry.hashes)))
            hashes.extend(entry.hashes)
    if missing:  # the vectors may hold some already: a shared store's, indexed by CI (or added in this process)
        held = store.vectors.known(missing)
        missing = {h: text for h, text in missing.items() if h not in held}
    return Update(
        entries, hashes, missing, layout, {**kept_skipped, **fresh_skipped}, names, len(touched)
    )


def _changed(
    wiki: Wiki, store: store_mod.Store, old: Mapping[str, PageEntry]
) -> tuple[dict[str, str], set[str]]:
    """The pages still left out as the store recorded them (path -> blob), and the paths
    to read: new, changed, or left out before and changed since."""
    kept_skipped = {
        p.path: p.blob
        for p in wiki.pages
        if p.blob and store.skipped.get(p.path) == p.blob and p.path not in old
    }
    touched = {
        p.path
        for p in wiki.pages
        if p.path not in kept_skipped
        and not (p.blob and p.path in old and old[p.path].blob == p.blob)
    }
    return kept_skipped, touched


def _entry(page: IndexedPage, first_row: int, hashes: tuple[str, ...]) -> PageEntry:
    return PageEntry(
        page.page_id,
        page.path,
        page.blob,
        page.title,
        page.summary,
        first_row,
        hashes,
        page.links,
        page.dangling,
    )


def _kept(entry: PageEntry, first_row: int, regraph: tuple[Wiki, Page] | None) -> PageEntry:
    """An unchanged page's entry at ``first_row``; ``regraph``: the names changed, its links
    resolved again. The entry itself when nothing moved (50,000 copies made for nothing
    were a tenth of a second of an index after one edit)."""
    if regraph is None:
        if entry.first_row == first_row:
            return entry
        return entry._replace(first_row=first_row)
    links, dangling = _graph(*regraph)
    return entry._replace(first_row=first_row, links=links, dangling=dangling)


def unchanged(update: Update, store: store_mod.Store) -> bool:
    """Whether ``update`` is ``store`` itself: no page read, added, removed or moved, no
    chunk without a vector, the same pages left out and the same names (so every kept page's
    links are the stored ones). Then the files on disk are what a build would write."""
    return (
        update.read == 0
        and not update.missing
        and update.names == store.names
        and update.skipped == store.skipped
        and len(update.entries) == len(store.pages)
        and [e.path for e in update.entries] == list(store.pages.path_blobs())
        and update.hashes == store.pages.row_hashes()
    )


def same_contents_listing(update: Update, store: store_mod.Store) -> bool:
    """Whether the pages of ``update`` have the paths, titles and summaries (the table of
    contents' lines) and the left-out pages of ``store``: an edit of a page's body only."""
    return (
        update.skipped == store.skipped
        and len(update.entries) == len(store.pages)
        and [(e.path, e.title, e.summary) for e in update.entries]
        == [(e.path, e.title, e.summary) for e in store.pages]
    )


def unchanged_summary(
    update: Update, store: store_mod.Store, embedder: Embedder | None, started: float
) -> IndexSummary:
    """The summary of an index run that found nothing to write (`unchanged`)."""
    rows = len(update.hashes)
    return IndexSummary(
        len(update.entries),
        rows,
        0,
        rows if embedder is not None else 0,
        time.perf_counter() - started,
        embedder.name if embedder else NO_EMBEDDINGS,
        read=0,
    )


def apply_update(
    update: Update, store: store_mod.Store, lexical: LexicalIndex, fresh: np.ndarray | None = None
) -> tuple[store_mod.Store, LexicalIndex]:
    """The updated store and lexical index in memory. ``fresh``: the vectors of
    ``update.missing``, in its order, added to the store's vectors (None: those rows stay
    zero, ranked lexically only)."""
    if fresh is not None and store.dimensions:
        store.vectors.add(dict(zip(update.missing, fresh)))
    updated_at = store.updated_at
    if fresh is not None:
        updated_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    table = PageTable(update.entries)
    new_store = store_mod.Store(
        store.fingerprint,
        store.backend,
        store.model,
        table,
        store.vectors.for_rows(table),
        updated_at,
        dict(update.skipped),
        update.names,
    )
    return new_store, lexical.updated(update.layout)


def save_update(folder: Path, store: store_mod.Store, lexical: LexicalIndex) -> None:
    """Write an updated index (the caller holds the project lock), lexical index first as `build` does."""
    lexical.save(folder / LEXICAL_DIR)
    store_mod.save(folder, store)
