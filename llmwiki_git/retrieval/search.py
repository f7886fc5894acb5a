"""Hybrid search over the store: dense cosine and BM25 over chunks, fused, collapsed to pages.

Modes (``LLMWIKI_RETRIEVAL`` or ``mode=``), chosen by measured recall on labelled
questions (docs/embeddings.md):

* ``rrf``    reciprocal-rank fusion of the cosine and BM25 rankings (k = 60) — default;
* ``rerank`` the reference tool's shape: cosine top 30, reordered by bm25 + 0.5 x cosine;
* ``cosine`` dense only; ``bm25`` lexical only.

With no vectors (the fast option, or a failed query embedding) every mode is ``bm25``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .embedders import Embedder
from .lexical import LexicalIndex
from .store import Store

MODES = ("rrf", "rerank", "cosine", "bm25")
DEFAULT_MODE = "rrf"
CHUNK_TOP_K = 30
RERANK_KEEP = 12
PAGE_LIMIT = 5
RRF_K = 60
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
        except Exception as exc:  # any embedding failure degrades to lexical, with a warning
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
        for rank, row in enumerate(dense):
            fused[int(row)] = fused.get(int(row), 0.0) + 1.0 / (RRF_K + rank + 1)
        for rank, row in enumerate(lexical_rank):
            fused[int(row)] = fused.get(int(row), 0.0) + 1.0 / (RRF_K + rank + 1)
        ranked = sorted(fused.items(), key=lambda kv: -kv[1])[:keep]
        order = np.array([r for r, _ in ranked], dtype=np.int64)
        scores = np.array([s for _, s in ranked], dtype=np.float32)
        base = dense
    reranked = bool(len(order) and not np.array_equal(order[: len(base)], base[: len(order)]))
    hits = []
    for row, score in zip(order.tolist(), scores.tolist()):
        page = store.pages[owner[row]]
        hits.append(ChunkHit(row, page.page_id, row - page.first_row, float(score),
                             None if cosine is None else float(cosine[row]), float(bm25[row])))
    pages: list[tuple[str, float]] = []
    seen: set[str] = set()
    for hit in hits:
        if hit.page_id not in seen:
            seen.add(hit.page_id)
            pages.append((hit.page_id, hit.score))
            if len(pages) >= max_pages:
                break
    return SearchResult(hits, pages, mode, reranked, warnings)
