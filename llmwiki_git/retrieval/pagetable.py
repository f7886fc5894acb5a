"""The page table of the embedding store, kept as columns.

A fresh `llmwiki context` on a 10,000-page store needs every page's path and blob (the
freshness check) and every page id, but the titles, summaries, chunk hashes and links of a
handful of pages only. The table therefore keeps the ids, paths and blobs as lists (split
from NUL-joined text) and every other string column as one text with the end offset of each
value, and makes a `PageEntry` only for the pages asked for. The sidecar
``embeddings.pages`` (store.py, docs/formats.md) holds these sections; a table built by the
indexer holds its entries instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

import numpy as np

from ..errors import StoreError

SEP = "\0"
SPLIT_COLUMNS = ("ids", "paths", "blobs")  # needed whole by every call: NUL-joined, split when read
SLICED_COLUMNS = (
    "titles",
    "summaries",
    "hashes",
    "links",
    "dangling",
    "linkTargets",
)  # a few items per call
COUNTS = {"hashes": "hashCounts", "links": "linkCounts", "dangling": "danglingCounts"}
INT_COLUMNS = ("firstRows", "hashCounts", "linkCounts", "danglingCounts")
# The link graph reversed: every distinct link target (``linkTargets``), and for each, how
# many pages link to it (``linkSourceCounts``) and which (``linkSources``, page positions in
# store order): a page's incoming links without scanning every page's links.
REVERSE_COLUMNS = ("linkSourceCounts", "linkSources")
SECTIONS = (
    SPLIT_COLUMNS
    + SLICED_COLUMNS
    + tuple(f"{name}Ends" for name in SLICED_COLUMNS)
    + INT_COLUMNS
    + REVERSE_COLUMNS
)


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
        return {
            "pageId": self.page_id,
            "path": self.path,
            "blob": self.blob,
            "title": self.title,
            "summary": self.summary,
            "firstRow": self.first_row,
            "hashes": list(self.hashes),
            "links": list(self.links),
            "dangling": list(self.dangling),
        }


def corrupt(problem: str) -> StoreError:
    """The error for columns that do not describe a page table (a damaged or forged sidecar)."""
    return StoreError(
        f".llmwiki/embeddings.pages is corrupt ({problem})", "embedding-store-corrupt"
    )


def _split(joined: str, count: int) -> list[str]:
    items = joined.split(SEP) if count or joined else []
    if len(items) != count:
        raise corrupt(f"a column holds {len(items)} values, {count} expected")
    return items


class _Sliced:
    """A string column as one text and the end offset of every item: item ``i`` is
    ``text[ends[i - 1]:ends[i]]``, read without splitting the column."""

    __slots__ = ("text", "ends", "_items")

    def __init__(self, text: str, ends: np.ndarray, count: int) -> None:
        if len(ends) != count:
            raise corrupt(f"a column has {len(ends)} offsets, {count} expected")
        if count and (
            int(ends[0]) < 0 or int(ends[-1]) != len(text) or bool((ends[1:] < ends[:-1]).any())
        ):
            raise corrupt("a column's offsets do not fit its text")
        if not count and text:
            raise corrupt("a column holds text but no values")
        self.text, self.ends = text, ends
        self._items: list[str] | None = None

    def span(self, start: int, stop: int) -> list[str]:
        """Items ``start .. stop - 1``."""
        if self._items is not None:
            return self._items[start:stop]
        if stop <= start:
            return []
        bounds = [int(self.ends[start - 1]) if start else 0, *self.ends[start:stop].tolist()]
        return [self.text[a:b] for a, b in zip(bounds, bounds[1:])]

    def items(self) -> list[str]:
        if self._items is None:
            self._items = self.span(0, len(self.ends))
        return self._items

    def positions_of(self, value: str) -> list[int]:
        """Indexes of the items equal to ``value`` (a scan of the text, in C)."""
        if not value:
            return []
        text, found = self.text, []
        at = text.find(value)
        while at >= 0:
            found.append(at)
            at = text.find(value, at + 1)
        if not found:
            return []
        where = np.array(found, dtype=np.int64)
        i = np.searchsorted(
            self.ends, where, side="right"
        )  # the item holding each match's first character
        inside = i < len(self.ends)
        where, i = where[inside], i[inside]
        starts = np.where(i > 0, self.ends[np.maximum(i - 1, 0)], 0)
        whole = (starts == where) & (self.ends[i] == where + len(value))
        return i[whole].tolist()  # type: ignore[no-any-return]

    @staticmethod
    def encode(values: list[str]) -> tuple[bytes, bytes]:
        ends = np.cumsum(np.fromiter(map(len, values), dtype="<i8", count=len(values)), dtype="<i8")
        return "".join(values).encode("utf-8", "surrogatepass"), ends.astype("<i8").tobytes()


def _starts(counts: np.ndarray) -> np.ndarray:
    """Offsets of each page's first item in a flat column (one more than pages)."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


class PageTable(Sequence[PageEntry]):
    """The store's pages, in store order. Built either from entries (the indexer) or from
    columns (a store read from disk); entries are made on demand and kept."""

    def __init__(
        self,
        entries: list[PageEntry] | None = None,
        *,
        split: dict[str, list[str]] | None = None,
        sliced: dict[str, _Sliced] | None = None,
        ints: dict[str, np.ndarray] | None = None,
    ) -> None:
        self._entries = entries
        self._split = split or {}
        self._sliced = sliced or {}
        self._ints = ints or {}
        self._columns = bool(self._split)  # read from columns (else: built from entries)
        self._made: dict[int, PageEntry] = {}
        self._starts: dict[str, np.ndarray] = {}
        self._positions: dict[str, int] | None = None
        self._owner: list[int] | None = None
        self._owner_array: np.ndarray | None = None
        self._rows: int = -1
        self._row_hashes: list[str] | None = None
        self._rows_by_hash: dict[str, list[int]] | None = None

    @classmethod
    def decode(cls, sections: Mapping[str, memoryview]) -> PageTable:
        """A table from its encoded sections; StoreError when they do not fit together;
        ValueError or KeyError for a section missing or of the wrong size."""
        ints = {name: np.frombuffer(sections[name], dtype="<i8") for name in INT_COLUMNS}
        pages = len(ints["firstRows"])
        if any(len(ints[name]) != pages for name in INT_COLUMNS):
            raise corrupt("the integer columns differ in length")
        if any(int(ints[name].min(initial=0)) < 0 for name in COUNTS.values()):
            raise corrupt("a negative count")
        reverse = {name: np.frombuffer(sections[name], dtype="<i8") for name in REVERSE_COLUMNS}
        sources, counts = reverse["linkSources"], reverse["linkSourceCounts"]
        if (
            int(counts.min(initial=0)) < 0
            or int(counts.sum()) != len(sources)
            or (len(sources) and (int(sources.min()) < 0 or int(sources.max()) >= pages))
        ):
            raise corrupt("the reversed link graph does not fit the pages")
        ints.update(reverse)
        split = {
            name: _split(str(sections[name], "utf-8", "surrogatepass"), pages)
            for name in SPLIT_COLUMNS
        }
        expected = {
            **{name: int(ints[column].sum()) for name, column in COUNTS.items()},
            "linkTargets": len(counts),
        }
        sliced = {
            name: _Sliced(
                str(sections[name], "utf-8", "surrogatepass"),
                np.frombuffer(sections[f"{name}Ends"], dtype="<i8"),
                expected.get(name, pages),
            )
            for name in SLICED_COLUMNS
        }
        return cls(split=split, sliced=sliced, ints=ints)

    def encode(self) -> dict[str, bytes] | None:
        """The sections to write (None: a page id, path or blob holds a NUL)."""
        entries = list(self)
        out: dict[str, bytes] = {}
        for name, values in (
            ("ids", [e.page_id for e in entries]),
            ("paths", [e.path for e in entries]),
            ("blobs", [e.blob for e in entries]),
        ):
            joined = SEP.join(values)
            if joined.count(SEP) != max(len(values) - 1, 0):
                return None
            out[name] = joined.encode("utf-8", "surrogatepass")
        links = [t for e in entries for t in e.links]
        link_counts = np.fromiter(
            (len(e.links) for e in entries), dtype=np.int64, count=len(entries)
        )
        # The reversed graph: each distinct target in order of first appearance, the pages
        # linking to it in store order, each once -- as (target, page) pairs sorted in numpy.
        # (dict.fromkeys and map run in C: a generator over 444,000 links at 50,000 pages
        # cost a second; np.unique's hashing another, where a sort is a tenth of it.)
        codes = {t: i for i, t in enumerate(dict.fromkeys(links))}
        code = np.fromiter(map(codes.__getitem__, links), dtype=np.int64, count=len(links))
        pages = max(len(entries), 1)
        pairs = np.sort(
            code * pages + np.repeat(np.arange(len(entries), dtype=np.int64), link_counts)
        )
        if len(pairs):
            pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
        for name, values in (
            ("titles", [e.title for e in entries]),
            ("summaries", [e.summary for e in entries]),
            ("hashes", [h for e in entries for h in e.hashes]),
            ("links", links),
            ("dangling", [t for e in entries for t in e.dangling]),
            ("linkTargets", list(codes)),
        ):
            out[name], out[f"{name}Ends"] = _Sliced.encode(values)
        out["linkSourceCounts"] = (
            np.bincount(pairs // pages, minlength=len(codes)).astype("<i8").tobytes()
        )
        out["linkSources"] = (pairs % pages).astype("<i8").tobytes()
        out["linkCounts"] = link_counts.astype("<i8").tobytes()
        for name, numbers in (
            ("firstRows", [e.first_row for e in entries]),
            ("hashCounts", [len(e.hashes) for e in entries]),
            ("danglingCounts", [len(e.dangling) for e in entries]),
        ):
            out[name] = np.array(numbers, dtype="<i8").tobytes()
        return {name: out[name] for name in SECTIONS}

    # -- columns --------------------------------------------------------------------------

    def _start(self, counts: str) -> np.ndarray:
        if counts not in self._starts:
            self._starts[counts] = _starts(self._ints[counts])
        return self._starts[counts]

    def _all(self) -> list[PageEntry]:
        assert self._entries is not None
        return self._entries

    def ids(self) -> list[str]:
        return self._split["ids"] if self._columns else [e.page_id for e in self._all()]

    def path_blobs(self) -> dict[str, str]:
        """Path -> blob id of every page."""
        if self._columns:
            return dict(zip(self._split["paths"], self._split["blobs"]))
        return {e.path: e.blob for e in self._all()}

    def first_rows(self) -> np.ndarray:
        if self._columns:
            return self._ints["firstRows"]
        return np.fromiter((e.first_row for e in self._all()), dtype=np.int64, count=len(self))

    def hash_counts(self) -> np.ndarray:
        if self._columns:
            return self._ints["hashCounts"]
        return np.fromiter((len(e.hashes) for e in self._all()), dtype=np.int64, count=len(self))

    def page_id(self, i: int) -> str:
        """The id of page ``i`` (no entry made)."""
        return self._split["ids"][i] if self._columns else self._all()[i].page_id

    def first_row(self, i: int) -> int:
        """The first row of page ``i`` (no entry made)."""
        return int(self._ints["firstRows"][i]) if self._columns else self._all()[i].first_row

    def positions(self) -> dict[str, int]:
        """Page id -> position (built once)."""
        if self._positions is None:
            self._positions = {page_id: i for i, page_id in enumerate(self.ids())}
        return self._positions

    @property
    def rows(self) -> int:
        """How many chunks (rows) the pages have (counted once: a warm server asks every call)."""
        if self._rows < 0:
            self._rows = int(self.hash_counts().sum())
        return self._rows

    def row_hashes(self) -> list[str]:
        """The chunk hash of every row, in row order (built once)."""
        if self._row_hashes is None:
            counts, first = self.hash_counts(), self.first_rows()
            flat = (
                self._sliced["hashes"].items()
                if self._columns
                else [h for e in self._all() for h in e.hashes]
            )
            starts = _starts(counts)[:-1]
            if np.array_equal(first, starts):  # page after page, as the indexer writes them
                self._row_hashes = list(flat)
            else:
                out = [""] * self.rows
                for start, row, count in zip(starts.tolist(), first.tolist(), counts.tolist()):
                    out[row : row + count] = flat[start : start + count]
                self._row_hashes = out
        return self._row_hashes

    def rows_by_hash(self) -> dict[str, list[int]]:
        """Chunk hash -> the rows holding it (built once)."""
        if self._rows_by_hash is None:
            where: dict[str, list[int]] = {}
            for row, chunk_hash in enumerate(self.row_hashes()):
                where.setdefault(chunk_hash, []).append(row)
            self._rows_by_hash = where
        return self._rows_by_hash

    def row_owner(self) -> list[int]:
        """Position of the page owning every row (built once)."""
        if self._owner is None:
            self._owner = self.owner_array().tolist()
        return self._owner

    def owner_array(self) -> np.ndarray:
        """:meth:`row_owner` as an int64 array (built once; searching takes it whole)."""
        if self._owner_array is None:
            counts, first = self.hash_counts(), self.first_rows()
            rows = int(counts.sum())
            owner = np.zeros(rows, dtype=np.int64)
            if rows:
                # row of item k of page p: first[p] + (k - start[p])
                at = np.repeat(first - _starts(counts)[:-1], counts) + np.arange(
                    rows, dtype=np.int64
                )
                owner[at] = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
            self._owner_array = owner
        return self._owner_array

    def linking_to(self, targets: set[str]) -> dict[str, list[str]]:
        """Pages whose links name each of ``targets``, in store order (each page once)."""
        found: dict[str, list[str]] = {t: [] for t in targets}
        if not self._columns:
            for page in self._all():
                if not page.links or targets.isdisjoint(page.links):
                    continue
                for target in dict.fromkeys(page.links):
                    if target in found:
                        found[target].append(page.page_id)
            return found
        starts, sources, ids = (
            self._start("linkSourceCounts"),
            self._ints["linkSources"],
            self.ids(),
        )
        for target in targets:
            for k in self._sliced["linkTargets"].positions_of(
                target
            ):  # distinct targets: one match at most
                found[target] = [
                    ids[page] for page in sources[int(starts[k]) : int(starts[k + 1])].tolist()
                ]
        return found

    # -- entries --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._ints["firstRows"]) if self._columns else len(self._all())

    def _make(self, i: int) -> PageEntry:
        made = self._made.get(i)
        if made is None:
            ints, sliced, split = self._ints, self._sliced, self._split

            def span(column: str) -> list[str]:
                start = int(self._start(COUNTS[column])[i])
                return sliced[column].span(start, start + int(ints[COUNTS[column]][i]))

            made = self._made[i] = PageEntry(
                split["ids"][i],
                split["paths"][i],
                split["blobs"][i],
                sliced["titles"].span(i, i + 1)[0],
                sliced["summaries"].span(i, i + 1)[0],
                int(ints["firstRows"][i]),
                span("hashes"),
                span("links"),
                span("dangling"),
            )
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
            self._entries = self._make_all()
            self._made.clear()
        return iter(self._entries)

    def _make_all(self) -> list[PageEntry]:
        """Every entry (equal to `_make` of each), the columns converted once: `_make` page
        by page costs ~34 us an entry in numpy scalars, a third of a second at 10,000 pages,
        which `llmwiki index` by difference pays when it walks the old table."""
        ints, sliced, split = self._ints, self._sliced, self._split
        columns = {name: sliced[name].items() for name in COUNTS}
        starts = {name: self._start(count).tolist() for name, count in COUNTS.items()}
        titles, summaries = sliced["titles"].items(), sliced["summaries"].items()
        ids, paths, blobs, first = (
            split["ids"],
            split["paths"],
            split["blobs"],
            ints["firstRows"].tolist(),
        )
        hashes, links, dangling = columns["hashes"], columns["links"], columns["dangling"]
        at_h, at_l, at_d = starts["hashes"], starts["links"], starts["dangling"]
        return [
            PageEntry(
                ids[i],
                paths[i],
                blobs[i],
                titles[i],
                summaries[i],
                first[i],
                hashes[at_h[i] : at_h[i + 1]],
                links[at_l[i] : at_l[i + 1]],
                dangling[at_d[i] : at_d[i + 1]],
            )
            for i in range(len(first))
        ]

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
