"""The appended layer of a lexical index (issue 39): what an update by difference writes
instead of rewriting every posting.

A BM25 weight depends on the whole wiki (N, each term's document frequency, the average
length), so one edited chunk changes every precomputed weight: rewriting them cost 1.4 s of
CPU and 90 MB of writes at 50,000 pages. A layered index keeps the base postings as they were
written (term frequencies, mapped, never rewritten), and adds:

* ``doc_map`` (int64, one per base document): the document's number in the index now, or
  -1 when it is gone (its page edited or deleted: a dead row);
* a segment: the postings of every document added since the base (its own sorted vocabulary,
  ``seg_terms``/``seg_term_offsets``, term-major ``seg_indptr``, ``seg_doc_ids``, ``seg_tf``);
* the length of every document now (``lengths``), from which N and the average follow.

A query gathers, for each of its terms, the live base postings and the segment's, and computes
their weights with the statistics of now -- the same formula, in the same float64 operations,
as a build: the scores equal a fresh build's bit for bit. When dead base documents or segment
documents pass :data:`COMPACT_FRACTION` of the base, the update writes a plain index again
(compaction; ``llmwiki index --compact`` asks for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import LexicalIndexError

#: Compact (write a plain index) when the base documents gone, or the documents in the
#: segment, pass this fraction of the base's documents: a query then reads at most ~1.2x the
#: postings of a plain index, and the dead rows stay a minority of the files.
COMPACT_FRACTION = 0.2

#: The layer's files (name -> dtype), beside the base's in the index folder.
LAYER_ARRAYS: dict[str, np.dtype[np.generic]] = {
    "doc_map": np.dtype(np.int64),
    "seg_terms": np.dtype(np.uint8),
    "seg_term_offsets": np.dtype(np.int64),
    "seg_indptr": np.dtype(np.int64),
    "seg_doc_ids": np.dtype(np.int32),
    "seg_tf": np.dtype(np.float32),
}


def find_term(blob: np.ndarray, offsets: np.ndarray, count: int, key: bytes) -> int | None:
    """Binary search for the UTF-8 ``key`` in a sorted vocabulary stored as concatenated bytes
    and end offsets (``count`` terms); its id or None."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        probe = blob[int(offsets[mid]) : int(offsets[mid + 1])].tobytes()
        if probe < key:
            lo = mid + 1
        elif probe > key:
            hi = mid
        else:
            return mid
    return None


def decode_terms(blob: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> list[str]:
    data = np.asarray(blob).tobytes()
    bounds = np.asarray(offsets).tolist()
    return [data[bounds[i] : bounds[i + 1]].decode("utf-8") for i in ids.tolist()]


def vocabulary(terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """A sorted vocabulary as concatenated UTF-8 bytes and offsets (one more than terms)."""
    encoded = [t.encode("utf-8") for t in terms]
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


@dataclass(frozen=True)
class Layer:
    """The appended part of a layered index (see the module docstring)."""

    doc_map: np.ndarray
    terms: np.ndarray
    term_offsets: np.ndarray
    indptr: np.ndarray
    doc_ids: np.ndarray
    tf: np.ndarray

    @property
    def n_terms(self) -> int:
        return len(self.indptr) - 1

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "doc_map": self.doc_map,
            "seg_terms": self.terms,
            "seg_term_offsets": self.term_offsets,
            "seg_indptr": self.indptr,
            "seg_doc_ids": self.doc_ids,
            "seg_tf": self.tf,
        }

    def postings(self, key: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        """The segment's (documents, term frequencies) of the term ``key``."""
        tid = find_term(self.terms, self.term_offsets, self.n_terms, key)
        if tid is None:
            return None
        start, end = int(self.indptr[tid]), int(self.indptr[tid + 1])
        return np.asarray(self.doc_ids[start:end], dtype=np.int64), np.asarray(
            self.tf[start:end], dtype=np.float64
        )

    def segment_postings(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """The segment as (vocabulary, term id, document, tf) per posting."""
        names = decode_terms(self.terms, self.term_offsets, np.arange(self.n_terms))
        term = np.repeat(np.arange(self.n_terms, dtype=np.int64), np.diff(self.indptr))
        return (
            names,
            term,
            np.asarray(self.doc_ids, dtype=np.int64),
            np.asarray(self.tf, dtype=np.float64),
        )

    def check(self, base_docs: int, n_docs: int) -> list[str]:
        """What does not fit: a map of another size, documents out of range, offsets."""
        problems = []
        if len(self.doc_map) != base_docs:
            problems.append("the document map does not cover the base")
        if len(self.doc_map) and (
            int(self.doc_map.min()) < -1 or int(self.doc_map.max()) >= n_docs
        ):
            problems.append("the document map points outside the index")
        if len(self.doc_ids) and (int(self.doc_ids.min()) < 0 or int(self.doc_ids.max()) >= n_docs):
            problems.append("segment document ids out of range")
        if (
            len(self.indptr) != len(self.term_offsets)
            or int(self.indptr[0]) != 0
            or int(self.indptr[-1]) != len(self.doc_ids)
            or len(self.tf) != len(self.doc_ids)
            or int(self.term_offsets[0]) != 0
            or int(self.term_offsets[-1]) != len(self.terms)
            or bool(np.any(np.diff(self.indptr) < 0))
            or bool(np.any(np.diff(self.term_offsets) < 0))
        ):
            problems.append("segment offsets do not fit")
        if len(self.tf) and not (np.all(np.isfinite(self.tf)) and float(self.tf.min()) >= 0):
            problems.append("negative or non-finite segment frequencies")
        return problems

    def due(self) -> bool:
        """Whether the layer has grown past :data:`COMPACT_FRACTION` of the base."""
        base = max(len(self.doc_map), 1)
        dead = int(np.count_nonzero(self.doc_map < 0))
        added = len(np.unique(self.doc_ids)) if len(self.doc_ids) else 0
        return dead > COMPACT_FRACTION * base or added > COMPACT_FRACTION * base


def segment(
    names: list[str], term: np.ndarray, doc: np.ndarray, tf: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A segment from postings named by ``names[term]``: its sorted vocabulary (bytes,
    offsets), term-major indptr, documents and frequencies sorted by term then document."""
    alive: list[int] = (
        np.flatnonzero(np.bincount(term, minlength=len(names))).tolist() if len(term) else []
    )
    used = sorted({names[i] for i in alive})  # a term of the old segment and of the new pages
    position = {t: i for i, t in enumerate(used)}
    remap = np.zeros(len(names), dtype=np.int64)
    if len(used):
        remap[np.asarray(alive, dtype=np.int64)] = [position[names[i]] for i in alive]
    else:
        return vocabulary([])[0], vocabulary([])[1], np.zeros(1, np.int64), *_no_postings()
    new_term = remap[term] if len(term) else np.zeros(0, dtype=np.int64)
    order = np.lexsort((doc, new_term))
    blob, offsets = vocabulary(used)
    indptr = np.zeros(len(used) + 1, dtype=np.int64)
    np.cumsum(np.bincount(new_term, minlength=len(used)), out=indptr[1:])
    return (
        blob,
        offsets,
        indptr,
        np.asarray(doc, dtype=np.int64)[order].astype(np.int32),
        np.asarray(tf, dtype=np.float64)[order].astype(np.float32),
    )


def _no_postings() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)


def checked_layer(
    arrays: dict[str, np.ndarray], meta: dict[str, Any], n_docs: int, where: str
) -> Layer:
    """The layer's arrays taken out of ``arrays`` (a loaded index's), checked against its
    base (``meta``: its ``meta.json``); LexicalIndexError naming ``where`` otherwise."""
    layer = Layer(*(arrays.pop(name) for name in LAYER_ARRAYS))
    problems = layer.check(_layer_base_docs(meta), n_docs)
    if "tf" not in arrays or "lengths" not in arrays:
        problems.append("no frequencies")
    if problems:
        raise LexicalIndexError(
            f"{where}: its appended layer does not fit ({', '.join(problems)}; corrupt index)"
        )
    return layer


def _layer_base_docs(meta: dict[str, Any]) -> int:
    layer = meta.get("layer")
    value = layer.get("base_docs") if isinstance(layer, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
