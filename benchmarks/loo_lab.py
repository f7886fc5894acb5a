"""The leave-one-wiki-out lab: every question scored once per list, then rankings re-made from arrays.

Used by ``benchmarks/leave_one_out.py``. For one corpus and one *index variant* (what is
read from a page: titles, the readable text, fields; a variant of this tree's indexer made
by patching one function or one cleaning step), :func:`corpus_arrays` indexes the pages
in-process (vectors through the cache), scores every question against every chunk
(cosine and BM25), and keeps, per question and page, the three best chunk scores of each
list and the page's chunk count. A *ranking config* (how a page's score comes from its
chunks in each list, and the fusion) then ranks pages from those arrays in microseconds.

Nothing here is the product: :func:`check_against_search` proves that the config this tree
ships, re-made here, ranks exactly as ``llmwiki_git.retrieval.search.search`` does.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import retrieval as B  # noqa: E402

TOP = 3  # best chunk scores kept per page and list


# ---------------------------------------------------------------------------- index variants


@dataclass(frozen=True)
class Variant:
    """What the indexer reads from a page, as this tree does it with some parts changed."""

    name: str
    patches: tuple[tuple[str, str, Any], ...] = ()  # (module, attribute, value) while reading pages
    steps_without: tuple[str, ...] = ()  # cleaning steps of chunking.readable_text left out
    steps_replaced: tuple[tuple[str, Any], ...] = ()  # (step name, replacement function or string)
    steps_added: tuple[
        tuple[str, str, Any], ...
    ] = ()  # (name, before this step, (needles, pattern, replacement))
    about: str = (
        ""  # "all": the page's description embedded with every chunk (this tree: the first only)
    )

    def key(self) -> str:
        return self.name


@contextlib.contextmanager
def applied(variant: Variant) -> Iterator[None]:
    import importlib

    from llmwiki_git.retrieval import chunking

    saved: list[tuple[Any, str, Any]] = []
    try:
        for module_name, attribute, value in variant.patches:
            module = importlib.import_module(module_name)
            saved.append((module, attribute, getattr(module, attribute)))
            setattr(module, attribute, value)
        steps = list(chunking._READABLE_STEPS)
        if variant.steps_without or variant.steps_replaced or variant.steps_added:
            names = {s[0] for s in steps}
            unknown = [
                n
                for n in (*variant.steps_without, *(n for n, _ in variant.steps_replaced))
                if n not in names
            ]
            if unknown:
                raise SystemExit(f"variant {variant.name}: no cleaning step named {unknown}")
            replaced = dict(variant.steps_replaced)
            steps = [
                (n, needles, pattern, replaced.get(n, repl))
                for n, needles, pattern, repl in steps
                if n not in variant.steps_without
            ]
            for n, before, spec in variant.steps_added:
                at = next(i for i, step in enumerate(steps) if step[0] == before)
                steps.insert(at, (n, *spec))
            saved.append((chunking, "_READABLE_STEPS", chunking._READABLE_STEPS))
            chunking._READABLE_STEPS = tuple(steps)
        yield
    finally:
        for module, attribute, value in reversed(saved):
            setattr(module, attribute, value)


# ---------------------------------------------------------------------------- arrays


@dataclass
class Arrays:
    """One corpus read by one variant: per question (rows) and page (columns)."""

    corpus: str
    variant: str
    paths: list[str]
    titles: list[str]
    nchunks: np.ndarray  # (P,)
    questions: list[Any]
    cos_top: np.ndarray  # (Q, P, TOP), -inf where a page has fewer chunks
    bm_top: np.ndarray  # (Q, P, TOP), 0 where a page has fewer chunks
    embedded: int = 0  # texts embedded (not in the cache) to build this
    cached: int = 0
    answers: list[set[int]] = field(default_factory=list)  # page indexes answering each question


def _tops(
    scores: np.ndarray, owner: np.ndarray, starts: np.ndarray, n_pages: int, fill: float
) -> np.ndarray:
    """(Q, rows) chunk scores -> (Q, P, TOP) best scores per page, descending."""
    q, rows = scores.shape
    out = np.full((q, n_pages, TOP), fill, dtype=np.float32)
    if rows == 0:
        return out
    for i in range(q):
        order = np.lexsort((-scores[i], owner))
        ranked = scores[i][order]
        owners = owner[order]
        within = np.arange(rows) - starts[owners]
        keep = within < TOP
        out[i, owners[keep], within[keep]] = ranked[keep]
    return out


def _embedded(page: Any, about: str) -> tuple[str, ...]:
    """What is embedded for each chunk of ``page``; with ``about = "all"``, the page's
    description (its lexical description field) after the title of every chunk, not only
    the first (the "first" of this tree)."""
    description = page.lexical[0][1][0].strip() if about == "all" and page.lexical else ""
    if not description:
        return tuple(page.embedded)
    out = [page.embedded[0]]
    for text in page.embedded[1:]:
        head, _, rest = text.partition("\n\n")
        out.append(f"{head}\n\n{description}\n\n{rest}" if rest else f"{head}\n\n{description}")
    return tuple(out)


def corpus_arrays(
    folder: Path,
    corpus: str,
    variant: Variant,
    questions: Sequence[Any],
    embedder: Any,
    qvectors: dict[str, np.ndarray],
) -> Arrays:
    from llmwiki_git.retrieval import indexer
    from llmwiki_git.retrieval.lexical import LexicalIndex
    from llmwiki_git.workspace import Workspace

    retrieval = Workspace.open(folder, environ=B.clean_env()).retrieval()
    wiki = retrieval._load_wiki()
    with applied(variant):
        pages, _ = indexer.read_pages(wiki)
        documents = [doc for page in pages for doc in page.lexical]
        lexical = LexicalIndex.build(documents)
    texts = [t for page in pages for t in _embedded(page, variant.about)]
    before = dict(embedder.stats)
    vectors = (
        np.asarray(embedder.embed(texts), dtype=np.float32)
        if texts
        else np.zeros((0, 384), np.float32)
    )
    owner = np.repeat(np.arange(len(pages)), [len(p.embedded) for p in pages])
    nchunks = np.array([len(p.embedded) for p in pages], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(nchunks)[:-1]]).astype(np.int64)
    qs = [q for q in questions if q.corpus == corpus]
    qmat = (
        np.stack([qvectors[q.question] for q in qs])
        if qs
        else np.zeros((0, vectors.shape[1]), np.float32)
    )
    cos = (qmat @ vectors.T).astype(np.float32)
    bm = (
        np.stack([lexical.scores(q.question) for q in qs]).astype(np.float32)
        if qs
        else np.zeros((0, len(texts)))
    )
    paths = [p.path for p in pages]
    index = {p: i for i, p in enumerate(paths)}
    arrays = Arrays(
        corpus,
        variant.name,
        paths,
        [p.title for p in pages],
        nchunks,
        qs,
        _tops(cos, owner, starts, len(pages), -np.inf),
        _tops(bm, owner, starts, len(pages), 0.0),
        embedder.stats["embedded"] - before["embedded"],
        embedder.stats["cached"] - before["cached"],
    )
    arrays.answers = [{index[a] for a in q.answers if a in index} for q in qs]
    return arrays


# ---------------------------------------------------------------------------- ranking configs


@dataclass(frozen=True)
class Aggregation:
    """A page's score in one list from its chunks' best scores ``s1 >= s2 >= s3`` and its
    chunk count ``n``: ``max`` (s1); ``decay`` (s1 + p s2 + p^2 s3: a small bonus for a second
    and third matching chunk); ``length`` (dense: s1 - p ln n; lexical: s1 n^-p: long pages
    pay for their many chances)."""

    kind: str = "max"
    param: float = 0.0

    def label(self) -> str:
        return self.kind if self.kind == "max" else f"{self.kind} {self.param:g}"


@dataclass(frozen=True)
class Config:
    dense: Aggregation = Aggregation()
    lexical: Aggregation = Aggregation()
    k: float = 20.0
    weight: float = 1.5  # the BM25 list's weight in the fusion

    def label(self) -> str:
        return f"dense {self.dense.label()}, lexical {self.lexical.label()}, k {self.k:g}, BM25 x{self.weight:g}"


def aggregate(top: np.ndarray, n: np.ndarray, how: Aggregation, dense: bool) -> np.ndarray:
    """(Q, P, TOP) -> (Q, P) page scores."""
    s1 = top[:, :, 0].astype(np.float64)
    if how.kind == "max":
        return s1
    if how.kind == "decay":
        rest = np.where(np.isfinite(top[:, :, 1:]), top[:, :, 1:], 0.0)
        return s1 + how.param * rest[:, :, 0] + how.param**2 * rest[:, :, 1]
    if how.kind == "length":
        ln = np.log(np.maximum(n, 1)).astype(np.float64)[None, :]
        return s1 - how.param * ln if dense else s1 * np.exp(-how.param * ln)
    raise ValueError(how.kind)


def _ranks(score: np.ndarray) -> np.ndarray:
    order = np.argsort(-score, axis=1, kind="stable")
    out = np.empty_like(order)
    out[np.arange(order.shape[0])[:, None], order] = np.arange(order.shape[1])[None, :]
    return out


class Ranked:
    """One corpus's arrays with the ranks of every page in each list, per aggregation,
    computed once (a config is then a fusion of two rank arrays)."""

    def __init__(self, a: Arrays) -> None:
        self.a = a
        self._ranks: dict[tuple[bool, Aggregation], np.ndarray] = {}
        self._lex: dict[Aggregation, np.ndarray] = {}
        self.has_term = a.bm_top[:, :, 0] > 0
        width = max((len(w) for w in a.answers), default=0)
        self.answer_pages = np.full((len(a.answers), max(width, 1)), -1, dtype=np.int64)
        for i, wanted in enumerate(a.answers):
            self.answer_pages[i, : len(wanted)] = sorted(wanted)

    def ranks(self, how: Aggregation, dense: bool) -> np.ndarray:
        key = (dense, how)
        if key not in self._ranks:
            top = self.a.cos_top if dense else self.a.bm_top
            self._ranks[key] = _ranks(aggregate(top, self.a.nchunks, how, dense))
        return self._ranks[key]

    def lexical(self, how: Aggregation) -> np.ndarray:
        if how not in self._lex:
            self._lex[how] = np.where(
                self.has_term, aggregate(self.a.bm_top, self.a.nchunks, how, False), -np.inf
            )
        return self._lex[how]


def hybrid_scores(a: Arrays | Ranked, config: Config) -> np.ndarray:
    r = a if isinstance(a, Ranked) else Ranked(a)
    fused = 1.0 / (config.k + 1 + r.ranks(config.dense, True))
    fused += np.where(
        r.has_term, config.weight / (config.k + 1 + r.ranks(config.lexical, False)), 0.0
    )
    return fused


def lexical_scores(a: Arrays | Ranked, config: Config) -> np.ndarray:
    r = a if isinstance(a, Ranked) else Ranked(a)
    return r.lexical(config.lexical)


def first_ranks(a: Arrays | Ranked, score: np.ndarray) -> list[int | None]:
    """1-based rank of the first answer page among the first ten, per question (pages
    scored -inf are not ranked at all: the lexical list leaves out pages without a term).
    Ties keep page order, as a stable sort (and ``search.search``) does."""
    r = a if isinstance(a, Ranked) else Ranked(a)
    pages = r.answer_pages
    valid = pages >= 0
    safe = np.where(valid, pages, 0)
    target = np.take_along_axis(score, safe, axis=1)  # (Q, A)
    above = (score[:, None, :] > target[:, :, None]).sum(axis=2)
    index = np.arange(score.shape[1])[None, None, :]
    tied = ((score[:, None, :] == target[:, :, None]) & (index < safe[:, :, None])).sum(axis=2)
    rank = np.where(valid & np.isfinite(target), above + tied + 1, 10**9).min(axis=1)
    return [int(x) if x <= 10 else None for x in rank]


def hit_mrr(ranks: Sequence[int | None]) -> tuple[float, float]:
    n = max(len(ranks), 1)
    return (
        sum(1 for r in ranks if r is not None and r <= 5) / n,
        sum(1.0 / r for r in ranks if r) / n,
    )


def objective(scores: Sequence[tuple[float, float]]) -> float:
    """What a choice maximises over the wikis it is made on: the mean, wiki by wiki, of
    hit@5 and MRR@10 (each wiki counts the same, whatever its number of questions)."""
    return sum((h + m) / 2 for h, m in scores) / max(len(scores), 1)


def grid(dense: bool = True, decay: bool = False) -> list[Config]:
    """Every ranking config the leave-one-out chooses from; the shipped one before this work
    (max and max, k 20, x1.5) first, so that it wins ties. ``decay`` adds the configs whose
    page score grows with a second and third matching chunk: measured, but not eligible
    (a page must not gain by its number of chunks, issue 25)."""
    dense_aggs = [Aggregation()] + [Aggregation("length", p) for p in (0.01, 0.02, 0.04)]
    lexical_aggs = [Aggregation()] + [Aggregation("length", p) for p in (0.05, 0.1, 0.2)]
    if decay:
        dense_aggs += [Aggregation("decay", p) for p in (0.1, 0.25)]
        lexical_aggs += [Aggregation("decay", p) for p in (0.1, 0.25)]
    if not dense:
        return [Config(lexical=agg) for agg in lexical_aggs]
    out = [Config()]
    for d in dense_aggs:
        for x in lexical_aggs:
            for k in (10.0, 20.0, 40.0):
                for w in (1.0, 1.5, 2.0):
                    c = Config(d, x, k, w)
                    if c != out[0]:
                        out.append(c)
    return out


# ---------------------------------------------------------------------------- leave one out


@dataclass
class Fold:
    held_out: str
    config: Config
    variant: str
    score: tuple[float, float]  # on the held-out wiki
    train: float  # objective on the other wikis


def evaluate_all(
    arrays: dict[tuple[str, str], Arrays], configs: Sequence[Config], mode: str
) -> dict[tuple[str, str, int], tuple[float, float]]:
    """(corpus, variant, config index) -> (hit@5, MRR@10)."""
    out = {}
    for (corpus, variant), a in arrays.items():
        r = Ranked(a)
        for i, config in enumerate(configs):
            score = hybrid_scores(r, config) if mode == "hybrid" else lexical_scores(r, config)
            out[(corpus, variant, i)] = hit_mrr(first_ranks(r, score))
    return out


def choose_on(
    results: dict[tuple[str, str, int], tuple[float, float]],
    corpora: Sequence[str],
    variants: Sequence[str],
    configs: Sequence[Config],
) -> tuple[str, int, float]:
    """The (variant, config index) with the best objective on ``corpora`` (the first in
    order on ties), and that objective."""
    best: tuple[float, str, int] | None = None
    for v in variants:
        for i in range(len(configs)):
            value = objective([results[(c, v, i)] for c in corpora])
            if best is None or value > best[0] + 1e-12:
                best = (value, v, i)
    assert best is not None
    return best[1], best[2], best[0]


def leave_one_out(
    results: dict[tuple[str, str, int], tuple[float, float]],
    corpora: Sequence[str],
    variants: Sequence[str],
    configs: Sequence[Config],
) -> list[Fold]:
    """For each held-out corpus: the (variant, config) chosen on the others
    (:func:`choose_on`), and its score on the held-out one."""
    folds = []
    for held in corpora:
        variant, index, value = choose_on(
            results, [c for c in corpora if c != held], variants, configs
        )
        folds.append(Fold(held, configs[index], variant, results[(held, variant, index)], value))
    return folds


def fmt(score: tuple[float, float]) -> str:
    return f"{score[0]:.3f} / {score[1]:.3f}"


def delta(new: tuple[float, float], old: tuple[float, float]) -> str:
    return f"{new[0] - old[0]:+.3f} / {new[1] - old[1]:+.3f}"
