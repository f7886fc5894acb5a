"""Hybrid search over the store: dense cosine and BM25 over chunks, fused, collapsed to pages.

Modes (``LLMWIKI_RETRIEVAL`` or ``mode=``), chosen by measured recall on labelled
questions (docs/embeddings.md):

* ``rrf``    reciprocal-rank fusion of the cosine and BM25 rankings — default. Pages are
             fused by their rank in each list (a page ranks where its best chunk does), the
             BM25 list weighted 1.5 to 1, k = 20; chunks are fused the same way;
* ``rerank`` the reference tool's shape: cosine top 30, reordered by bm25 + 0.5 x cosine;
* ``cosine`` dense only; ``bm25`` lexical only.

With no vectors (the fast option, or a failed query embedding) every mode is ``bm25``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import BEST_EFFORT_ERRORS
from .embedders import Embedder
from .lexical import LexicalIndex
from .store import Store

MODES = ("rrf", "rerank", "cosine", "bm25")
DEFAULT_MODE = "rrf"
CHUNK_TOP_K = 30
RERANK_KEEP = 12
PAGE_LIMIT = 5
RRF_K = 20
#: The BM25 list's weight in the fusion (the cosine list's is 1): lexical ranking alone is
#: the stronger of the two on the labelled questions (docs/embeddings.md).
LEXICAL_WEIGHT = 1.5
FUSION_DEPTH = 100


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


def _fused_pages(n: int, owner: np.ndarray, cosine: np.ndarray, bm25: np.ndarray) -> np.ndarray:
    """Reciprocal-rank fusion of pages: each page ranks, in the cosine and in the BM25 list,
    where its best chunk ranks (max aggregation: better than sums of chunk scores, docs/embeddings.md);
    pages without any query term are left out of the BM25 list."""
    best_cosine = np.full(n, -np.inf, dtype=np.float32)
    np.maximum.at(best_cosine, owner, cosine)
    best_bm25 = np.zeros(n, dtype=np.float32)
    np.maximum.at(best_bm25, owner, bm25)
    fused = np.zeros(n, dtype=np.float64)
    dense = np.argsort(-best_cosine, kind="stable")
    fused[dense] += 1.0 / (RRF_K + 1 + np.arange(n))
    lexical = np.argsort(-best_bm25, kind="stable")
    lexical = lexical[best_bm25[lexical] > 0]
    fused[lexical] += LEXICAL_WEIGHT / (RRF_K + 1 + np.arange(len(lexical)))
    return fused


def _best_rows(owner: np.ndarray, cosine: np.ndarray, bm25: np.ndarray, pages: np.ndarray) -> list[int]:
    """The best chunk (by BM25, then cosine) of each page in ``pages``, so that every ranked
    page brings at least one chunk."""
    out = []
    for page in pages.tolist():
        rows = np.flatnonzero(owner == page)
        if rows.size:
            key = np.lexsort((-cosine[rows], -bm25[rows]))
            out.append(int(rows[key[0]]))
    return out


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
    warnings: list[dict[str, str]] = []
    rows = store.rows
    owner = store.row_owner()
    cosine: np.ndarray | None = None
    if embedder is not None and store.dimensions and rows:
        try:
            query = embedder.embed([question])[0]
            with np.errstate(all="ignore"):
                cosine = np.asarray(store.vectors @ query, dtype=np.float32)
        except BEST_EFFORT_ERRORS as exc:  # any embedding failure degrades to lexical, with a warning
            warnings.append({"code": "embedding-degraded",
                             "message": f"query embedding failed ({exc}); ranked lexically"})
        if cosine is not None and not bool(np.isfinite(cosine).all()):  # the store is verified, not trusted
            bad = int((~np.isfinite(cosine)).sum())
            warnings.append({"code": "embedding-store-corrupt",
                             "message": f"{bad} stored vector(s) hold NaN or infinite values; ranked lexically. "
                                        "Run `llmwiki index` to rebuild them"})
            cosine = None
    bm25 = lexical.scores(question) if lexical is not None else np.zeros(rows, dtype=np.float32)
    if cosine is None:
        mode = "bm25"
    if mode == "cosine":
        order = _top(cosine, keep)  # type: ignore[arg-type]
        scores = cosine[order]  # type: ignore[index]
        base = order
    elif mode == "bm25":
        order = _top(bm25, keep)
        order = order[bm25[order] > 0]
        scores = bm25[order]
        base = order
    elif mode == "rerank":
        base = _top(cosine, CHUNK_TOP_K)  # type: ignore[arg-type]
        combined = bm25[base] + 0.5 * cosine[base]  # type: ignore[index]
        local = np.argsort(-combined, kind="stable")[:keep]
        order, scores = base[local], combined[local]
    else:
        dense = _top(cosine, FUSION_DEPTH)  # type: ignore[arg-type]
        lexical_rank = _top(bm25, FUSION_DEPTH)
        lexical_rank = lexical_rank[bm25[lexical_rank] > 0]
        fused: dict[int, float] = {}
        for weight, ranking in ((1.0, dense), (LEXICAL_WEIGHT, lexical_rank)):
            for rank, row in enumerate(ranking.tolist()):
                fused[row] = fused.get(row, 0.0) + weight / (RRF_K + rank + 1)
        ranked = sorted(fused.items(), key=lambda kv: -kv[1])[:keep]
        order = np.array([r for r, _ in ranked], dtype=np.int64)
        scores = np.array([s for _, s in ranked], dtype=np.float32)
        base = dense
        owners = np.asarray(owner, dtype=np.int64)
        page_scores = _fused_pages(len(store.pages), owners, cosine, bm25)  # type: ignore[arg-type]
        top_pages = np.argsort(-page_scores, kind="stable")[:max_pages]
        kept = set(order.tolist())
        missing = [row for row in _best_rows(owners, cosine, bm25, top_pages) if row not in kept]  # type: ignore[arg-type]
        if missing:
            order = np.concatenate([order, np.array(missing, dtype=np.int64)])
            scores = np.concatenate([scores, np.zeros(len(missing), dtype=np.float32)])
    reranked = bool(len(order) and not np.array_equal(order[: len(base)], base[: len(order)]))
    hits = []
    table = store.pages  # ids and first rows only: no entry is made for a hit
    for row, score in zip(order.tolist(), scores.tolist()):
        hits.append(ChunkHit(row, table.page_id(owner[row]), row - table.first_row(owner[row]), float(score),
                             None if cosine is None else float(cosine[row]), float(bm25[row])))
    if mode == "rrf":
        by_page = [(table.page_id(i), float(page_scores[i])) for i in top_pages.tolist() if page_scores[i] > 0]
        return SearchResult(hits, by_page, mode, reranked, warnings)
    pages: list[tuple[str, float]] = []
    seen: set[str] = set()
    for hit in hits:
        if hit.page_id not in seen:
            seen.add(hit.page_id)
            pages.append((hit.page_id, hit.score))
            if len(pages) >= max_pages:
                break
    return SearchResult(hits, pages, mode, reranked, warnings)
