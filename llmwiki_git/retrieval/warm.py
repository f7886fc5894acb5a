"""What a read loaded, kept warm: the store, the lexical index and the embedder of one
project, reused by the next call of a long-lived process (the MCP server) while their files
keep their stamps and the embedder settings are the same, and brought up to date with the
live pages before every use (`follow`, retrieval/refresh.py).

One `WarmState` per `Retrieval` (service.py), so what it loaded lives on the instance: a
warm call pays for one query embedding and a search, not a new ONNX session (~0.2 s).
Writers replace the files by rename, so a re-index by any process changes a stamp and the
next call loads afresh. Nothing is kept in module globals: a new instance starts cold. A
project with no usable store starts from the published index (refseed.py), which hands
what it restored back through `keep`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import BEST_EFFORT_ERRORS, DATA_ERRORS, LexicalIndexError, StoreError
from ..gitstore.git import Git
from . import refresh
from . import store as store_mod
from .chunking import store_fingerprint
from .embedders import Embedder
from .lexical import LEXICAL_DIR, LexicalIndex
from .loaded import Loaded
from .store import Store

if TYPE_CHECKING:
    from ..wiki.model import Wiki
    from . import indexer


class WarmState:
    """The loaded store, lexical index and embedder with the file stamps and embedder
    settings they were loaded under; and following the live wiki from them."""

    def __init__(
        self,
        *,
        state: Path,
        git: Git | None,
        load_wiki: Callable[[], Wiki],
        list_pages: Callable[[], dict[str, str]] | None,
        vector_store: str | None,
        embedder: Callable[[], Embedder | None],
        embedder_key: Callable[[], tuple[object, ...]],
    ) -> None:
        self.state = state
        self.git = git
        self._load_wiki = load_wiki
        self._list_pages = list_pages  # path -> blob of the live pages: how reads notice changes
        self.vector_store = vector_store
        self._embedder = embedder
        self._embedder_key = embedder_key
        self.refresh_bound = refresh.ON_THE_FLY_CHUNKS
        self.load_error: StoreError | None = None  # why the last `load_files` found no store
        # What was loaded last, with the file stamps and embedder settings it was loaded under.
        self._warm: tuple[tuple[object, ...], tuple[object, ...], Loaded] | None = None
        # The (store, live listing) pair last found current, by identity: a long-lived listing
        # returns the same dict while no file changed (wiki/listing.py), and the warm store is
        # the same object while its files are, so a warm call skips the comparison.
        self._current: tuple[Store, Mapping[str, str]] | None = None

    def wiki(self) -> Wiki:
        """The live wiki (the work tree's pages, scans served by the checker's cache)."""
        return self._load_wiki()

    def live_pages(self) -> dict[str, str] | None:
        """Path -> blob of the live pages (None: not known here)."""
        return self._list_pages() if self._list_pages is not None else None

    def cached(self) -> Loaded | None:
        """What the files hold now: the warm copy while their stamps and the embedder
        settings are unchanged, else loaded afresh and kept. None: no usable store
        (`load_error` says why)."""
        stamps, key = self.stamps(), self._embedder_key()
        warm = self._warm
        if warm is not None and warm[0] == stamps and warm[1] == key:
            return warm[2]
        files = self.load_files()
        if files is not None:
            self._warm = (stamps, key, files)
        return files

    def keep(self, loaded: Loaded) -> None:
        """Keep ``loaded`` warm under the stamps the files have now (the caller just wrote
        or loaded them, under the lock: no other writer's files get them)."""
        self._warm = (self.stamps(), self._embedder_key(), loaded)

    def stamps(self) -> tuple[object, ...]:
        """(name, inode, mtime, size) of every file the store and lexical index load (the
        file store's vectors among them: their generation is the token inside that file)."""
        files = [self.state / store_mod.JSON_NAME, self.state / store_mod.BIN_NAME]
        try:
            files += sorted((self.state / LEXICAL_DIR).iterdir())
        except OSError:
            pass
        out: list[tuple[object, ...]] = []
        for path in files:
            try:
                st = path.stat()
            except OSError:
                out.append((path.name,))
                continue
            out.append((path.name, st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def load_files(self) -> Loaded | None:
        """The store, lexical index and embedder as their files are (None: no usable store)."""
        warnings: list[dict[str, str]] = []
        self.load_error = None
        try:
            store = store_mod.load(self.state, vector_store=self.vector_store)
        except StoreError as exc:
            self.load_error = exc
            return None
        embedder: Embedder | None = None
        if store.dimensions:
            try:
                embedder = self._embedder()
            except BEST_EFFORT_ERRORS as exc:  # a misconfigured provider degrades to lexical search
                warnings.append({"code": "embedding-degraded", "message": str(exc)})
            if (
                embedder is not None
                and store_fingerprint(embedder.fingerprint) != store.fingerprint
            ):
                warnings.append(
                    {
                        "code": "embedding-model-mismatch",
                        "message": f"the store was built with {store.fingerprint!r}, the active model is "
                        f"{store_fingerprint(embedder.fingerprint)!r}; ranking lexically until "
                        "`llmwiki index` rebuilds it",
                    }
                )
                embedder = None
        lexical: LexicalIndex | None = None
        try:
            lexical = LexicalIndex.load(self.state / LEXICAL_DIR)
            if len(lexical) != store.rows:
                raise LexicalIndexError("it does not match the embedding store")
        except LexicalIndexError as exc:
            warnings.append(
                {"code": "lexical-index-unavailable", "message": f"{exc}; run `llmwiki index`"}
            )
            lexical = None
        return Loaded(store, lexical, embedder, warnings)

    def follow(self, loaded: Loaded) -> Loaded:
        """Bring ``loaded`` up to date with the live pages (see `refresh`)."""
        if self._list_pages is None:
            return loaded
        try:
            live = self._list_pages()
        except DATA_ERRORS as exc:  # a broken git index must not stop a read: rank from the store
            loaded.warnings.append(
                {
                    "code": "index-freshness-unknown",
                    "message": f"could not list the wiki's pages ({exc}); recent edits may be missing",
                }
            )
            return loaded
        current = self._current
        if current is not None and current[0] is loaded.store and current[1] is live:
            return loaded  # this very listing was found current for this very store last call
        stale = refresh.staleness(loaded.store, live)
        if not stale:
            self._current = (loaded.store, live)
            return loaded
        if loaded.lexical is not None and loaded.lexical.updatable:
            return self._follow_by_difference(loaded, stale)
        from . import indexer

        store = loaded.store
        wiki = self._load_wiki()
        pages, skipped = indexer.read_pages(wiki)
        can_embed = loaded.embedder is not None or not store.dimensions
        planned = refresh.plan(pages, store.vectors) if store.dimensions else refresh.Plan()
        missing = planned.missing
        if (
            can_embed
            and len(missing) <= self.refresh_bound
            and self._save_refresh(
                store, pages, skipped, loaded.embedder, indexer.names_digest(wiki), planned.known
            )
        ):
            try:
                fresh = store_mod.load(self.state, vector_store=self.vector_store)
                lexical = LexicalIndex.load(self.state / LEXICAL_DIR)
            except (StoreError, LexicalIndexError):
                pass  # replaced under us: rank from memory this time
            else:
                warnings = [w for w in loaded.warnings if w["code"] != "lexical-index-unavailable"]
                return Loaded(fresh, lexical, loaded.embedder, warnings)
        memory, lexical = indexer.memory_index(pages, store, skipped)
        warnings = [w for w in loaded.warnings if w["code"] != "lexical-index-unavailable"]
        if missing:
            warnings.append(
                refresh.stale_warning(stale, len(missing), self.refresh_bound if can_embed else 0)
            )
        return Loaded(memory, lexical, loaded.embedder, warnings)

    def _follow_by_difference(self, loaded: Loaded, stale: refresh.Staleness) -> Loaded:
        """`_follow_wiki` reading only the changed pages and tokenizing only their chunks
        (`indexer.plan_update`, `LexicalIndex.updated`): the result equals a full rebuild."""
        from ..errors import LlmwikiError
        from ..gitstore.lock import repository_lock
        from . import indexer

        store, lexical = loaded.store, loaded.lexical
        assert lexical is not None
        update = indexer.plan_update(self._load_wiki(), store)
        can_embed = loaded.embedder is not None or not store.dimensions
        warnings = [w for w in loaded.warnings if w["code"] != "lexical-index-unavailable"]
        if can_embed and len(update.missing) <= self.refresh_bound:
            try:
                with repository_lock(self.git, self.state, timeout=2.0):
                    fresh = (
                        loaded.embedder.embed(list(update.missing.values()))
                        if update.missing and loaded.embedder
                        else np.zeros((0, store.dimensions), dtype=np.float32)
                    )
                    new_store, new_lexical = indexer.apply_update(update, store, lexical, fresh)
                    indexer.save_update(self.state, new_store, new_lexical)
                    # What was just written is what the next call would load: keep it warm (the
                    # stamps are taken under the lock, so no other writer's files get them).
                    self.keep(Loaded(new_store, new_lexical, loaded.embedder, list(warnings)))
            except (LlmwikiError, OSError):
                pass  # could not be saved: rank from memory this time
            else:
                return Loaded(new_store, new_lexical, loaded.embedder, warnings)
        memory, new_lexical = indexer.apply_update(update, store, lexical)
        if update.missing:
            warnings.append(
                refresh.stale_warning(
                    stale, len(update.missing), self.refresh_bound if can_embed else 0
                )
            )
        return Loaded(memory, new_lexical, loaded.embedder, warnings)

    def _save_refresh(
        self,
        store: Store,
        pages: list[indexer.IndexedPage],
        skipped: dict[str, str],
        embedder: Embedder | None,
        names: str,
        known: set[str] | None = None,
    ) -> bool:
        """Save the refreshed index under the project lock (a short wait at most: a read
        never queues behind a long `llmwiki index`). False when it could not be saved."""
        from ..errors import LlmwikiError
        from ..gitstore.lock import repository_lock
        from . import indexer

        try:
            with repository_lock(self.git, self.state, timeout=2.0):
                indexer.build(
                    self.state,
                    pages,
                    embedder,
                    skipped=skipped,
                    previous_store=store,
                    names=names,
                    vector_store=self.vector_store,
                    known=known,
                )
        except (LlmwikiError, OSError):
            return False
        return True
