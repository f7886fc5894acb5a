"""Documents to postings: the tokenized form :class:`~.lexical.LexicalIndex` is built from.

A document's fields are tokenized (:func:`llmwiki_git.terms.tokenize`) and weighted; the
result is the sorted vocabulary, the postings (term, document, weighted term frequency)
sorted by term then document, and each document's weighted length. A large wiki is
tokenized in shares on every core (``wiki/parallel.py``) and merged: the same arrays, bit
for bit, as one process gives.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..terms import tokenize

#: What :meth:`LexicalIndex.build` indexes: a text, or ``(text, weight)`` fields.
Document = str | Sequence[tuple[str, float]]


class _Vocabulary(dict):  # type: ignore[type-arg]
    """term -> id, numbering new terms as they come (``vocab[term]`` never fails)."""

    def __missing__(self, term: str) -> int:
        self[term] = tid = len(self)
        return tid


Tokenized = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]
SHARED_DOCS = (
    4000  # from this many documents, tokenize in shares on every core (a fork costs ~20 ms)
)


def tokenize_all(docs: Sequence[Document]) -> Tokenized:
    """Tokenize ``docs``: the sorted vocabulary, the postings (term id, document, weighted
    term frequency) sorted by term then document, and each document's weighted length.
    Many documents are tokenized in shares on every core (wiki/parallel.py) and merged:
    the same arrays, bit for bit, as one process gives."""
    if len(docs) >= SHARED_DOCS:
        from ..wiki.parallel import in_shares  # noqa: PLC0415 - building only, never a search

        shares = in_shares(lambda share: _plain(_tokenize_share(share)), list(docs))
        if len(shares) > 1:
            return _merge(shares, len(docs))
        return _tokenize_share(docs)
    return _tokenize_share(docs)


def _plain(part: Tokenized) -> tuple[list[str], bytes, bytes, bytes, bytes]:
    """A share's arrays as bytes, for `marshal` to carry back from a worker."""
    terms, term, doc, tf, lengths = part
    return (
        terms,
        term.astype(np.int64).tobytes(),
        doc.astype(np.int64).tobytes(),
        tf.tobytes(),
        lengths.tobytes(),
    )


def _merge(shares: list[Any], n_docs: int) -> Tokenized:
    """Shares tokenized apart (documents numbered from 0 in each) as one: a vocabulary of
    every term, term ids renumbered into it, documents moved to their place, the postings
    sorted by (term, document) again."""
    parts = [
        part
        if isinstance(part[1], np.ndarray)
        else (
            part[0],
            *(
                np.frombuffer(b, dtype=t)
                for b, t in zip(part[1:], (np.int64, np.int64, np.float64, np.float64))
            ),
        )
        for part in shares
    ]
    vocabulary = sorted(set().union(*(part[0] for part in parts)))
    position = {term: i for i, term in enumerate(vocabulary)}
    terms, docs, tfs, lengths = [], [], [], []
    offset = 0
    for share_terms, term, doc, tf, share_lengths in parts:
        remap = np.fromiter(
            (position[t] for t in share_terms), dtype=np.int64, count=len(share_terms)
        )
        terms.append(remap[term] if len(term) else term)
        docs.append(doc + offset)
        tfs.append(tf)
        lengths.append(share_lengths)
        offset += len(share_lengths)
    keys = np.concatenate(terms) * max(n_docs, 1) + np.concatenate(docs)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    term_ids = keys // max(n_docs, 1)
    return (
        vocabulary,
        term_ids,
        keys - term_ids * max(n_docs, 1),
        np.concatenate(tfs)[order],
        np.concatenate(lengths),
    )


def _tokenize_share(docs: Sequence[Document]) -> Tokenized:
    """`tokenize_all` in this process."""
    n_docs = len(docs)
    vocab = _Vocabulary()
    term_of = vocab.__getitem__
    token_ids = array("q")  # 8 bytes a token, no per-item objects
    token_weights = array("d")
    lengths = np.zeros(n_docs, dtype=np.float64)
    counts = np.zeros(n_docs, dtype=np.int64)
    # A page's title, description and path words are fields of each of its chunks: the same
    # short texts again and again, tokenized once.
    short: dict[str, list[str]] = {}
    for i, doc in enumerate(docs):
        fields = ((doc, 1.0),) if isinstance(doc, str) else doc
        for text, weight in fields:
            if weight <= 0:
                continue
            tokens = short.get(text) if len(text) < 256 else None
            if tokens is None:
                tokens = tokenize(text)
                if len(text) < 256:
                    short[text] = tokens
            if not tokens:
                continue
            lengths[i] += weight * len(tokens)
            counts[i] += len(tokens)
            token_ids.extend(map(term_of, tokens))
            token_weights.extend([float(weight)] * len(tokens))
    # Term ids follow the sorted vocabulary: code point order, which is also the
    # byte order of the UTF-8 blob that load() binary-searches.
    sorted_terms = sorted(vocab)
    remap = np.empty(len(vocab), dtype=np.int64)
    remap[[vocab[t] for t in sorted_terms]] = np.arange(len(sorted_terms), dtype=np.int64)
    term_of_token = remap[np.frombuffer(token_ids, dtype=np.int64)] if token_ids else remap[:0]
    doc_of_token = np.repeat(np.arange(n_docs, dtype=np.int64), counts)
    keys, where = np.unique(term_of_token * max(n_docs, 1) + doc_of_token, return_inverse=True)
    tf = np.bincount(
        where.reshape(-1),
        weights=np.frombuffer(token_weights, dtype=np.float64),
        minlength=len(keys),
    )
    term = keys // max(n_docs, 1)
    return sorted_terms, term, keys - term * max(n_docs, 1), tf, lengths
