"""Hybrid search over the store: dense cosine and BM25 over chunks, fused, collapsed to pages.

Modes (``LLMWIKI_RETRIEVAL`` or ``mode=``), chosen by measured recall on labelled
questions (docs/embeddings.md):

* ``rrf``    reciprocal-rank fusion of the cosine and BM25 rankings — default. Pages are
             fused by their rank in each list, weighted :data:`LEXICAL_WEIGHT` for BM25,
             k = :data:`RRF_K`; chunks are fused the same way;
* ``rerank`` the reference tool's shape: cosine top 30, reordered by bm25 + 0.5 x cosine;
* ``cosine`` dense only; ``bm25`` lexical only.

A page's place in a list comes from its chunks (:class:`Aggregation`): its best chunk, less
a length penalty, so that a long page (a changelog that mentions everything once) does not
rank high on every question just because it has many chances. Chosen leave-one-wiki-out on
four wikis (docs/embeddings.md).

With no vectors (the fast option, or a failed query embedding) every mode is ``bm25``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import BEST_EFFORT_ERRORS
from .embedders import Embedder
from .lexical import LexicalIndex
from .store import Store
from .vectors import Neighbours

MODES = ("rrf", "rerank", "cosine", "bm25")
DEFAULT_MODE = "rrf"
CHUNK_TOP_K = 30
RERANK_KEEP = 12
PAGE_LIMIT = 5
#: RRF's k and the BM25 list's weight in the fusion (the cosine list's is 1), chosen
#: leave-one-wiki-out with the page aggregations below (docs/embeddings.md).
RRF_K = 10
LEXICAL_WEIGHT = 1.0
FUSION_DEPTH = 100


@dataclass(frozen=True)
class Aggregation:
    """How a page's score in one list comes from its chunks' scores: ``max`` is its best
    chunk's score; ``length`` makes a long page pay for its many chances to match, ``s - p
    ln n`` for a best cosine ``s`` and ``s n^-p`` for a best BM25 score ``s``, with ``n`` the
    page's chunks. Neither lets a page gain by having more chunks."""

    kind: str = "max"
    param: float = 0.0


#: How pages are scored in the cosine and the BM25 list of the fusion, and in the BM25 list
#: alone (the fast option), chosen leave-one-wiki-out (docs/embeddings.md). The cosine
#: penalty: a 160-chunk changelog loses 0.10 of cosine, a 5-chunk page 0.03. The BM25 list
#: ranks pages by their best chunk: once section pages could be found
#: (chunking.page_chunks), every fold chose it over a BM25 length penalty.
DENSE_AGGREGATION = Aggregation("length", 0.02)
LEXICAL_AGGREGATION = Aggregation()
LEXICAL_ONLY_AGGREGATION = Aggregation()


def page_scores(
    owner: np.ndarray, counts: np.ndarray, scores: np.ndarray, how: Aggregation, *, dense: bool
) -> np.ndarray:
    """Every page's score in one list (``owner``: the page of each row; ``counts``: each
    page's chunks). A page without a chunk scores -inf in the cosine list; a page without
    any query term 0 in the BM25 list."""
    best = np.full(counts.shape[0], -np.inf if dense else 0.0, dtype=np.float64)
    if dense:
        _max_by_page(best, owner, scores)
    else:  # most chunks hold no query term: only the others can raise a page above 0
        hit = np.flatnonzero(scores > 0)
        _max_by_page(best, owner[hit], scores[hit])
    if how.kind == "max":
        return best
    if how.kind != "length":
        raise ValueError(f"unknown page aggregation {how.kind!r}")
    ln = np.log(np.maximum(counts, 1))
    scored: np.ndarray = best - how.param * ln if dense else best * np.exp(-how.param * ln)
    return scored


@dataclass(frozen=True)
class ChunkHit:
    row: int
    page_id: str
    chunk_index: int
    score: float
    cosine: float | None
    bm25: float


@dataclass
class SearchResult:
    chunks: list[ChunkHit]
    pages: list[tuple[str, float]]
    mode: str
    reranked: bool
    warnings: list[dict[str, str]] = field(default_factory=list)


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


def _max_by_page(best: np.ndarray, owner: np.ndarray, scores: np.ndarray) -> None:
    """``best[p] = max(best[p], scores of p's rows)``. Rows come page by page in a store, so
    one ``reduceat`` over the runs does it (``maximum.at``, ~10x slower, otherwise)."""
    if owner.size == 0:
        return
    if bool((owner[1:] >= owner[:-1]).all()):
        starts = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
        pages = owner[starts]
        best[pages] = np.maximum(best[pages], np.maximum.reduceat(scores, starts))
    else:
        np.maximum.at(best, owner, scores)


def _first_pages(scores: np.ndarray, limit: int) -> np.ndarray:
    """The ``limit`` best pages by ``scores``, ties in page order (as a stable sort of all
    of them would give), without sorting every page."""
    if limit <= 0 or scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    if limit >= scores.size:
        return np.argsort(-scores, kind="stable")
    kth = np.partition(scores, scores.size - limit)[scores.size - limit]
    candidates = np.flatnonzero(scores >= kth)  # every page tied with the last one kept
    return candidates[np.argsort(-scores[candidates], kind="stable")][:limit]


def _fused_pages(
    owner: np.ndarray, counts: np.ndarray, cosine: np.ndarray, bm25: np.ndarray
) -> np.ndarray:
    """Reciprocal-rank fusion of pages: each page ranks, in the cosine and in the BM25 list,
    by its :func:`page_scores`; pages without any query term are left out of the BM25 list."""
    n = counts.shape[0]
    dense_scores = page_scores(owner, counts, cosine, DENSE_AGGREGATION, dense=True)
    lexical_scores = page_scores(owner, counts, bm25, LEXICAL_AGGREGATION, dense=False)
    fused = np.zeros(n, dtype=np.float64)
    dense = np.argsort(-dense_scores, kind="stable")
    fused[dense] += 1.0 / (RRF_K + 1 + np.arange(n))
    lexical = np.argsort(-lexical_scores, kind="stable")
    lexical = lexical[lexical_scores[lexical] > 0]
    fused[lexical] += LEXICAL_WEIGHT / (RRF_K + 1 + np.arange(len(lexical)))
    return fused


def _best_rows(
    owner: np.ndarray, cosine: np.ndarray, bm25: np.ndarray, pages: np.ndarray
) -> list[int]:
    """The best chunk (by BM25, then cosine) of each page in ``pages``, so that every ranked
    page brings at least one chunk."""
    out = []
    for page in pages.tolist():
        rows = np.flatnonzero(owner == page)
        if rows.size:
            key = np.lexsort((-cosine[rows], -bm25[rows]))
            out.append(int(rows[key[0]]))
    return out


@dataclass
class _Ranking:
    """One mode's chunk ranking: the rows kept (``order``) and their ``scores``; ``base``, the
    list the mode started from (a reordering of it is "reranked"); ``by_page``, the page
    scores when the mode ranks pages by their own (None: pages follow their chunks)."""

    order: np.ndarray
    scores: np.ndarray
    base: np.ndarray
    by_page: np.ndarray | None = None


def _dense_scores(
    question: str, store: Store, embedder: Embedder | None, warnings: list[dict[str, str]]
) -> np.ndarray | None:
    """Every row's cosine with the question, or None (no embedder, no vectors, a failed
    embedding, or a corrupt store; the last two with a warning)."""
    if embedder is None or not store.dimensions or not store.rows:
        return None
    try:
        query = embedder.embed([question])[0]
        # Every row is a dense candidate (the file store scores them all in one product):
        # the rankings below are exact. An approximate index may answer fewer.
        found: Neighbours = store.vectors.nearest(query, store.rows)
    except BEST_EFFORT_ERRORS as exc:  # any embedding failure degrades to lexical, with a warning
        warnings.append(
            {
                "code": "embedding-degraded",
                "message": f"query embedding failed ({exc}); ranked lexically",
            }
        )
        return None
    cosine = found.over(store.pages)
    if not bool(np.isfinite(found.scores).all()):  # the store is verified, not trusted
        bad = int((~np.isfinite(found.scores)).sum())
        warnings.append(
            {
                "code": "embedding-store-corrupt",
                "message": f"{bad} stored vector(s) hold NaN or infinite values; ranked lexically. "
                "Run `llmwiki index` to rebuild them",
            }
        )
        return None
    return cosine


def _cosine_ranking(
    cosine: np.ndarray, owners: np.ndarray, counts: np.ndarray, keep: int
) -> _Ranking:
    order = _top(cosine, keep)
    by_page = page_scores(owners, counts, cosine, DENSE_AGGREGATION, dense=True)
    return _Ranking(order, cosine[order], order, by_page)


def _bm25_ranking(bm25: np.ndarray, owners: np.ndarray, counts: np.ndarray, keep: int) -> _Ranking:
    order = _top(bm25, keep)
    order = order[bm25[order] > 0]
    by_page = page_scores(owners, counts, bm25, LEXICAL_ONLY_AGGREGATION, dense=False)
    by_page[by_page <= 0] = -np.inf  # no query term: not a match at all
    return _Ranking(order, bm25[order], order, by_page)


def _rerank_ranking(cosine: np.ndarray, bm25: np.ndarray, keep: int) -> _Ranking:
    base = _top(cosine, CHUNK_TOP_K)
    combined = bm25[base] + 0.5 * cosine[base]
    local = np.argsort(-combined, kind="stable")[:keep]
    return _Ranking(base[local], combined[local], base)


def _rrf_ranking(
    cosine: np.ndarray, bm25: np.ndarray, owners: np.ndarray, counts: np.ndarray, keep: int
) -> _Ranking:
    dense = _top(cosine, FUSION_DEPTH)
    lexical_rank = _top(bm25, FUSION_DEPTH)
    lexical_rank = lexical_rank[bm25[lexical_rank] > 0]
    fused: dict[int, float] = {}
    for weight, ranking in ((1.0, dense), (LEXICAL_WEIGHT, lexical_rank)):
        for rank, row in enumerate(ranking.tolist()):
            fused[row] = fused.get(row, 0.0) + weight / (RRF_K + rank + 1)
    ranked = sorted(fused.items(), key=lambda kv: -kv[1])[:keep]
    order = np.array([r for r, _ in ranked], dtype=np.int64)
    scores = np.array([s for _, s in ranked], dtype=np.float32)
    by_page = _fused_pages(owners, counts, cosine, bm25)
    by_page[by_page <= 0] = -np.inf
    return _Ranking(order, scores, dense, by_page)


def _ranking(
    mode: str, cosine: np.ndarray | None, bm25: np.ndarray, store: Store, keep: int
) -> tuple[str, _Ranking]:
    """The mode actually used (``bm25`` without vectors) and its ranking."""
    if cosine is not None and mode == "rerank":
        return mode, _rerank_ranking(cosine, bm25, keep)
    owners, counts = store.owner_array(), store.pages.hash_counts()
    if cosine is None or mode == "bm25":
        return "bm25", _bm25_ranking(bm25, owners, counts, keep)
    if mode == "cosine":
        return mode, _cosine_ranking(cosine, owners, counts, keep)
    return mode, _rrf_ranking(cosine, bm25, owners, counts, keep)


def _top_pages(
    ranking: _Ranking,
    by_page: np.ndarray,
    owners: np.ndarray,
    dense_scores: np.ndarray,
    bm25: np.ndarray,
    max_pages: int,
) -> np.ndarray:
    """The best pages by the mode's page scores; the chunk ranking gains each one's best
    chunk where it holds none of them (every ranked page brings at least its best chunk)."""
    first = _first_pages(by_page, max_pages)
    top_pages: np.ndarray = first[np.isfinite(by_page[first])]
    kept = set(ranking.order.tolist())
    missing = [row for row in _best_rows(owners, dense_scores, bm25, top_pages) if row not in kept]
    if missing:
        ranking.order = np.concatenate([ranking.order, np.array(missing, dtype=np.int64)])
        ranking.scores = np.concatenate([ranking.scores, np.zeros(len(missing), dtype=np.float32)])
    return top_pages


def _chunk_hits(
    ranking: _Ranking, store: Store, cosine: np.ndarray | None, bm25: np.ndarray
) -> list[ChunkHit]:
    owner = store.row_owner()
    table = store.pages  # ids and first rows only: no entry is made for a hit
    return [
        ChunkHit(
            row,
            table.page_id(owner[row]),
            row - table.first_row(owner[row]),
            float(score),
            None if cosine is None else float(cosine[row]),
            float(bm25[row]),
        )
        for row, score in zip(ranking.order.tolist(), ranking.scores.tolist())
    ]


def _pages_of_hits(hits: list[ChunkHit], max_pages: int) -> list[tuple[str, float]]:
    """Pages in the order of their first chunk, scored by it (a mode without page scores)."""
    pages: list[tuple[str, float]] = []
    seen: set[str] = set()
    for hit in hits:
        if hit.page_id not in seen:
            seen.add(hit.page_id)
            pages.append((hit.page_id, hit.score))
            if len(pages) >= max_pages:
                break
    return pages


def search(
    question: str,
    store: Store,
    lexical: LexicalIndex | None,
    embedder: Embedder | None,
    *,
    mode: str = DEFAULT_MODE,
    keep: int = RERANK_KEEP,
    max_pages: int = PAGE_LIMIT,
) -> SearchResult:
    """The store's chunks and pages ranked for ``question`` by ``mode`` (see the module):
    ``keep`` chunks at most, and ``max_pages`` pages; a mode that scores pages on their own
    adds the best chunk of each ranked page that none of the kept chunks belongs to."""
    warnings: list[dict[str, str]] = []
    rows = store.rows
    cosine = _dense_scores(question, store, embedder, warnings)
    bm25 = lexical.scores(question) if lexical is not None else np.zeros(rows, dtype=np.float32)
    mode, ranking = _ranking(mode, cosine, bm25, store, keep)
    by_page = ranking.by_page
    top_pages = np.zeros(0, dtype=np.int64)
    if by_page is not None:
        dense = cosine if cosine is not None else np.zeros(rows, dtype=np.float32)
        top_pages = _top_pages(ranking, by_page, store.owner_array(), dense, bm25, max_pages)
    order, base = ranking.order, ranking.base
    reranked = bool(len(order) and not np.array_equal(order[: len(base)], base[: len(order)]))
    hits = _chunk_hits(ranking, store, cosine, bm25)
    if by_page is None:
        return SearchResult(hits, _pages_of_hits(hits, max_pages), mode, reranked, warnings)
    pages = [(store.pages.page_id(i), float(by_page[i])) for i in top_pages.tolist()]
    return SearchResult(hits, pages, mode, reranked, warnings)
