"""The published index's side of retrieval (refs/llmwiki/index, retrieval/indexref.py): the
vectors it offers the indexer instead of embedding, publishing the store to it, and a first
read without a usable store (a fresh clone): restored from the ref's snapshot or from the
shared store, or built from the live pages with the ref's vectors. Its own object
(`PublishedIndex`), working through the warm state's public methods (warm.py); the service
(service.py) holds one of each and neither imports the service."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..errors import BEST_EFFORT_ERRORS, StoreError
from . import store as store_mod
from . import storetable
from .chunking import store_fingerprint
from .embedders import Embedder
from .loaded import Loaded
from .pagetable import PageTable
from .store import Store
from .vectors import SharedIndex
from .warm import WarmState

if TYPE_CHECKING:  # indexref (and tempfile) only when a ref is used: not on a plain `context`
    from ..gitstore.git import Git
    from . import indexer, indexref


class PublishedIndex:
    """refs/llmwiki/index as one project's retrieval uses it: the vectors it offers the
    indexer (`published_seed`), publishing the store to it (`publish`), and a first read
    without a usable store (`load_without_store`): restored from the ref's snapshot, from
    the shared store, or built from the live pages with the ref's vectors. What it restores
    it hands to the warm state (warm.py), which follows the wiki from it."""

    def __init__(self, warm: WarmState, embedder: Callable[[], Embedder | None]) -> None:
        self.warm = warm
        self._embedder = embedder

    def load_without_store(self) -> Loaded:
        """No usable local store: a fresh clone of a team's wiki starts from the shared
        store (and its published snapshot), else from the published index of vectors; else
        the live pages are ranked lexically, in memory, with a warning saying why."""
        from . import indexer

        try:
            if (
                self.warm.load_error is not None
            ):  # why `WarmState.load_files` found none (not asked twice: a dead host is slow)
                raise self.warm.load_error
            store_mod.load(self.warm.state, vector_store=self.warm.vector_store)
        except StoreError as exc:
            if exc.code == "embedding-store-missing" and self.warm.vector_store:
                shared = self._from_shared_store()  # a fresh clone of a team's wiki
                if isinstance(shared, Loaded):
                    return shared
                warnings = shared
            else:
                then = (
                    ""
                    if exc.code == "vector-store-unavailable"
                    else " Run `llmwiki index` for semantic ranking"
                )
                warnings = [
                    {
                        "code": exc.code,
                        "message": f"{exc.message}; ranked lexically from the live pages.{then}",
                    }
                ]
        else:  # written between the two looks: the next call loads it
            warnings = []
        if warnings:
            said: list[dict[str, str]] = []  # what the ref's checks found
            from_ref = self.load_from_ref(said)
            if from_ref is not None:
                return from_ref
            warnings += said
        memory, lexical = indexer.memory_index(indexer.read_pages(self.warm.wiki())[0])
        return Loaded(memory, lexical, None, warnings)

    def _from_shared_store(self) -> Loaded | list[dict[str, str]]:
        """No local index, a shared store configured (docs/team.md): the snapshot the team's CI
        published on refs/llmwiki/index (its page table and lexical index, the vectors the
        shared store's: `restore_shared`), else an empty page table over the shared
        vectors of the active model; then following the wiki (`WarmState.follow`) reads only the
        pages that differ, reuses the vectors the store holds and embeds only chunks it lacks
        (this clone's own changes). The warnings when it cannot."""
        from . import storetable

        try:
            embedder = self._embedder()
        except BEST_EFFORT_ERRORS as exc:
            return [
                {
                    "code": "embedding-degraded",
                    "message": f"{exc}; ranked lexically from the live pages",
                }
            ]
        if embedder is None:
            return []
        said: list[dict[str, str]] = []
        restored = self.restore_shared(embedder, said)
        if restored is not None:
            return restored
        fingerprint = store_fingerprint(embedder.fingerprint)
        try:
            vectors = storetable.open_shared(
                self.warm.vector_store or "", fingerprint, embedder.dimension, create=False
            )
        except StoreError as exc:
            return said + [
                {
                    "code": exc.code,
                    "message": f"{exc.message}; ranked lexically from the live pages",
                }
            ]
        if not vectors.holds_model():
            vectors.close()
            return said + [
                {
                    "code": "vector-store-empty",
                    "message": f"the shared vector store {vectors.label} holds no vectors of {fingerprint!r}; "
                    "ranked lexically until `llmwiki index` runs against it (docs/team.md)",
                }
            ]
        empty = Store(fingerprint, embedder.name, embedder.model, PageTable([]), vectors, "")
        return self.warm.follow(Loaded(empty, None, embedder, said))

    def published_seed(
        self, embedder: Embedder | None, remote: str | None
    ) -> tuple[indexer.Seed | None, list[str]]:
        """The vectors of ``refs/llmwiki/index`` (fetched from ``remote`` first, when given) for
        the indexer to take instead of embedding, and notes on a ref that could not be used
        (filled in when the indexer first asks: a store that lacks no vector never reads the
        ref). With ``remote``, a refused ref is an error; without, a note (the index is built
        as if there were no ref)."""
        from ..errors import IndexRefError, UsageError
        from . import indexref

        if self.warm.git is None or embedder is None:
            if remote is not None:
                raise UsageError(
                    "--fetch takes vectors for the embedding model, but this index is lexical-only",
                    hint="drop --fast (and LLMWIKI_EMBEDDING_PROVIDER=none) to use the fetched vectors",
                )
            return None, []
        git = self.warm.git
        fingerprint = store_fingerprint(embedder.fingerprint)
        notes: list[str] = []
        found: list[indexref.Published] = []
        if remote is not None:  # refusals raise: the user asked for this ref
            fetched = indexref.fetch(
                git, remote, fingerprint=fingerprint, dimensions=embedder.dimension
            )
            found.append(fetched.published)
            if fetched.kept_local:
                notes.append(
                    f"{indexref.REF} stays at your own {fetched.kept_local[:12]} (published here, not in "
                    f"{remote}'s); the vectors of both are used"
                )
            elif fetched.moved:
                return fetched.published.get, notes
        pending = [indexref.REF]

        def seed(hashes: list[str]) -> dict[str, np.ndarray]:
            while pending:
                try:
                    local = indexref.read(
                        git, pending.pop(), fingerprint=fingerprint, dimensions=embedder.dimension
                    )
                except IndexRefError as exc:
                    notes.append(f"{exc.message}; the index was built without it")
                    continue
                if local is not None:
                    found.append(local)
            out: dict[str, np.ndarray] = {}
            for published in found:
                out.update(published.get([h for h in hashes if h not in out]))
            return out

        return seed, notes

    def publish(self) -> indexref.Publication:
        from . import indexref

        assert self.warm.git is not None
        shared = bool(
            self.warm.vector_store
        )  # the vectors are in the team's store: the snapshot alone is published
        store = store_mod.load(self.warm.state, vector_store=self.warm.vector_store)
        try:
            return indexref.publish(
                self.warm.git,
                store,
                indexref.snapshot_files(self.warm.state, self.warm.git),
                shared=shared,
            )
        finally:  # the shared store's connection closed now, not whenever a refusal's traceback lets it go
            if isinstance(store.vectors, SharedIndex):
                store.vectors.close()

    def load_from_ref(self, warnings: list[dict[str, str]]) -> Loaded | None:
        """No usable store, but ``refs/llmwiki/index`` of the active model (a fresh clone after
        ``git fetch origin refs/llmwiki/index:refs/llmwiki/index``): the index built from the
        live pages with the ref's vectors, embedding only chunks it lacks, and saved when they
        are few (`refresh.ON_THE_FLY_CHUNKS`); else ranked from memory, the rest lexically.
        None (a warning added when the ref is refused): rank lexically as without it."""
        from . import indexref

        if self.warm.git is None or self.warm.git.object_id(indexref.REF) is None:
            return None
        try:
            embedder = self._embedder()
        except BEST_EFFORT_ERRORS:
            return None  # said by the lexical path's warning: no store, no model
        if embedder is None:
            return None
        prefetch = indexref.SnapshotPrefetch(
            self.warm.git
        )  # the snapshot read on the other core while the vectors are checked
        published = _read_ref(self.warm.git, embedder, warnings)
        if published is None:
            return None
        if (
            published.vector_store
        ):  # a snapshot whose vectors are in a shared store this clone does not use
            warnings.append(
                {
                    "code": "index-ref-refused",
                    "message": f"{indexref.REF} holds the page table and lexical index of an index whose vectors "
                    "are in the team's shared vector store, and LLMWIKI_VECTOR_STORE is not set "
                    "(docs/team.md); nothing was taken from it",
                }
            )
            return None
        if published.snapshot:
            restored = self.restore_snapshot(published, warnings, prefetch)
            if restored is not None:
                return restored
        return self._build_with_ref(published, embedder, warnings)

    def _build_with_ref(
        self, published: indexref.Published, embedder: Embedder, warnings: list[dict[str, str]]
    ) -> Loaded:
        """The index built from the live pages with ``published``'s vectors, embedding only
        the chunks it lacks, and saved when they are few (`refresh.ON_THE_FLY_CHUNKS`); else
        ranked from memory, the chunks without a vector lexically."""
        from ..gitstore.lock import repository_lock
        from . import indexer, indexref
        from .chunking import content_hash

        assert self.warm.git is not None
        wiki = self.warm.wiki()
        pages, skipped = indexer.read_pages(wiki)
        hashes = {content_hash(text) for p in pages for text in p.texts}
        missing = len(hashes) - len(published.get(hashes))
        if missing <= self.warm.refresh_bound:
            from ..errors import LlmwikiError

            try:
                with repository_lock(self.warm.git, self.warm.state, timeout=2.0):
                    indexer.build(
                        self.warm.state,
                        pages,
                        embedder,
                        skipped=skipped,
                        names=indexer.names_digest(wiki),
                        seed=published.get,
                    )
            except (LlmwikiError, OSError):
                pass  # could not be saved (a writer holds the lock): rank from memory this time
            else:
                files = self.warm.load_files()
                if files is not None:
                    self.warm.keep(files)
                    return Loaded(
                        files.store, files.lexical, files.embedder, list(files.warnings) + warnings
                    )
        vectors = store_mod.empty_vectors(published.fingerprint, published.dimensions)
        vectors.add(published.get(hashes))
        base = Store(
            published.fingerprint, published.backend, published.model, PageTable([]), vectors, ""
        )
        memory, lexical = indexer.memory_index(pages, base, skipped)
        stale = [
            {
                "code": "index-stale",
                "message": f"{missing} chunks of the wiki have no vector in {indexref.REF}; "
                "they are found lexically until `llmwiki index` embeds them",
            }
        ]
        return Loaded(memory, lexical, embedder, warnings + (stale if missing else []))

    def restore_snapshot(
        self,
        published: indexref.Published,
        warnings: list[dict[str, str]],
        prefetch: indexref.SnapshotPrefetch | None = None,
    ) -> Loaded | None:
        """The store and lexical index the ref's snapshot holds, checked and written (under the
        lock, while there is still no usable store: refrestore.py), then followed to the live
        pages like any store (only the pages that differ from the publisher's are read). None:
        refused (a warning added) or not written; the caller builds from the pages and the
        ref's vectors. A local index of a shared store that is down now is never replaced."""
        return self._restore_and_follow(
            published, prefetch, warnings, lambda code: code != "vector-store-unavailable"
        )

    def restore_shared(self, embedder: Embedder, warnings: list[dict[str, str]]) -> Loaded | None:
        """A fresh clone with a shared store configured and no local index (docs/team.md): the
        page table and lexical index CI published on refs/llmwiki/index beside the shared store
        (`indexref.payload` with ``shared``), checked and written as a store whose vectors are the
        shared store's (refrestore.py), then followed to the live pages. None when there is no
        such snapshot (or it is refused: a warning added, or cannot be written): the caller
        builds the page table from the pages."""
        from . import indexref

        if self.warm.git is None or self.warm.git.object_id(indexref.REF) is None:
            return None
        published = _read_ref(self.warm.git, embedder, warnings)
        if published is None or not published.vector_store:
            return None  # a ref of vectors: the shared store's are used, and the pages read
        configured = storetable.kind(self.warm.vector_store or "")
        if published.vector_store != configured:  # its vectors are in another kind of store
            warnings.append(
                {
                    "code": "index-ref-refused",
                    "message": f"{indexref.REF} holds the snapshot of an index whose vectors are "
                    f"in a {published.vector_store} store, and LLMWIKI_VECTOR_STORE names a "
                    f"{configured} one (docs/team.md); nothing was taken from it",
                }
            )
            return None
        return self._restore_and_follow(
            published, None, warnings, lambda code: code == "embedding-store-missing"
        )

    def _restore_and_follow(
        self,
        published: indexref.Published,
        prefetch: indexref.SnapshotPrefetch | None,
        warnings: list[dict[str, str]],
        replaces: Callable[[str], bool],
    ) -> Loaded | None:
        """Write ``published``'s snapshot as the local index, under the lock, if the store in
        place is still unusable for a reason (its error code) that ``replaces`` accepts; then
        load what is there and follow the wiki from it. None: refused (a warning added), not
        written, or not loadable."""
        from ..errors import IndexRefError, LlmwikiError
        from ..gitstore.lock import repository_lock
        from . import indexref, refrestore

        assert self.warm.git is not None
        try:
            files = indexref.read_snapshot(self.warm.git, published, prefetch)
            with repository_lock(self.warm.git, self.warm.state, timeout=2.0):
                try:
                    store_mod.load(self.warm.state, vector_store=self.warm.vector_store)
                except StoreError as exc:  # still none (or an unusable one): ours to write
                    if not replaces(exc.code):
                        return None
                    refrestore.restore(
                        self.warm.state,
                        published,
                        files,
                        self.warm.live_pages(),
                        self.warm.git.read_blobs,
                    )
        except IndexRefError as exc:
            warnings.append({"code": "index-ref-refused", "message": exc.message})
            return None
        except (LlmwikiError, OSError):
            return None
        loaded = self.warm.load_files()
        if loaded is None:
            return None
        self.warm.keep(loaded)
        return self.warm.follow(
            Loaded(loaded.store, loaded.lexical, loaded.embedder, list(loaded.warnings))
        )


def _read_ref(
    git: Git, embedder: Embedder, warnings: list[dict[str, str]]
) -> indexref.Published | None:
    """refs/llmwiki/index for ``embedder``'s model, checked (None: no ref); a refused ref is
    a warning and None."""
    from ..errors import IndexRefError
    from . import indexref

    try:
        return indexref.read(
            git, fingerprint=store_fingerprint(embedder.fingerprint), dimensions=embedder.dimension
        )
    except IndexRefError as exc:
        warnings.append({"code": "index-ref-refused", "message": exc.message})
        return None
