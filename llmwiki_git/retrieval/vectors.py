"""The seam for vector stores: `VectorIndex`, what search, refresh, the indexer and the
services need of wherever the chunk vectors live.

Vectors are keyed by chunk content hash (``chunking.content_hash``), for one embedding model
(``fingerprint``): an unchanged chunk keeps its vector across pages, edits and clones. The
page table (which pages, which chunks, their links) and the lexical index stay in
``.llmwiki/`` and in process, whatever holds the vectors; so do the lexical ranking and the
fusion, over the dense candidates `VectorIndex.nearest` returns.

Implementations: the file store (``retrieval/filevectors.py``, ``.llmwiki/embeddings.bin``,
memory-mapped, exact) and the shared stores (`SharedIndex`), chosen by the URI's scheme in
one place (``retrieval/storetable.py``): PostgreSQL + pgvector (``retrieval/pgvectors.py``)
and SQLite (``retrieval/sqlitevectors.py``). ``store.empty_vectors``, ``store.load`` and
``storetable.open_shared`` choose the implementation; nothing above them names one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np


class ChunkRows(Protocol):
    """The rows a search ranks: every chunk of a page table, in row order (``PageTable``)."""

    @property
    def rows(self) -> int: ...
    def row_hashes(self) -> Sequence[str]: ...
    def rows_by_hash(self) -> Mapping[str, list[int]]: ...


class Neighbours:
    """The answer to ``nearest(vector, k)``: chunk hashes and their cosine with the query.
    ``complete``: every vector the index holds is among them (an exact answer for every
    chunk); ``aligned``: the rows these scores already follow, one per row (the file store's
    answer for the table it was saved with), so `over` maps nothing."""

    def __init__(
        self,
        hashes: Sequence[str],
        scores: np.ndarray,
        *,
        complete: bool,
        aligned: ChunkRows | None = None,
    ) -> None:
        self.hashes = hashes
        self.scores = scores
        self.complete = complete
        self.aligned = aligned

    def over(self, rows: ChunkRows) -> np.ndarray:
        """Each row's cosine (float32). A row whose chunk the index has no vector for scores
        0, as a zero vector would, when the answer is complete; a row left out of an
        incomplete answer (an approximate top-k) -inf, below every candidate."""
        if self.aligned is rows:
            return self.scores
        out = np.full(rows.rows, 0.0 if self.complete else -np.inf, dtype=np.float32)
        where = rows.rows_by_hash()
        for chunk_hash, score in zip(self.hashes, self.scores.tolist()):
            found = where.get(chunk_hash)
            if found:
                out[found] = score
        return out


class VectorIndex(Protocol):
    """Chunk vectors of one embedding model, keyed by chunk content hash."""

    @property
    def fingerprint(self) -> str:
        """The model the vectors were made with (``chunking.store_fingerprint``): vectors of
        two models are never mixed."""
        ...

    @property
    def dimensions(self) -> int:
        """The width of a vector (0: a lexical-only store, no vectors)."""
        ...

    @property
    def generation(self) -> str:
        """Changes whenever the vectors do: what a reader keeps warm state by."""
        ...

    def __len__(self) -> int:
        """How many chunks have a vector."""
        ...

    def get(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The vectors of those of ``hashes`` the index holds (reused instead of embedded)."""
        ...

    def known(self, hashes: Iterable[str]) -> set[str]:
        """Those of ``hashes`` the index holds a vector for (`get` without the vectors: a
        database store answers it without sending them)."""
        ...

    def add(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Hold these vectors (chunk hash -> float32 unit vector), in batches as given. The
        file store keeps them in memory until a store built from `for_rows` is saved."""
        ...

    def remove(self, hashes: Iterable[str]) -> None:
        """Stop holding the vectors of chunks no page has any more."""
        ...

    def nearest(self, vector: np.ndarray, k: int) -> Neighbours:
        """The ``k`` chunks nearest ``vector`` (a unit query vector) by cosine, in no particular
        order; fewer when the index holds fewer (or, approximate, finds fewer)."""
        ...

    def for_rows(self, rows: ChunkRows) -> VectorIndex:
        """The index as a search over ``rows`` uses it, held in memory (nothing is written):
        the file store lays its vectors out in the rows' order (zeros where it has none)."""
        ...

    def problem(self) -> str | None:
        """Why the vectors cannot be trusted (None: they can): bytes changed since they were
        written, NaN or infinite values. Reads every vector: run before reusing them."""
        ...


@runtime_checkable
class SharedIndex(VectorIndex, Protocol):
    """A `VectorIndex` every clone, branch and worktree shares (``LLMWIKI_VECTOR_STORE``,
    storetable.py), plus the *overlay*: vectors this process embedded and could not write
    (a role that may only read), held in memory and saved in ``.llmwiki/embeddings.bin``.
    Nothing is ever removed from the shared part (another branch may hold the chunk)."""

    kind: str  # what ``embeddings.json`` and ``index.json`` record as ``vectorStore``
    label: str  # how messages name the store (storetable.display: never a password)
    overlay: dict[str, np.ndarray]
    read_only: bool  # a write was refused for want of privilege: new vectors go to the overlay
    may_create: bool  # `llmwiki index`: the first write makes the model's table
    overwrite: bool  # `llmwiki index --full`: a write replaces the vectors it holds

    def holds_model(self) -> bool:
        """Whether the store has a place for this model's vectors (it held some once)."""
        ...

    def describe(self) -> str:
        """One line for `llmwiki index`: where the vectors are, how they are searched."""
        ...

    def close(self) -> None:
        """Let go of the store (its connection): the index is no longer used."""
        ...


class SharedStore(SharedIndex):
    """What every `SharedIndex` implementation holds alike: one model's table (None until
    its first write makes it), the overlay and the write flags, and the protocol's parts
    that follow from them alone. An implementation adds its database: ``write``, ``nearest``,
    ``shared_count``, what the table holds of some hashes (``_table_vectors``,
    ``_table_known``) and a view of itself (``_view``)."""

    def __init__(
        self,
        fingerprint: str,
        dimensions: int,
        table: str | None,
        generation: int,
        overlay: Mapping[str, np.ndarray] | None,
        label: str,
    ) -> None:
        self._fingerprint = fingerprint
        self._dimensions = dimensions
        self.table = table
        self._generation = generation
        self.overlay: dict[str, np.ndarray] = dict(overlay or {})
        self.read_only = False  # set when a write was refused for want of privilege
        self.may_create = False  # `llmwiki index`: the first write makes the table
        self.overwrite = False  # `llmwiki index --full`: a write replaces the vectors it holds
        self.label = label

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def holds_model(self) -> bool:
        return self.table is not None

    def __len__(self) -> int:
        return self.shared_count() + len(self.overlay)  # the overlay holds what the table does not

    def shared_count(self) -> int:
        """How many vectors the table holds."""
        raise NotImplementedError

    def get(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        out = self._table_vectors(wanted) if self.table is not None else {}
        for chunk_hash in wanted:
            if chunk_hash not in out and chunk_hash in self.overlay:
                out[chunk_hash] = self.overlay[chunk_hash]
        return out

    def known(self, hashes: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        out = {h for h in wanted if h in self.overlay}
        if self.table is not None:
            out.update(self._table_known(wanted))
        return out

    def add(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.write(vectors)

    def write(
        self, vectors: Mapping[str, np.ndarray], before_commit: Callable[[], object] | None = None
    ) -> None:
        """`add` in one transaction; what this process may not write stays in the overlay.
        ``before_commit``: run inside the transaction (tests)."""
        raise NotImplementedError

    def remove(self, hashes: Iterable[str]) -> None:
        """Only the overlay forgets: the table is shared with every branch and clone."""
        for chunk_hash in hashes:
            self.overlay.pop(chunk_hash, None)

    def for_rows(self, rows: ChunkRows) -> VectorIndex:
        """The same table, with the overlay narrowed to ``rows``' chunks (what is saved)."""
        wanted = rows.rows_by_hash()
        view = self._view({h: v for h, v in self.overlay.items() if h in wanted})
        view.read_only, view.may_create, view.overwrite = (
            self.read_only,
            self.may_create,
            self.overwrite,
        )
        return view

    def _table_vectors(self, wanted: list[str]) -> dict[str, np.ndarray]:
        """The vectors the table holds of ``wanted`` (distinct hashes; the table exists)."""
        raise NotImplementedError

    def _table_known(self, wanted: list[str]) -> set[str]:
        """Those of ``wanted`` the table holds (`_table_vectors` without the vectors)."""
        raise NotImplementedError

    def _view(self, overlay: dict[str, np.ndarray]) -> SharedStore:
        """A store over the same database and table with this overlay."""
        raise NotImplementedError
