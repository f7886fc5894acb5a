"""The retrieval service: build the index, load it, search, and build context packs."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import confine
from ..errors import LexicalIndexError, PathRefused, StoreError
from ..gitstore.git import Git, blob_id
from ..providertable import LOCAL_EMBEDDING
from ..wiki.pages import decode, unusable_notes
from . import store as store_mod
from .chunking import store_fingerprint
from .context import ContextOptions, LivePage, PackInputs, build_pack
from .embedders import Embedder, make_embedder, provider_name
from .lexical import LEXICAL_DIR, LexicalIndex
from .loaded import Loaded
from .pagetable import PageEntry
from .refseed import PublishedIndex
from .search import DEFAULT_MODE, MODES, SearchResult, search
from .store import Store
from .warm import WarmState

if (
    TYPE_CHECKING
):  # the indexer, the write layer and the index page: imported by the calls that use them
    from ..wiki.model import Wiki
    from ..wiki.provenance import Fed, Sourcing
    from . import indexer


SPARE_PAGES = 3  # ranked pages beyond top_pages, standing in for pages that cannot be read


class Retrieval:
    """Build the index, load it, search, and build context packs, for one project.

    One instance per workspace, holding one object per other responsibility: what a read
    loaded, kept warm for the next call of a long-lived process and following the live
    pages (`warm`, warm.py), and the published index: its vectors offered to the indexer,
    publishing, a first read restored from it (`published`, refseed.py). Nothing is kept in
    module globals: a new instance starts cold."""

    def __init__(
        self,
        *,
        root: Path,
        project: Path,
        state: Path,
        load_wiki: Callable[[], Wiki],
        environ: Mapping[str, str],
        provider: str | None = None,
        model: str | None = None,
        mode: str | None = None,
        git: Git | None = None,
        list_pages: Callable[[], dict[str, str]] | None = None,
        preloaded: Callable[[], Embedder | None] | None = None,
        vector_store: str | None = None,
    ) -> None:
        self.git = git
        # The shared vector store's URI (storetable.py; docs/team.md), as `Workspace.vector_store`
        # resolved it: the environment wins over the config file (a password need never be committed).
        self.vector_store = vector_store or None
        self._preloaded = preloaded  # the local model started early by the caller, if any
        self.root = root
        self._searched: Store | None = None  # the store the last search ranked from
        self.project = project
        self.state = state
        self._load_wiki = load_wiki
        self.environ = environ
        self.provider = provider
        self.model = model
        chosen = (environ.get("LLMWIKI_RETRIEVAL") or mode or DEFAULT_MODE).lower()
        self.mode = chosen if chosen in MODES else DEFAULT_MODE
        # What a read loaded, kept warm (warm.py); the published index (refseed.py).
        self.warm = WarmState(
            state=state,
            git=git,
            load_wiki=load_wiki,
            list_pages=list_pages,
            vector_store=self.vector_store,
            embedder=self.embedder,
            embedder_key=self._embedder_key,
        )
        self.published = PublishedIndex(self.warm, self.embedder)

    def embedder(self, fast: bool = False) -> Embedder | None:
        name = provider_name(self.environ, self.provider, fast)
        if name == LOCAL_EMBEDDING and self._preloaded is not None:
            preloaded, self._preloaded = self._preloaded(), None
            if preloaded is not None:
                return preloaded
        return make_embedder(name, self.environ, self.model)

    # -- building -------------------------------------------------------------------------

    def index(
        self,
        *,
        full: bool = False,
        fast: bool = False,
        progress: Callable[[int, int], object] | None = None,
        page: bool = True,
        publish: bool = False,
        fetch: str | None = None,
        compact: bool = False,
    ) -> tuple[indexer.IndexSummary, str | None]:
        """Build the index. ``fetch``: first fetch that remote's ``refs/llmwiki/index`` (refused
        ref: IndexRefError, nothing changed); ``publish``: then write the store to that ref.
        Every chunk the ref holds a vector of (same model) is taken from it, not embedded.
        ``compact`` (and ``publish``, whose snapshot holds plain files): write the lexical
        index without its appended layer (retrieval/lexlayer.py)."""
        from dataclasses import replace

        from ..gitstore.lock import repository_lock

        notes: list[str] = []
        fast = self._stays_lexical(fast, full, notes)
        embedder = self.embedder(fast)
        self._refuse_ref_options(full, publish, fetch)
        # Under the project lock: two writers must not interleave the store's files.
        with repository_lock(self.git, self.state), _collector_paused():
            seed, ref_notes = (
                self.published.published_seed(embedder, fetch) if not full else (None, [])
            )
            wiki = self._load_wiki()
            summary, known, skipped, same = self._index_wiki(wiki, embedder, full, progress, seed)
            notes += unusable_notes([(p.path, p.scan) for p in wiki.pages if p.path in skipped])
            notes += ref_notes  # the ref's notes: written when the indexer asked it
            written = self._index_page_after(wiki, notes, known, same) if page else None
            if (compact or publish) and self._compact_lexical():
                notes.append("compacted the lexical index (its appended postings merged in)")
            publication = self.published.publish() if publish else None
        return replace(
            summary, notes=tuple(notes) + summary.notes, publication=publication
        ), written

    def _compact_lexical(self) -> bool:
        """Rewrite a layered lexical index as a plain one (the caller holds the lock);
        whether there was a layer to merge."""
        try:
            lexical = LexicalIndex.load(self.state / LEXICAL_DIR)
        except LexicalIndexError:
            return False
        if not lexical.layered:
            return False
        lexical.compacted().save(self.state / LEXICAL_DIR)
        return True

    def _stays_lexical(self, fast: bool, full: bool, notes: list[str]) -> bool:
        """``fast``, or True when the store on disk is lexical-only and nothing asks to embed
        (a note says so): silently embedding a wiki indexed with --fast could take an hour.
        --full (or a provider setting) opts in."""
        from . import indexer

        explicit = bool(self.environ.get("LLMWIKI_EMBEDDING_PROVIDER") or self.provider)
        if fast or full or explicit or self._store_fingerprint() != indexer.NO_EMBEDDINGS:
            return fast
        notes.append(
            "the index is lexical-only (built with --fast); run `llmwiki index --full` to embed it"
        )
        return True

    def _refuse_ref_options(self, full: bool, publish: bool, fetch: str | None) -> None:
        from ..errors import UsageError

        if (publish or fetch) and self.git is None:
            raise UsageError(
                "--publish and --fetch keep the index on a git ref: run them inside a git repository"
            )
        if full and fetch:
            raise UsageError(
                "--full embeds every chunk again, --fetch takes them from the ref: use one of them"
            )

    def _index_wiki(
        self,
        wiki: Wiki,
        embedder: Embedder | None,
        full: bool,
        progress: Callable[[int, int], object] | None,
        seed: indexer.Seed | None,
    ) -> tuple[indexer.IndexSummary, Mapping[str, tuple[str, str]], dict[str, str], bool]:
        """Write the index of ``wiki``: by difference with the saved one when it can be, else
        from every page. The summary, each page's (title, summary) as read, the pages left
        out, and whether every page's path, title and summary are the ones the saved index
        had (then the table of contents is the one written last time)."""
        from . import indexer

        if not full:
            summary, known, skipped, same = self._index_by_difference(
                wiki, embedder, progress, seed
            )
            if summary is not None:
                return summary, known, skipped, same
        pages, skipped = indexer.read_pages(wiki)
        summary = indexer.build(
            self.state,
            pages,
            embedder,
            full=full,
            progress=progress,
            skipped=skipped,
            names=indexer.names_digest(wiki),
            vector_store=self.vector_store,
            seed=seed,
        )
        return summary, {p.path: (p.title, p.summary) for p in pages}, skipped, False

    def _index_page_after(
        self,
        wiki: Wiki,
        notes: list[str],
        known: Mapping[str, tuple[str, str]],
        same: bool = False,
    ) -> str | None:
        """Regenerate the table of contents (`_write_index_page`); a page written after the
        pages were read is recorded as left out, or the next read would find it "added"
        (llmwiki's copy in the state folder is no page). ``same``: no page's path, title or
        summary changed since the last index, which wrote it: rendering it again for the
        same text cost 0.7 s of CPU at 50,000 pages; it is only written if it is missing."""
        index_path = self._index_page_path(wiki)
        if not index_path:
            return None
        written = self._write_index_page(wiki, index_path, notes, known, same)
        if written and written == index_path:
            store_mod.add_skipped(
                self.state,
                {written: blob_id((self.root / written).read_bytes())},
                vector_store=self.vector_store,
            )
        return written

    def _index_by_difference(
        self,
        wiki: Wiki,
        embedder: Embedder | None,
        progress: Callable[[int, int], object] | None,
        seed: indexer.Seed | None,
    ) -> tuple[indexer.IndexSummary | None, dict[str, tuple[str, str]], dict[str, str], bool]:
        """`index` reading only the pages that changed since the saved index, when it is
        usable: same model, lexical index with its term frequencies, vectors trusted (the
        index a read's refresh keeps current the same way, `_follow_by_difference`). At
        10,000 pages a 100-page change costs 2-3 s instead of 7-18 s (benchmarks/reindex.py).
        (None, {}, {}, False) when the whole wiki must be read."""
        from . import indexer

        fingerprint = (
            store_fingerprint(embedder.fingerprint)
            if embedder is not None
            else indexer.NO_EMBEDDINGS
        )
        try:
            store = store_mod.load(
                self.state, expected_fingerprint=fingerprint, vector_store=self.vector_store
            )
            lexical = LexicalIndex.load(self.state / LEXICAL_DIR)
        except (StoreError, LexicalIndexError):
            return None, {}, {}, False
        if (
            store.fingerprint != fingerprint
            or len(lexical) != store.rows
            or not lexical.updatable
            or store.vectors.problem() is not None
        ):
            return None, {}, {}, False
        started = time.perf_counter()
        update = indexer.plan_update(wiki, store)
        if self.vector_store is None and indexer.unchanged(update, store):
            # Nothing to write: the store and the lexical index on disk are what a build
            # would write (rewriting them cost 5 s of CPU at 50,000 pages, issue 39).
            summary: indexer.IndexSummary | None = indexer.unchanged_summary(
                update, store, embedder, started
            )
            known = {e.path: (e.title, e.summary) for e in update.entries}
            return summary, known, update.skipped, True
        summary = indexer.build_update(
            self.state,
            update,
            store,
            lexical,
            embedder,
            progress=progress,
            vector_store=self.vector_store,
            seed=seed,
        )
        same = indexer.same_contents_listing(update, store)
        return summary, {e.path: (e.title, e.summary) for e in update.entries}, update.skipped, same

    def _store_fingerprint(self) -> str | None:
        try:
            return store_mod.load(self.state, vector_store=self.vector_store).fingerprint
        except StoreError:
            return None

    def _index_page_path(self, wiki: Wiki) -> str | None:
        """Only wikis in the reference layout (concepts/ or queries/) get a generated index."""
        if not any(p.kind in ("concept", "query") for p in wiki.pages):
            return None
        from ..wiki.generated import index_path

        return index_path(wiki.root_dir)

    def _write_index_page(
        self,
        wiki: Wiki,
        rel: str,
        notes: list[str],
        known: Mapping[str, tuple[object, object]] | None = None,
        same: bool = False,
    ) -> str | None:
        """Regenerate the table of contents where llmwiki owns ``rel`` (absent or generated);
        a user's own ``index.md`` is never touched: llmwiki's copy goes to the state folder.
        ``same``: nothing it lists changed since it was written: left as it is if present."""
        from ..gitstore.transaction import sweep_temp_files, write_atomic
        from ..wiki import generated
        from ..wiki.indexpage import entries_of, render, same_content

        head = self.git.rev_parse("HEAD") if self.git is not None else None
        prefix = "" if self.project == self.root else self.project.relative_to(self.root).as_posix()
        own, said = generated.index_owned(  # the commits' rule: a vault gets no new index.md
            self.git, self.root, self.state, head, wiki_root=wiki.root_dir, project_prefix=prefix
        )
        notes += said
        if not own:
            path, rel = self.state / generated.INDEX, f"{self.state.name}/{generated.INDEX}"
        else:
            path = self.root / rel
        sweep_temp_files(path.parent, [])  # left by a killed writer (we hold the lock)
        if same and path.is_file():
            return None
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = render(entries_of(wiki, known=known), now)
        if path.is_file() and same_content(
            path.read_text(encoding="utf-8", errors="replace"), text
        ):
            return None
        write_atomic(path, text.encode("utf-8"), root=self.root)
        return rel

    # -- reading --------------------------------------------------------------------------

    def wiki(self) -> Wiki:
        """The live wiki (the work tree's pages, scans served by the checker's cache)."""
        return self._load_wiki()

    def _embedder_key(self) -> tuple[object, ...]:
        return (self.provider, self.model, tuple(sorted(self.environ.items())))

    def load(self) -> Loaded:
        """The store, lexical index and embedder, degrading with warnings, never raising
        for a missing or unusable store (an empty lexical-only store is returned instead).
        Reused from the last call in this process while their files are unchanged (warm.py);
        without a usable store, started from the published index (refseed.py)."""
        base = self.warm.cached()
        if base is None:
            return self.published.load_without_store()
        return self.warm.follow(
            Loaded(base.store, base.lexical, base.embedder, list(base.warnings))
        )

    def search(
        self, question: str, *, keep: int = 12, max_pages: int = 5, mode: str | None = None
    ) -> tuple[Loaded, SearchResult]:
        loaded = self.load()
        self._searched = loaded.store
        result = search(
            question,
            loaded.store,
            loaded.lexical,
            loaded.embedder,
            mode=mode or self.mode,
            keep=keep,
            max_pages=max_pages,
        )
        return loaded, result

    def paths_of(self, page_ids: Iterable[object]) -> dict[str, str]:
        """Page id -> path, for the ids of the pages the last search ranked."""
        wanted = set(page_ids)
        store = self._searched
        if store is None or not wanted:
            return {}
        by_id = store.by_id()
        return {
            page_id: by_id[page_id].path
            for page_id in wanted
            if isinstance(page_id, str) and page_id in by_id
        }

    def read_live(self, entry: PageEntry) -> LivePage:
        try:
            data = confine.read_confined(self.root, entry.path)
        except PathRefused as exc:
            if isinstance(exc.__cause__, FileNotFoundError):
                return LivePage(
                    None, None, missing=True
                )  # deleted since it was listed: not an error
            return LivePage(None, None)
        text, issues = decode(data)
        if text is None or issues:  # never quoted with U+FFFD in place of its letters
            return LivePage(None, None, why="binary file" if text is None else "not valid UTF-8")
        return LivePage(text, blob_id(data))

    def context(self, prompt: str, options: ContextOptions) -> dict[str, Any]:
        loaded, result = self.search(
            prompt, keep=max(50, options.top_chunks), max_pages=options.top_pages + SPARE_PAGES
        )
        inputs = PackInputs(
            prompt,
            loaded.store,
            result,
            self.read_live,
            self.project / "sources",
            self.project,
            list(loaded.warnings),
        )
        pack = build_pack(inputs, options)
        self._provenance(pack, inputs.texts)
        return pack

    def _provenance(self, pack: dict[str, Any], texts: Mapping[str, str]) -> None:
        """Each primary page's freshness against the sources committed at HEAD (what compile
        reads): ``sourceFreshness`` -- ``fresh``, ``stale`` with why, or ``unknown`` without
        provenance (the rule of ``llmwiki check``, wiki.provenance.judge); and for a page that
        names its sources, each with its blob at HEAD and the blob recorded when the page
        was written from it (the one provenance lookup: its ``sourceBlobs:``, else the
        Llmwiki-Source trailers)."""
        from ..wiki.provenance import provenance, sources_dir, text_sourcing

        items = [
            (item, text_sourcing(texts.get(item["id"], ""))) for item in pack.get("primary", [])
        ]
        items = [(item, sourcing) for item, sourcing in items if sourcing]
        if not items or self.git is None or self.git.rev_parse("HEAD") is None:
            return
        prefix = "" if self.project == self.root else self.project.relative_to(self.root).as_posix()
        git = self.git
        pages = self.paths_of(item["id"] for item, _ in items)
        found = provenance(
            git,
            {pages[item["id"]]: texts[item["id"]] for item, _ in items if item["id"] in pages},
            "HEAD",
            prefix,
        )
        folder = sources_dir(prefix)
        named = sorted(
            {
                f"{folder}/{x[1]}" if x[0] == "c" else _in_project(prefix, x[1])
                for _, sourcing in items
                for x in sourcing
            }
        )
        now = git.blob_ids("HEAD", named)
        lines_of = _LineCounts(git, now)
        for item, sourcing in items:
            fed = found.of_page(pages.get(item["id"], ""))
            _judge_sources(item, sourcing, fed, prefix, now, lines_of)


def _in_project(prefix: str, path: str) -> str:
    """``path`` (from the project folder) from the repository root."""
    return f"{prefix}/{path}" if prefix else path


class _LineCounts:
    """The line count of each source at HEAD (None: not there), each read once."""

    def __init__(self, git: Git, now: Mapping[str, str]) -> None:
        self.git, self.now = git, now
        self.counted: dict[str, int | None] = {}

    def __call__(self, path: str) -> int | None:
        from ..wiki.provenance import line_count

        if path not in self.counted:
            now = self.now
            data = self.git.read_blobs([now[path]]).get(now[path]) if path in now else None
            self.counted[path] = line_count(data) if data is not None else None
        return self.counted[path]


def _judge_sources(
    item: dict[str, Any],
    sourcing: Sourcing,
    fed: list[Fed],
    prefix: str,
    now: Mapping[str, str],
    lines_of: Callable[[str], int | None],
) -> None:
    """Set a primary page's ``sourceFreshness``, and each source it names its blob at HEAD
    (``now``) and the blob recorded for it (``fed``)."""
    from ..wiki.provenance import freshness, judge, with_recorded

    judged = with_recorded(sourcing, fed, prefix)
    findings = judge(judged, prefix, now.get, lines_of)
    item["sourceFreshness"] = {
        "status": freshness(judged, findings),
        **({"stale": [f.to_json() for f in findings]} if findings else {}),
    }
    recorded = {f.source: f.recorded for f in fed}
    for source in item.get("sources", []):
        path = _in_project(prefix, source["path"])
        source["blob"] = now.get(path)
        source["recordedBlob"] = recorded.get(path)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cycle collector off while an index is built, back as it was after: the wiki, the
    page table and the postings are hundreds of thousands of objects in no cycle, and the
    collector's passes over them were a third to half of the CPU of an `index --fast` after
    one edit at 50,000 pages (issue 39, docs/benchmarks.md). Embedding, which may run for
    an hour, turns it back on meanwhile (`indexer.collector_running`)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
