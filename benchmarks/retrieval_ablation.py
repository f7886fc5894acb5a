#!/usr/bin/env python3
"""Retrieval experiments on the tuning half: what else was tried for the hybrid ranking.

    python benchmarks/retrieval_ablation.py [--work DIR] [--split tune] [--chunk-sizes 400:700:100]

Uses the stores ``benchmarks/retrieval.py`` builds in ``--work`` (default
``/tmp/llmwiki-retrieval-bench``; it syncs and indexes the corpora itself when they are
missing). Every question is scored once per list (cosine of its embedded question against
every chunk vector, BM25 over every chunk), then each variant re-ranks *pages* from those
arrays, so a variant costs milliseconds. The first row re-implements the shipped ``rrf`` and
is checked against ``llmwiki_git.retrieval.search.search`` question by question.

Variants (all measured on ``--split``, default the tuning half; the reporting half is for
``benchmarks/retrieval.py``):

* fusion: RRF over k and the BM25 weight; score-normalised convex combinations (BM25 / its
  maximum with raw cosine, min-max per list, z-score per list) over the BM25 share;
* a page "card" vector (title + aliases + frontmatter description [+ headings]) beside the
  chunk vectors: max with the best chunk, a sum, or a third RRF list;
* the question as embedded: whole (shipped) or with question words and filler removed;
* pseudo-relevance feedback: dense (Rocchio: the query vector moved toward the best chunks
  of the top pages) and lexical (RM3-style: a few expansion terms from the top BM25 chunks);
* BM25 over whole pages (one document per page) instead of, or beside, the best chunk's;
* a title/alias exact-match bonus;
* ``--chunk-sizes T:M:N,...``: dense chunks re-cut at target T, maximum M and minimum N
  characters and re-embedded (minutes per size on a loaded 2-core machine).

Each variant's difference to the shipped ranking comes with a paired bootstrap 95 %
interval over the questions (2,000 resamples): on ~100 questions one question is 0.01.

Always exits 0: it is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
_HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)
_WORD = re.compile(r"[\w'-]+")


if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import retrieval as B  # noqa: E402 - benchmarks/retrieval.py: its corpus and question helpers are reused


@dataclass
class Corpus:
    """One corpus, every question scored once: (questions x rows) and (questions x pages)."""

    name: str
    paths: list[str]
    titles: list[str]
    owner: np.ndarray  # page index per chunk row
    vectors: np.ndarray  # chunk vectors (rows x dim)
    qvec: np.ndarray  # question vectors
    cos: np.ndarray  # questions x rows
    bm25: np.ndarray  # questions x rows
    questions: list[Any]
    pages: list[Any]  # indexer.IndexedPage, store order
    lexical: Any

    @property
    def n_pages(self) -> int:
        return len(self.paths)

    def per_page(self, rows: np.ndarray, fill: float) -> np.ndarray:
        """Max aggregation of a (questions x rows) array to (questions x pages)."""
        out = np.full((rows.shape[0], self.n_pages), fill, dtype=np.float64)
        for i in range(rows.shape[0]):
            np.maximum.at(out[i], self.owner, rows[i])
        return out


def load_corpus(folder: Path, name: str, questions: list[Any], embedder: Any) -> Corpus:
    from llmwiki_git.retrieval import indexer
    from llmwiki_git.workspace import Workspace

    retrieval = Workspace.open(
        folder, environ=B.clean_env(LLMWIKI_EMBEDDING_PROVIDER="local")
    ).retrieval()
    loaded = retrieval.load()
    store, lexical = loaded.store, loaded.lexical
    pages, _ = indexer.read_pages(retrieval._load_wiki(), None)
    if [p.path for p in pages] != [p.path for p in store.pages]:
        raise SystemExit(
            f"{folder}: the store is not up to date; run `llmwiki -C {folder} index` first"
        )
    qs = [q for q in questions if q.corpus == name]
    qvec = embedder.embed([q.question for q in qs])
    vectors = np.asarray(
        store.vectors.matrix, dtype=np.float32
    )  # the file store (filevectors.FileVectors)
    return Corpus(
        name,
        [p.path for p in store.pages],
        [p.title for p in pages],
        np.asarray(store.row_owner()),
        vectors,
        qvec,
        (qvec @ vectors.T).astype(np.float32),
        np.stack([lexical.scores(q.question) for q in qs]).astype(np.float32),
        qs,
        pages,
        lexical,
    )


# ---------------------------------------------------------------------------- ranking helpers


def ranks(score: np.ndarray) -> np.ndarray:
    """0-based rank of every page per question (stable: ties keep page order)."""
    order = np.argsort(-score, axis=1, kind="stable")
    out = np.empty_like(order)
    out[np.arange(order.shape[0])[:, None], order] = np.arange(order.shape[1])[None, :]
    return out


def rrf(lists: list[tuple[float, np.ndarray, np.ndarray | None]], k: float) -> np.ndarray:
    """Weighted reciprocal-rank fusion; a list's mask leaves pages out of it (BM25: no term)."""
    fused = np.zeros_like(lists[0][1], dtype=np.float64)
    for weight, score, mask in lists:
        part = weight / (k + 1 + ranks(score))
        fused += part if mask is None else np.where(mask, part, 0.0)
    return fused


def by_max(score: np.ndarray) -> np.ndarray:
    return score / np.maximum(score.max(axis=1, keepdims=True), 1e-9)


def min_max(score: np.ndarray) -> np.ndarray:
    lo = score.min(axis=1, keepdims=True)
    return (score - lo) / np.maximum(score.max(axis=1, keepdims=True) - lo, 1e-9)


def z_score(score: np.ndarray) -> np.ndarray:
    return (score - score.mean(axis=1, keepdims=True)) / np.maximum(
        score.std(axis=1, keepdims=True), 1e-9
    )


#: A variant: per corpus, (questions x pages) scores (higher is better).
Variant = Callable[[Corpus], np.ndarray]


class Lab:
    """Scores variants on one split, with per-question outcomes for paired comparisons."""

    def __init__(self, corpora: list[Corpus], split: str) -> None:
        self.corpora, self.split = corpora, split
        self.cache: dict[tuple[str, str], np.ndarray] = {}
        self.pcos = {c.name: c.per_page(c.cos, -1.0) for c in corpora}
        self.pbm25 = {c.name: c.per_page(c.bm25, 0.0) for c in corpora}

    def outcomes(self, variant: Variant) -> dict[str, np.ndarray]:
        """Per corpus: (hit@5, reciprocal rank@10) per question of the split."""
        out = {}
        for c in self.corpora:
            score = variant(c)
            rows = []
            for i, q in enumerate(c.questions):
                if q.split != self.split:
                    continue
                top = np.argsort(-score[i], kind="stable")[:10]
                wanted = set(q.answers)
                rank = next(
                    (j + 1 for j, p in enumerate(top.tolist()) if c.paths[p] in wanted), None
                )
                rows.append(
                    (1.0 if rank is not None and rank <= 5 else 0.0, 1.0 / rank if rank else 0.0)
                )
            out[c.name] = np.array(rows).reshape(-1, 2)
        return out

    def shipped(
        self,
        c: Corpus,
        k: float | None = None,
        weight: float | None = None,
        dense: np.ndarray | None = None,
    ) -> np.ndarray:
        """The shipped fusion (retrieval/search.py's k, BM25 weight and page aggregations);
        ``dense`` replaces the cosine list's page scores."""
        from llmwiki_git.retrieval import search as S

        k = S.RRF_K if k is None else k
        weight = S.LEXICAL_WEIGHT if weight is None else weight
        counts = np.bincount(c.owner, minlength=c.n_pages)
        if dense is None:
            dense = np.stack(
                [
                    S.page_scores(c.owner, counts, row, S.DENSE_AGGREGATION, dense=True)
                    for row in c.cos
                ]
            )
        pbm = np.stack(
            [
                S.page_scores(c.owner, counts, row, S.LEXICAL_AGGREGATION, dense=False)
                for row in c.bm25
            ]
        )
        return rrf([(1.0, dense, None), (weight, pbm, pbm > 0)], k)


def summarise(outcome: dict[str, np.ndarray]) -> list[str]:
    cells = []
    for name in (*B.CORPUS_NAMES, "all"):
        got = np.concatenate(list(outcome.values())) if name == "all" else outcome.get(name)
        cells.append(
            "-"
            if got is None or not len(got)
            else f"{got[:, 0].mean():.3f} / {got[:, 1].mean():.3f}"
        )
    return cells


def paired_interval(new: dict[str, np.ndarray], ref: dict[str, np.ndarray], seed: int = 0) -> str:
    diff = np.concatenate([new[k] for k in ref]) - np.concatenate(list(ref.values()))
    rng = np.random.default_rng(seed)
    boot = np.array([diff[rng.integers(0, len(diff), len(diff))].mean(axis=0) for _ in range(2000)])
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=0)
    mean = diff.mean(axis=0)
    return (
        f"{mean[0]:+.3f} [{lo[0]:+.3f}, {hi[0]:+.3f}] / {mean[1]:+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]; "
        f"R@5 won {int((diff[:, 0] > 0).sum())}, lost {int((diff[:, 0] < 0).sum())}"
    )


def table(
    lab: Lab, title: str, variants: list[tuple[str, Variant]], ref: dict[str, np.ndarray]
) -> None:
    print(f"### {title}\n")
    print(
        "| variant | foam R@5 / MRR | dendron R@5 / MRR | all R@5 / MRR | vs shipped: ΔR@5 [95 %] / ΔMRR [95 %] |"
    )
    print("|---|---|---|---|---|")
    for label, variant in variants:
        got = lab.outcomes(variant)
        print(f"| {label} | " + " | ".join(summarise(got)) + f" | {paired_interval(got, ref)} |")
    print()
    sys.stdout.flush()


def ceiling(lab: Lab, variants: list[tuple[str, Variant]]) -> None:
    """Recall at K: how often an answer page is among a list's first K pages at all, which
    is what a perfect reranker of that list's top K could reach at R@5."""
    depths = (5, 10, 20, 30, 50)
    print(
        "### Where the answers are: recall at depth K (the ceiling of a perfect reranker of the top K)\n"
    )
    print("| list | " + " | ".join(f"R@{k}" for k in depths) + " |")
    print("|---|" + "---:|" * len(depths))
    for label, variant in variants:
        hits = np.zeros(len(depths))
        n = 0
        for c in lab.corpora:
            score = variant(c)
            for i, q in enumerate(c.questions):
                if q.split != lab.split:
                    continue
                n += 1
                order = np.argsort(-score[i], kind="stable")[: depths[-1]].tolist()
                first = next((j for j, p in enumerate(order) if c.paths[p] in set(q.answers)), None)
                hits += [first is not None and first < k for k in depths]
        print(f"| {label} | " + " | ".join(f"{h / max(n, 1):.3f}" for h in hits) + " |")
    print()


# ---------------------------------------------------------------------------- extra inputs


def card_texts(c: Corpus, headings: bool) -> list[str]:
    """A page card: title and aliases, frontmatter description[, its headings]."""
    from llmwiki_git.retrieval.chunking import readable_text

    out = []
    for page in c.pages:
        names, about = (
            (page.lexical[0][0][0], page.lexical[0][1][0]) if page.lexical else (page.title, "")
        )
        parts = [names, about]
        if headings:
            heads = [readable_text(h) for text in page.texts for h in _HEADING.findall(text)]
            parts.append("; ".join(h for h in dict.fromkeys(heads) if h and h != page.title))
        out.append("\n".join(p for p in parts if p.strip()))
    return out


def stripped_question(text: str) -> str:
    from llmwiki_git.terms import QUERY_STOPWORDS

    kept = [w for w in _WORD.findall(text) if w.lower() not in QUERY_STOPWORDS]
    return " ".join(kept) or text


def rocchio(c: Corpus, seed_scores: np.ndarray, pages: int, beta: float) -> np.ndarray:
    """Dense pseudo-relevance feedback: q + beta x mean(best chunk of each top page), per row."""
    out = np.empty_like(c.cos)
    for i in range(c.cos.shape[0]):
        rows = []
        for p in np.argsort(-seed_scores[i], kind="stable")[:pages].tolist():
            mine = np.flatnonzero(c.owner == p)
            if mine.size:
                rows.append(int(mine[np.argmax(c.cos[i][mine])]))
        q = c.qvec[i] + beta * (c.vectors[rows].mean(axis=0) if rows else 0.0)
        out[i] = c.vectors @ (q / np.linalg.norm(q))
    return out


def rm3_expansion(c: Corpus, feedback: int, n_terms: int) -> np.ndarray:
    """Lexical pseudo-relevance feedback: BM25 scores of the ``n_terms`` best expansion terms
    (tf share x idf x the feedback chunk's relative score, over the top ``feedback`` chunks),
    term weights summing to 1."""
    from llmwiki_git.retrieval import lexical as lex_mod

    lex = c.lexical
    docs = [d for p in c.pages for d in p.lexical]
    memo: dict[int, Counter[str]] = {}
    out = np.zeros_like(c.bm25)
    for i, q in enumerate(c.questions):
        base = c.bm25[i]
        own = set(lex_mod.query_terms(q.question))
        top = [int(d) for d in np.argsort(-base, kind="stable")[:feedback] if base[d] > 0]
        gain: Counter[str] = Counter()
        for d in top:
            if d not in memo:
                memo[d] = Counter(
                    t for text, w in docs[d] for t in lex_mod.tokenize(text) for _ in range(int(w))
                )
            total = sum(memo[d].values()) or 1
            for term, n in memo[d].items():
                if term not in own:
                    gain[term] += n / total * base[d] / base[top[0]] * lex.idf(term)
        chosen = dict(gain.most_common(n_terms))
        norm = sum(chosen.values()) or 1.0
        for term, weight in chosen.items():
            tid = lex.term_id(term)
            if tid is not None:
                a, b = int(lex._indptr[tid]), int(lex._indptr[tid + 1])
                out[i, np.asarray(lex._doc_ids[a:b])] += (
                    weight / norm * np.asarray(lex._weights[a:b])
                )
    return out


def page_bm25(c: Corpus, b: float) -> np.ndarray:
    """BM25 with one document per page (the same fields, the body whole) instead of the best
    chunk's score: (questions x pages)."""
    from llmwiki_git.retrieval.lexical import LexicalIndex

    docs: list[Any] = []
    for page in c.pages:
        if not page.lexical:
            docs.append(page.title)
            continue
        fields = page.lexical[0]
        body = "\n\n".join(doc[3][0] for doc in page.lexical)
        docs.append((fields[0], fields[1], fields[2], (body, fields[3][1])))
    index = LexicalIndex.build(docs, b=b)
    return np.stack([index.scores(q.question) for q in c.questions]).astype(np.float64)


def title_matches(c: Corpus) -> np.ndarray:
    """1 where every token of a page's title (or an alias) occurs in the question."""
    from llmwiki_git.terms import tokenize

    names = [
        [set(tokenize(n)) for n in (p.lexical[0][0][0] if p.lexical else p.title).split("\n")]
        for p in c.pages
    ]
    out = np.zeros((len(c.questions), c.n_pages))
    for i, q in enumerate(c.questions):
        words = set(tokenize(q.question))
        for p, sets in enumerate(names):
            out[i, p] = float(any(s and s <= words for s in sets))
    return out


def rechunked_cosine(
    c: Corpus, embedder: Any, target: int, maximum: int, minimum: int
) -> np.ndarray:
    """(questions x pages) best-chunk cosine with the dense side re-cut at other sizes."""
    from llmwiki_git.retrieval import chunking

    saved = chunking.TARGET_CHARS, chunking.MAX_CHARS, chunking.MIN_CHARS
    chunking.TARGET_CHARS, chunking.MAX_CHARS, chunking.MIN_CHARS = target, maximum, minimum
    try:
        texts, owner = [], []
        for i, page in enumerate(c.pages):
            body_chunks = chunking.split_into_chunks(
                "\n\n".join(t.split("\n\n", 1)[1] if "\n\n" in t else "" for t in page.texts)
            )
            for chunk in body_chunks:
                texts.append(
                    chunking.embedding_input(page.title, chunking.readable_text(chunk.text))
                )
                owner.append(i)
    finally:
        chunking.TARGET_CHARS, chunking.MAX_CHARS, chunking.MIN_CHARS = saved
    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    print(
        f"- {c.name}: {len(texts)} chunks at {target}/{maximum}/{minimum} embedded in "
        f"{time.perf_counter() - t0:.0f} s (the store has {c.vectors.shape[0]})"
    )
    cos = (c.qvec @ np.asarray(vectors).T).astype(np.float32)
    out = np.full((cos.shape[0], c.n_pages), -1.0)
    for i in range(cos.shape[0]):
        np.maximum.at(out[i], np.asarray(owner), cos[i])
    return out


# ---------------------------------------------------------------------------- main


def check_shipped(lab: Lab, folders: dict[str, Path]) -> str:
    """The re-implementation of the shipped rrf agrees with search.search on every question."""
    from llmwiki_git.retrieval import search as search_mod
    from llmwiki_git.workspace import Workspace

    bad = 0
    for c in lab.corpora:
        mine = lab.shipped(c)
        loaded = (
            Workspace.open(folders[c.name], environ=B.clean_env(LLMWIKI_EMBEDDING_PROVIDER="local"))
            .retrieval()
            .load()
        )
        loaded.embedder = B.MemoEmbedder(loaded.embedder)
        index_of = {p.page_id: i for i, p in enumerate(loaded.store.pages)}
        for i, q in enumerate(c.questions):
            result = search_mod.search(
                q.question,
                loaded.store,
                loaded.lexical,
                loaded.embedder,
                mode="rrf",
                keep=50,
                max_pages=10,
            )
            theirs = [index_of[pid] for pid, _ in result.pages][:5]
            if theirs != np.argsort(-mine[i], kind="stable")[:5].tolist():
                bad += 1
    return (
        "agrees with `search.search` on every question"
        if bad == 0
        else f"**differs on {bad} questions**"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("/tmp/llmwiki-retrieval-bench"),
        help="the work folder of benchmarks/retrieval.py (default /tmp/llmwiki-retrieval-bench)",
    )
    parser.add_argument(
        "--split", default="tune", choices=B.SPLITS, help="which half to score (default tune)"
    )
    parser.add_argument(
        "--chunk-sizes",
        default="",
        help="dense chunk sizes to re-embed and score, e.g. 400:700:100,600:1000:150 (slow)",
    )
    args = parser.parse_args(argv)
    from llmwiki_git.retrieval.embedders import make_embedder

    print("# Retrieval experiments (hybrid ranking)\n")
    print("\n".join(B.machine_info()))
    print()
    work = args.work.resolve()
    questions = B.load_questions()
    embedder = make_embedder("local", {}, None)
    corpora = []
    folders: dict[str, Path] = {}
    for name in B.CORPUS_NAMES:
        folder = work / name
        if (
            B.sync_tree(B.CORPORA / name, folder)
            or not (folder / B.STATE / "embeddings.json").is_file()
        ):
            run = B.cli_index(folder)
            print(f"- indexed {folder}: {B.index_note(run)}")
        folders[name] = folder
        corpora.append(load_corpus(folder, name, questions, embedder))
    lab = Lab(corpora, args.split)
    ref = lab.outcomes(lab.shipped)
    print(
        f"\nSplit: **{args.split}** ({sum(len(v) for v in ref.values())} questions). Cells: R@5 / MRR@10. "
        f"Shipped rrf re-implemented here: {check_shipped(lab, folders)}.\n"
    )
    pcos, pbm = lab.pcos, lab.pbm25
    table(
        lab,
        "Single lists and the shipped fusion",
        [
            ("cosine only (best chunk per page)", lambda c: pcos[c.name]),
            ("BM25 only (best chunk per page)", lambda c: pbm[c.name]),
            ("**shipped rrf** (search.py's k, BM25 weight and page aggregations)", lab.shipped),
        ],
        ref,
    )
    ceiling(
        lab,
        [
            ("cosine only", lambda c: pcos[c.name]),
            ("BM25 only", lambda c: pbm[c.name]),
            ("shipped rrf", lab.shipped),
        ],
    )
    table(
        lab,
        "Fusion: RRF (k, BM25 weight)",
        [
            (f"rrf k = {k}, BM25 x{w}", lambda c, k=k, w=w: lab.shipped(c, k, w))
            for k in (10, 20, 40, 60)
            for w in (1.0, 1.5, 2.0)
        ],
        ref,
    )
    normalisers: list[
        tuple[str, Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]
    ] = [
        ("BM25/max + raw cosine", by_max, lambda s: s),
        ("min-max each", min_max, min_max),
        ("z-score each", z_score, z_score),
    ]
    table(
        lab,
        "Fusion: convex combination a x BM25 + (1 - a) x cosine, scores normalised per list",
        [
            (
                f"{label}, a = {a}",
                lambda c, a=a, nb=nb, nc=nc: a * nb(pbm[c.name]) + (1 - a) * nc(pcos[c.name]),
            )
            for label, nb, nc in normalisers
            for a in (0.3, 0.4, 0.5, 0.6, 0.7)
        ],
        ref,
    )

    for c in corpora:
        c_cards = embedder.embed(card_texts(c, False))
        c_heads = embedder.embed(card_texts(c, True))
        lab.cache[(c.name, "card")] = (c.qvec @ np.asarray(c_cards).T).astype(np.float64)
        lab.cache[(c.name, "card+headings")] = (c.qvec @ np.asarray(c_heads).T).astype(np.float64)
        lab.cache[(c.name, "stripped")] = c.per_page(
            embedder.embed([stripped_question(q.question) for q in c.questions]) @ c.vectors.T, -1.0
        )
    card_variants: list[tuple[str, Variant]] = []
    for kind in ("card", "card+headings"):
        card_variants += [
            (f"{kind} alone", lambda c, kind=kind: lab.cache[(c.name, kind)]),
            (
                f"rrf, dense = max(best chunk, {kind})",
                lambda c, kind=kind: lab.shipped(
                    c, dense=np.maximum(pcos[c.name], lab.cache[(c.name, kind)])
                ),
            ),
            (
                f"rrf, dense = best chunk + 0.3 x {kind}",
                lambda c, kind=kind: lab.shipped(
                    c, dense=pcos[c.name] + 0.3 * lab.cache[(c.name, kind)]
                ),
            ),
            (
                f"rrf, {kind} as a third list (weight 0.5)",
                lambda c, kind=kind: rrf(
                    [
                        (1.0, pcos[c.name], None),
                        (0.5, lab.cache[(c.name, kind)], None),
                        (1.5, pbm[c.name], pbm[c.name] > 0),
                    ],
                    20,
                ),
            ),
        ]
    table(
        lab,
        "Dense side: a page card vector (title, aliases, description[, headings])",
        card_variants,
        ref,
    )
    table(
        lab,
        "Dense side: the question as embedded",
        [
            (
                "question words and filler removed, cosine only",
                lambda c: lab.cache[(c.name, "stripped")],
            ),
            (
                "question words and filler removed, rrf",
                lambda c: lab.shipped(c, dense=lab.cache[(c.name, "stripped")]),
            ),
        ],
        ref,
    )

    for c in corpora:
        lab.cache[(c.name, "rocchio-bm25")] = c.per_page(rocchio(c, pbm[c.name], 3, 0.5), -1.0)
        lab.cache[(c.name, "rocchio-fused")] = c.per_page(rocchio(c, lab.shipped(c), 3, 0.5), -1.0)
        for fb, nt in ((3, 5), (3, 10), (5, 5)):
            lab.cache[(c.name, f"rm3-{fb}-{nt}")] = rm3_expansion(c, fb, nt)
        lab.cache[(c.name, "title")] = title_matches(c)
    prf: list[tuple[str, Variant]] = []
    for seed in ("bm25", "fused"):
        prf += [
            (
                f"dense PRF (Rocchio, top 3 pages of {seed}, beta 0.5), cosine only",
                lambda c, s=seed: lab.cache[(c.name, f"rocchio-{s}")],
            ),
            (
                f"dense PRF (Rocchio, top 3 pages of {seed}, beta 0.5), rrf",
                lambda c, s=seed: lab.shipped(c, dense=lab.cache[(c.name, f"rocchio-{s}")]),
            ),
        ]
    for fb, nt in ((3, 5), (3, 10), (5, 5)):
        for beta in (0.5, 1.0, 2.0):

            def lexical_prf(
                c: Corpus, fb: int = fb, nt: int = nt, beta: float = beta
            ) -> np.ndarray:
                return c.per_page(c.bm25 + beta * lab.cache[(c.name, f"rm3-{fb}-{nt}")], 0.0)

            prf.append(
                (
                    f"lexical PRF ({nt} terms from the top {fb} chunks, x{beta}), BM25 only",
                    lexical_prf,
                )
            )
            prf.append(
                (
                    f"lexical PRF ({nt} terms from the top {fb} chunks, x{beta}), rrf",
                    lambda c, f=lexical_prf: rrf(
                        [(1.0, pcos[c.name], None), (1.5, f(c), f(c) > 0)], 20
                    ),
                )
            )
    table(lab, "Pseudo-relevance feedback", prf, ref)
    for c in corpora:
        for b in (0.75, 0.5):
            lab.cache[(c.name, f"page-bm25-{b}")] = page_bm25(c, b)
    page_variants: list[tuple[str, Variant]] = []
    for b in (0.75, 0.5):
        page_variants += [
            (f"page BM25 (b = {b}) only", lambda c, b=b: lab.cache[(c.name, f"page-bm25-{b}")]),
            (
                f"rrf, page BM25 (b = {b}) instead of the best chunk's",
                lambda c, b=b: rrf(
                    [
                        (1.0, pcos[c.name], None),
                        (
                            1.5,
                            lab.cache[(c.name, f"page-bm25-{b}")],
                            lab.cache[(c.name, f"page-bm25-{b}")] > 0,
                        ),
                    ],
                    20,
                ),
            ),
            (
                f"rrf, best chunk's and page BM25 (b = {b}), x0.75 each",
                lambda c, b=b: rrf(
                    [
                        (1.0, pcos[c.name], None),
                        (0.75, pbm[c.name], pbm[c.name] > 0),
                        (
                            0.75,
                            lab.cache[(c.name, f"page-bm25-{b}")],
                            lab.cache[(c.name, f"page-bm25-{b}")] > 0,
                        ),
                    ],
                    20,
                ),
            ),
        ]
    table(lab, "Lexical side: BM25 over whole pages", page_variants, ref)
    table(
        lab,
        "A title/alias exact-match bonus on the shipped fusion",
        [
            (
                f"+ {bonus} when a title or alias is wholly in the question",
                lambda c, b=bonus: lab.shipped(c) + b * lab.cache[(c.name, "title")],
            )
            for bonus in (0.005, 0.01, 0.02)
        ],
        ref,
    )

    sizes = [
        tuple(int(x) for x in spec.split(":"))
        for spec in args.chunk_sizes.split(",")
        if spec.strip()
    ]
    if sizes:
        print("### Dense side: chunk size (re-embedded; BM25 keeps the shipped chunks)\n")
        for target, maximum, minimum in sizes:
            for c in corpora:
                lab.cache[(c.name, f"chunks-{target}")] = rechunked_cosine(
                    c, embedder, target, maximum, minimum
                )
        print()
        table(
            lab,
            "Dense chunk sizes",
            [
                v
                for target, _, _ in sizes
                for v in (
                    (
                        f"chunks ~{target} chars, cosine only",
                        lambda c, t=target: lab.cache[(c.name, f"chunks-{t}")],
                    ),
                    (
                        f"chunks ~{target} chars, rrf",
                        lambda c, t=target: lab.shipped(
                            c, dense=lab.cache[(c.name, f"chunks-{t}")]
                        ),
                    ),
                    (
                        f"chunks ~{target} chars and the shipped ones (max), rrf",
                        lambda c, t=target: lab.shipped(
                            c, dense=np.maximum(pcos[c.name], lab.cache[(c.name, f"chunks-{t}")])
                        ),
                    ),
                )
            ],
            ref,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
