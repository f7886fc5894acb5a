"""The vector-store seam (retrieval/vectors.py): the file store as a `VectorIndex`, and a
second implementation written here -- vectors in a dict keyed by chunk hash, answering
``nearest`` with hashes and scores as a database would -- plugged into the same search."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from llmwiki_git.retrieval import store as S
from llmwiki_git.retrieval.filevectors import FileVectors
from llmwiki_git.retrieval.lexical import LexicalIndex
from llmwiki_git.retrieval.pagetable import PageEntry, PageTable
from llmwiki_git.retrieval.search import search
from llmwiki_git.retrieval.vectors import ChunkRows, Neighbours, VectorIndex

from .sharedstores import DIMS, unit


def table() -> PageTable:
    """Three pages; the chunk ``shared`` appears in two of them."""
    return PageTable(
        [
            PageEntry("a", "wiki/a.md", "1" * 40, "A", "", 0, ("h1", "h2")),
            PageEntry("b", "wiki/b.md", "2" * 40, "B", "", 2, ("shared", "h3", "h4")),
            PageEntry("c", "wiki/c.md", "3" * 40, "C", "", 5, ("shared",)),
        ]
    )


VECTORS = {h: unit(i) for i, h in enumerate(("h1", "h2", "shared", "h3", "h4"))}


def file_store() -> S.Store:
    rows = table()
    matrix = np.stack([VECTORS[h] for h in rows.row_hashes()])
    return S.Store("fp", "test", "m", rows, FileVectors(matrix, rows, "fp"))


class DictVectors:
    """A VectorIndex that is not the file store: one vector per chunk hash, nearest by exact
    cosine, answering hashes and scores as a database does (best first, ``k`` of them)."""

    def __init__(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.held = dict(vectors)
        self.asked: list[int] = []

    fingerprint = "fp"
    dimensions = DIMS
    generation = "1"

    def __len__(self) -> int:
        return len(self.held)

    def get(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        return {h: self.held[h] for h in hashes if h in self.held}

    def known(self, hashes: Iterable[str]) -> set[str]:
        return {h for h in hashes if h in self.held}

    def add(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.held.update(vectors)

    def remove(self, hashes: Iterable[str]) -> None:
        for h in hashes:
            self.held.pop(h, None)

    def nearest(self, vector: np.ndarray, k: int) -> Neighbours:
        self.asked.append(k)
        hashes = sorted(self.held)
        scores = np.array([float(self.held[h] @ vector) for h in hashes], dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:k]
        return Neighbours([hashes[i] for i in order], scores[order], complete=k >= len(hashes))

    def for_rows(self, rows: ChunkRows) -> VectorIndex:
        return self

    def problem(self) -> str | None:
        return None


class QueryEmbedder:
    name, model, dimension, fingerprint = "test", "m", DIMS, "fp"

    def embed(
        self, texts: list[str], batch_size: int | None = None, progress: object = None
    ) -> np.ndarray:
        return np.stack([unit(2) * 0.9 + unit(3) * 0.1 for _ in texts])


def test_the_file_store_is_a_vector_index() -> None:
    store = file_store()
    vectors = store.vectors
    assert (vectors.fingerprint, vectors.dimensions, len(vectors)) == ("fp", DIMS, 5)
    assert set(vectors.get(["h1", "shared", "nope"])) == {"h1", "shared"}
    everything = vectors.nearest(unit(2), store.rows)  # exact: every row, aligned with its table
    assert everything.complete and everything.over(store.pages) is everything.scores
    top = vectors.nearest(unit(2), 2)
    assert not top.complete and "shared" in top.hashes and len(top.hashes) == 2
    over = top.over(store.pages)  # the rows left out rank below every candidate
    assert (
        over[2] == over[5] == top.scores[list(top.hashes).index("shared")]
        and int(np.isinf(over).sum()) == 4
    )
    vectors.add({"h9": unit(9)})
    vectors.remove(["h1"])
    assert set(vectors.get(["h1", "h9"])) == {"h9"} and len(vectors) == 5
    grown = PageTable([PageEntry("d", "wiki/d.md", "4" * 40, "D", "", 0, ("h9", "h1", "new"))])
    view = vectors.for_rows(grown)
    assert isinstance(view, FileVectors)
    assert np.array_equal(
        view.matrix, np.stack([unit(9), np.zeros(DIMS), np.zeros(DIMS)])
    )  # no vector: zeros


def test_a_second_vector_store_fits_the_same_search() -> None:
    """The search, given the dict store, asks for every row, maps hashes to rows (a shared
    chunk scores in both pages) and ranks as with the file store."""
    rows, lexical = (
        table(),
        LexicalIndex.build(["alpha", "beta", "shared words", "gamma", "delta", "shared words"]),
    )
    other = DictVectors(VECTORS)
    by_file = search(
        "shared", file_store(), lexical, QueryEmbedder(), mode="rrf", keep=6, max_pages=3
    )
    by_dict = search(
        "shared",
        S.Store("fp", "test", "m", rows, other),
        lexical,
        QueryEmbedder(),
        mode="rrf",
        keep=6,
        max_pages=3,
    )
    assert other.asked == [rows.rows]
    assert [p for p, _ in by_dict.pages] == [p for p, _ in by_file.pages]
    assert [(h.row, h.page_id) for h in by_dict.chunks] == [
        (h.row, h.page_id) for h in by_file.chunks
    ]
    assert np.allclose(
        [h.cosine for h in by_dict.chunks], [h.cosine for h in by_file.chunks], atol=1e-6
    )


def test_an_approximate_answer_ranks_the_rest_last() -> None:
    """An index that returns fewer than all candidates (an approximate top-k): the rows it
    left out score -inf in the dense list and still rank by BM25."""

    class TopTwo(DictVectors):
        def nearest(self, vector: np.ndarray, k: int) -> Neighbours:
            return super().nearest(vector, 2)

    rows = table()
    lexical = LexicalIndex.build(["alpha", "beta", "shared", "gamma", "delta", "shared"])
    result = search(
        "delta",
        S.Store("fp", "test", "m", rows, TopTwo(VECTORS)),
        lexical,
        QueryEmbedder(),
        mode="rrf",
        keep=6,
        max_pages=3,
    )
    assert "b" in [p for p, _ in result.pages]  # h4 ("delta") found lexically
    assert any(h.cosine == float("-inf") for h in result.chunks)


def test_the_vectors_digest_is_the_sha256_of_the_stored_bytes() -> None:
    """Hashed in place (no copy), the digest is still that of the float32 little-endian bytes
    as written, for any memory layout and for an empty matrix."""
    import hashlib

    from llmwiki_git.retrieval.filevectors import vectors_digest

    matrix = np.random.default_rng(3).standard_normal((50, 8)).astype(np.float32)
    expected = hashlib.sha256(matrix.astype("<f4").tobytes()).hexdigest()
    assert vectors_digest(matrix) == vectors_digest(np.asfortranarray(matrix)) == expected
    assert vectors_digest(matrix.astype(np.float64)) == expected
    for empty in (np.zeros((0, 8), dtype=np.float32), np.zeros((3, 0), dtype=np.float32)):
        assert vectors_digest(empty) == hashlib.sha256(b"").hexdigest()
