"""The page table of the embedding store, kept as columns.

A fresh `llmwiki context` on a 10,000-page store needs every page's path and blob (the
freshness check), every page id (to find the hits' entries) and the rows each page owns,
but the titles, summaries, chunk hashes and links of a handful of pages only. The table
therefore holds each column as it was read (a list, or one NUL-joined string split on
first use) and makes a `PageEntry` only for the pages asked for.

Column encoding (the sidecar ``embeddings.pages``, see store.py): each string column is the
UTF-8 of its values joined by NUL; each integer column is int64 little-endian. A value
holding a NUL cannot be encoded: such a store is written without the sidecar.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

import numpy as np

from ..errors import StoreError

SEP = "\0"
STRING_COLUMNS = ("ids", "paths", "blobs", "titles", "summaries", "hashes", "links", "dangling")
INT_COLUMNS = ("firstRows", "hashCounts", "linkCounts", "danglingCounts")


class PageEntry(NamedTuple):
    """One page of the store. A NamedTuple, and the JSON lists are kept as they are parsed:
    frozen dataclasses with tuple copies made loading 10,000 entries slower on the `context`
    path (benchmarks/retrieval.py measures that path)."""

    page_id: str
    path: str
    blob: str
    title: str
    summary: str
    first_row: int
    hashes: Sequence[str]
    links: Sequence[str] = ()  # page ids this page links to (resolved at index time)
    dangling: Sequence[str] = ()  # targets of its links that resolved to nothing

    def to_json(self) -> dict[str, Any]:
        return {"pageId": self.page_id, "path": self.path, "blob": self.blob, "title": self.title,
                "summary": self.summary, "firstRow": self.first_row, "hashes": list(self.hashes),
                "links": list(self.links), "dangling": list(self.dangling)}


def corrupt(problem: str) -> StoreError:
    """The error for columns that do not describe a page table (a damaged or forged sidecar)."""
    return StoreError(f".llmwiki/embeddings.pages is corrupt ({problem})", "embedding-store-corrupt")


class _Strings:
    """One string column: the joined text, counted now (in C) and split on first use (a
    column a call does not use is never split)."""

    __slots__ = ("_joined", "_items", "count")

    def __init__(self, joined: str, count: int) -> None:
        found = joined.count(SEP) + 1 if joined or count == 1 else 0
        if found != count:
            raise corrupt(f"a column holds {found} values, {count} expected")
        self._joined: str | None = joined
        self._items: list[str] | None = None
        self.count = count

    def items(self) -> list[str]:
        if self._items is None:
            assert self._joined is not None
            self._items = self._joined.split(SEP) if self.count else []
            self._joined = None
        return self._items


def _starts(counts: np.ndarray) -> np.ndarray:
    """Offsets of each page's first item in a flat column (one more than pages)."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


class PageTable(Sequence[PageEntry]):
    """The store's pages, in store order. Built either from entries (the indexer) or from
    columns (a store read from disk); entries are made on demand and kept."""

    def __init__(self, entries: list[PageEntry] | None = None, *,
                 columns: dict[str, _Strings] | None = None, ints: dict[str, np.ndarray] | None = None) -> None:
        self._entries = entries
        self._columns = columns or {}
        self._ints = ints or {}
        self._made: dict[int, PageEntry] = {}
        self._starts: dict[str, np.ndarray] = {}
        self._positions: dict[str, int] | None = None
        self._owner: list[int] | None = None

    @classmethod
    def decode(cls, columns: Mapping[str, str], ints: Mapping[str, np.ndarray]) -> PageTable:
        """A table from its encoded columns; StoreError when they do not fit together."""
        pages = len(ints["firstRows"])
        if any(len(ints[name]) != pages for name in INT_COLUMNS):
            raise corrupt("the integer columns differ in length")
        if any(int(ints[name].min(initial=0)) < 0 for name in ("hashCounts", "linkCounts", "danglingCounts")):
            raise corrupt("a negative count")
        counts = {"hashes": int(ints["hashCounts"].sum()), "links": int(ints["linkCounts"].sum()),
                  "dangling": int(ints["danglingCounts"].sum())}
        strings = {name: _Strings(columns[name], counts.get(name, pages)) for name in STRING_COLUMNS}
        return cls(columns=strings, ints=dict(ints))

    def encode(self) -> tuple[dict[str, str], dict[str, np.ndarray]] | None:
        """The columns to write (None: a value holds a NUL and cannot be encoded)."""
        entries = list(self)
        strings = {
            "ids": [e.page_id for e in entries], "paths": [e.path for e in entries],
            "blobs": [e.blob for e in entries], "titles": [e.title for e in entries],
            "summaries": [e.summary for e in entries], "hashes": [h for e in entries for h in e.hashes],
            "links": [t for e in entries for t in e.links], "dangling": [t for e in entries for t in e.dangling],
        }
        joined = {name: SEP.join(values) for name, values in strings.items()}
        if any(text.count(SEP) != max(len(strings[name]) - 1, 0) for name, text in joined.items()):
            return None
        ints = {name: np.array(values, dtype="<i8") for name, values in (
            ("firstRows", [e.first_row for e in entries]), ("hashCounts", [len(e.hashes) for e in entries]),
            ("linkCounts", [len(e.links) for e in entries]), ("danglingCounts", [len(e.dangling) for e in entries]))}
        return joined, ints

    # -- columns --------------------------------------------------------------------------

    def _column(self, name: str) -> list[str]:
        return self._columns[name].items()

    def _start(self, counts: str) -> np.ndarray:
        if counts not in self._starts:
            self._starts[counts] = _starts(self._ints[counts])
        return self._starts[counts]

    def ids(self) -> list[str]:
        if not self._columns:
            assert self._entries is not None
            return [e.page_id for e in self._entries]
        return self._column("ids")

    def path_blobs(self) -> dict[str, str]:
        """Path -> blob id of every page."""
        if not self._columns:
            assert self._entries is not None
            return {e.path: e.blob for e in self._entries}
        return dict(zip(self._column("paths"), self._column("blobs")))

    def first_rows(self) -> np.ndarray:
        if not self._columns:
            assert self._entries is not None
            return np.fromiter((e.first_row for e in self._entries), dtype=np.int64, count=len(self._entries))
        return self._ints["firstRows"]

    def hash_counts(self) -> np.ndarray:
        if not self._columns:
            assert self._entries is not None
            return np.fromiter((len(e.hashes) for e in self._entries), dtype=np.int64, count=len(self._entries))
        return self._ints["hashCounts"]

    def positions(self) -> dict[str, int]:
        """Page id -> position (built once)."""
        if self._positions is None:
            self._positions = {page_id: i for i, page_id in enumerate(self.ids())}
        return self._positions

    def row_owner(self) -> list[int]:
        """Position of the page owning every row (built once)."""
        if self._owner is None:
            counts, first = self.hash_counts(), self.first_rows()
            rows = int(counts.sum())
            owner = np.zeros(rows, dtype=np.int64)
            if rows:
                # row of item k of page p: first[p] + (k - start[p])
                at = np.repeat(first - _starts(counts)[:-1], counts) + np.arange(rows, dtype=np.int64)
                owner[at] = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
            self._owner = owner.tolist()
        return self._owner

    def linking_to(self, targets: set[str]) -> dict[str, list[str]]:
        """Pages whose links name each of ``targets``, in store order."""
        found: dict[str, list[str]] = {t: [] for t in targets}
        if not self._columns:
            assert self._entries is not None
            for page in self._entries:
                if not page.links or targets.isdisjoint(page.links):
                    continue
                for target in dict.fromkeys(page.links):
                    if target in found:
                        found[target].append(page.page_id)
            return found
        links = self._column("links")
        at = [i for i, target in enumerate(links) if target in targets]
        if not at:
            return found
        starts = self._start("linkCounts")
        owners = (np.searchsorted(starts, np.array(at, dtype=np.int64), side="right") - 1).tolist()
        ids = self.ids()
        seen: set[tuple[str, int]] = set()
        for position, page in zip(at, owners):
            key = (links[position], page)
            if key not in seen:
                seen.add(key)
                found[links[position]].append(ids[page])
        return found

    # -- entries --------------------------------------------------------------------------

    def __len__(self) -> int:
        if not self._columns:
            assert self._entries is not None
            return len(self._entries)
        return len(self._ints["firstRows"])

    def _make(self, i: int) -> PageEntry:
        made = self._made.get(i)
        if made is None:
            ints = self._ints

            def span(column: str, counts: str) -> list[str]:
                start = int(self._start(counts)[i])
                return self._column(column)[start : start + int(ints[counts][i])]

            made = self._made[i] = PageEntry(
                self._column("ids")[i], self._column("paths")[i], self._column("blobs")[i],
                self._column("titles")[i], self._column("summaries")[i], int(ints["firstRows"][i]),
                span("hashes", "hashCounts"), span("links", "linkCounts"), span("dangling", "danglingCounts"))
        return made

    @overload
    def __getitem__(self, i: int) -> PageEntry: ...

    @overload
    def __getitem__(self, i: slice) -> list[PageEntry]: ...

    def __getitem__(self, i: int | slice) -> PageEntry | list[PageEntry]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if self._entries is not None:
            return self._entries[i]
        n = len(self)
        position = int(i)
        if position < 0:
            position += n
        if not 0 <= position < n:
            raise IndexError(i)
        return self._make(position)

    def __iter__(self) -> Iterator[PageEntry]:
        if self._entries is None:
            self._entries = [self._make(i) for i in range(len(self))]
            self._made.clear()
        return iter(self._entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PageTable):
            return list(self) == list(other)
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PageTable({len(self)} pages)"


class EntriesById(Mapping[str, PageEntry]):
    """Page id -> entry over a table, making entries only for the ids looked up."""

    def __init__(self, table: PageTable) -> None:
        self._table = table
        self._positions = table.positions()

    def __getitem__(self, page_id: str) -> PageEntry:
        return self._table[self._positions[page_id]]

    def __contains__(self, page_id: object) -> bool:
        return page_id in self._positions

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)
