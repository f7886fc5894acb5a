"""The file store's vectors (the first `VectorIndex`): a float32 matrix whose row ``i`` is
the vector of row ``i`` of the page table it was saved with (``.llmwiki/embeddings.bin``,
memory-mapped by ``store.load``). Exact: ``nearest`` scores every row with one
matrix-vector product, in the table's row order, so the search maps nothing."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

import numpy as np

from .vectors import ChunkRows, Neighbours, VectorIndex


def vectors_digest(vectors: np.ndarray) -> str:
    """sha256 of the vectors as stored (float32 little-endian, row-major)."""
    # Hashed in place (a byte view of the contiguous array), not through a copy from
    # `tobytes`: 79 MB at 10,000 pages, copied once per digest.
    return hashlib.sha256(
        np.ascontiguousarray(vectors, dtype="<f4").reshape(-1).view(np.uint8).data
    ).hexdigest()


class _RowHashes(Sequence[str]):
    """The chunk hash of every row, made from the table only when asked (a search that
    maps nothing never builds the list)."""

    def __init__(self, rows: ChunkRows) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return self._rows.rows

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        return self._rows.row_hashes()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows.row_hashes())


class FileVectors:
    """``matrix`` (rows x dimensions, float32), one row per row of ``rows``. ``digest``: the
    sha256 recorded when it was written ("" unknown); ``label``: how messages name it."""

    def __init__(
        self,
        matrix: np.ndarray,
        rows: ChunkRows,
        fingerprint: str,
        *,
        generation: str = "",
        digest: str = "",
        label: str = "the vectors",
    ) -> None:
        self.matrix = matrix
        self._rows = rows
        self._fingerprint = fingerprint
        self._generation = generation or f"memory-{secrets.token_hex(8)}"
        self._digest = digest
        self._label = label
        self._added: dict[str, np.ndarray] = {}
        self._removed: set[str] = set()
        self._first: dict[str, int] | None = None
        self._checked: tuple[str | None] | None = None  # `problem`'s answer, once found

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def dimensions(self) -> int:
        width = int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0
        if not width and self._added:  # an HTTP model tells its width only by answering
            return len(next(iter(self._added.values())))
        return width

    @property
    def generation(self) -> str:
        return self._generation

    def _first_rows(self) -> dict[str, int]:
        """Chunk hash -> the first row holding it (built once)."""
        if self._first is None:
            first: dict[str, int] = {}
            for row, chunk_hash in enumerate(self._rows.row_hashes()):
                first.setdefault(chunk_hash, row)
            self._first = first
        return self._first

    def __len__(self) -> int:
        if not self.dimensions:
            return 0
        return len((self._first_rows().keys() | self._added.keys()) - self._removed)

    def get(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        if not self.dimensions:
            return out
        first = self._first_rows() if self.matrix.shape[0] else {}
        stored: dict[str, int] = {}
        for chunk_hash in hashes:
            if chunk_hash in self._removed:
                continue
            vector = self._added.get(chunk_hash)
            if vector is not None:
                out[chunk_hash] = vector
                continue
            row = first.get(chunk_hash)
            if row is not None:
                stored[chunk_hash] = row
        if stored:  # one gather from the (memory-mapped) matrix, not a slice per chunk
            block = np.asarray(
                self.matrix[np.fromiter(stored.values(), dtype=np.int64, count=len(stored))]
            )
            out.update(zip(stored, block))
        return out

    def known(self, hashes: Iterable[str]) -> set[str]:
        # Not `set(self.get(hashes))`: that gathers every vector from the file (0.3 s for a
        # 10,000-page wiki's 79 MB) to answer a question the row map answers.
        if not self.dimensions:
            return set()
        first = self._first_rows() if self.matrix.shape[0] else {}
        return {h for h in hashes if (h in self._added or h in first) and h not in self._removed}

    def add(self, vectors: Mapping[str, np.ndarray]) -> None:
        self._added.update(vectors)
        self._removed.difference_update(vectors)

    def remove(self, hashes: Iterable[str]) -> None:
        for chunk_hash in hashes:
            self._added.pop(chunk_hash, None)
            self._removed.add(chunk_hash)

    def nearest(self, vector: np.ndarray, k: int) -> Neighbours:
        """Every row scored (the rows of the table it was saved with; vectors added since join
        a `for_rows` view); with ``k`` below the row count, the ``k`` best."""
        with np.errstate(all="ignore"):
            scores = np.asarray(self.matrix @ vector, dtype=np.float32)
        if k >= scores.shape[0]:
            return Neighbours(_RowHashes(self._rows), scores, complete=True, aligned=self._rows)
        top = (
            np.argpartition(-scores, max(k - 1, 0))[: max(k, 0)]
            if k > 0
            else np.zeros(0, dtype=np.int64)
        )
        hashes = self._rows.row_hashes()
        return Neighbours([hashes[i] for i in top.tolist()], scores[top], complete=False)

    def for_rows(self, rows: ChunkRows) -> VectorIndex:
        if rows is self._rows and not self._added and not self._removed:
            return self
        hashes = rows.row_hashes()
        dims = self.dimensions
        matrix = np.zeros((len(hashes), dims), dtype=np.float32)
        if dims:
            found = self.get(hashes)
            for row, chunk_hash in enumerate(hashes):
                vector = found.get(chunk_hash)
                if vector is not None:
                    matrix[row] = vector
        return FileVectors(matrix, rows, self._fingerprint, label=self._label)

    def problem(self) -> str | None:
        if self._checked is None:  # the matrix as loaded is read whole once, not per caller
            self._checked = (self._find_problem(),)
        return self._checked[0]

    def _find_problem(self) -> str | None:
        if self.dimensions == 0 or self.matrix.shape[0] == 0:
            return None
        if self._digest and vectors_digest(self.matrix) != self._digest:
            return f"{self._label} does not match the digest recorded when it was written (overwritten?)"
        if not bool(np.isfinite(self.matrix).all()):
            return f"{self._label} holds NaN or infinite values"
        return None
