"""BM25 over every chunk of the wiki, saved to disk and memory-mapped back in a fresh process.

Scoring (the reference tool's formula, with statistics over the WHOLE wiki, not the
candidates): for a query ``q`` and a chunk ``d``

    score(d) = sum over query tokens t (repeats count again) of
               idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avg_len))
    idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))          (Lucene's "RSJ + 1" idf)

with ``k1 = 1.5`` and ``b = 0.75``. The idf is strictly positive for every ``0 < df <= N``
(the argument of ``ln`` is > 1), so a term found in every chunk, or in exactly half of them,
still adds a small positive amount: no negative scores, no inverted ranking, no zero idf
(the open rank-bm25 bugs). A chunk without any query token scores exactly 0.

Why not the ``bm25s`` package (numpy-only; the dependency study's pick): its "lucene" method
is this formula minus the constant ``(k1 + 1)`` factor (checked: our scores equal 2.5 x its
scores to float32 rounding on 30,000 chunks), and its mmap load works, but importing it
eagerly imports scipy.sparse (and numba) whenever they are installed: ``import bm25s``
took 0.23-0.37 s on this machine with scipy present, 60-120 ms in a clean venv, against
12-18 ms for this module, and its ``load()`` parses the vocabulary JSON (12 ms at 30,000
chunks, growing with the vocabulary) where ours parses nothing (2-3 ms). Its ``save()`` is
not atomic, ``load()`` does not detect truncated or mismatched files, and an empty query
raises ``IndexError``. What we need is ~200 lines of numpy, so it lives here
(docs/bm25-notes.md has the measurements):

* ``weights.npy`` (float32) and ``doc_ids.npy`` (int32): the precomputed BM25 weight of
  every (term, chunk) pair, grouped by term (CSC / term-major CSR), ``indptr.npy`` (int64)
  giving each term's slice. A query adds up one slice per query term: O(postings).
* ``terms.npy`` (uint8, the UTF-8 bytes of the sorted vocabulary, concatenated) and
  ``term_offsets.npy`` (int64): term lookup is a binary search over the mapped bytes, so
  loading costs no parsing at all, whatever the vocabulary size.
* ``tf.npy`` (float32, per posting) and ``lengths.npy`` (float64, per document): the raw
  weighted term frequencies and document lengths, so that :meth:`LexicalIndex.updated`
  derives a changed wiki's index from this one by tokenizing only the new documents and
  recomputing the statistics (N, df, average length) and weights from the delta. Optional
  on load: an index written without them is queried as before and rebuilt whole.
* ``meta.json``: format version, tokenizer version, counts, parameters, and each file's
  size and SHA-256 (sizes are always checked on load; hashes with ``verify=True``).

All arrays are read with ``numpy.load(mmap_mode="r")``; saving writes a temporary sibling
folder and renames it into place.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import confine
from ..errors import LexicalIndexError, PathRefused
from ..terms import TOKENIZER_VERSION, query_terms
from .lexlayer import LAYER_ARRAYS, Layer, checked_layer, decode_terms, find_term, segment
from .postings import Document, tokenize_all

__all__ = [
    "B",
    "FIELD_WEIGHTS",
    "FORMAT_VERSION",
    "K1",
    "LexicalIndex",
    "Document",
    "LexicalIndexError",
]

K1 = 1.5
B = 0.75
#: BM25F field weights of a chunk (indexer.lexical_fields): a term in the page title, an
#: alias or the frontmatter description counts as two body terms; the words of the page's
#: path count once more. Chosen on the tuning half of the labelled questions; a separate
#: headings field did not help (docs/embeddings.md).
FIELD_WEIGHTS = {"title": 2.0, "description": 1.0, "path": 1.0, "body": 1.0}
FORMAT = "llmwiki-git/bm25"
#: Bumped when the files or the scoring change; an index of another version is refused.
#: Version 2 may carry an appended layer (lexlayer.py) that version 1 readers would misread;
#: a version 1 index is read as it is (a plain index) and written as version 2.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)

META_FILE = "meta.json"
LEXICAL_DIR = "bm25"  # the index's folder in the state folder
_ARRAYS: dict[str, np.dtype[Any]] = {
    "terms": np.dtype(np.uint8),
    "term_offsets": np.dtype(np.int64),
    "indptr": np.dtype(np.int64),
    "doc_ids": np.dtype(np.int32),
    "weights": np.dtype(np.float32),
}
#: Kept for :meth:`LexicalIndex.updated` (raw weighted term frequency per posting, weighted
#: length per document); optional on load: an index written without them is rebuilt whole.
_UPDATE_ARRAYS: dict[str, np.dtype[Any]] = {
    "tf": np.dtype(np.float32),
    "lengths": np.dtype(np.float64),
}
#: The files a layered index keeps from its base as they are (hard-linked on save).
_BASE_FILES = frozenset(("terms", "term_offsets", "indptr", "doc_ids", "weights", "tf"))


# ------------------------------------------------------------------------------- index


class LexicalIndex:
    """BM25 (k1 = 1.5, b = 0.75, idf ``ln(1 + (N - df + .5) / (df + .5))``) over documents
    numbered 0..n-1 in the order given to :meth:`build`.

    Build with :meth:`build`, persist with :meth:`save`, reopen with :meth:`load`; query
    with :meth:`scores`, :meth:`top` or :meth:`scores_for`. Instances are read-only.
    """

    def __init__(
        self,
        *,
        n_docs: int,
        avg_doc_len: float,
        arrays: dict[str, np.ndarray],
        k1: float = K1,
        b: float = B,
        files: dict[str, dict[str, Any]] | None = None,
        layer: Layer | None = None,
        source: Path | None = None,
        base_ids: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        self.n_docs = n_docs
        self.avg_doc_len = avg_doc_len
        self.k1 = k1
        self.b = b
        self._terms = arrays["terms"]
        self._term_offsets = arrays["term_offsets"]
        self._indptr = arrays["indptr"]
        self._doc_ids = arrays["doc_ids"]
        self._weights = arrays["weights"]
        self._tf: np.ndarray | None = arrays.get("tf")
        self._lengths: np.ndarray | None = arrays.get("lengths")
        self._files = files
        self._layer = layer  # the appended layer (lexlayer.py); None: a plain index
        self._source = source  # the folder the base's files were read from (linked on save)
        # (device, inode) of each base file when it was read: only that file is linked
        self._base_ids = dict(base_ids or {})

    # -- construction ------------------------------------------------------------------

    @classmethod
    def build(cls, docs: Sequence[Document], *, k1: float = K1, b: float = B) -> LexicalIndex:
        """Index ``docs`` (document ``i`` is ``docs[i]``); statistics cover all of them.

        A document is a string, or a sequence of ``(text, weight)`` fields: BM25F's simple
        form, where a term's frequency and the document's length are the weighted sums
        over its fields (a title token with weight 3 counts as three body tokens)."""
        terms, term, doc, tf, lengths = tokenize_all(docs)
        return cls._assemble(terms, term, doc, tf, lengths, k1=k1, b=b)

    def updated(self, layout: Sequence[int | Document]) -> LexicalIndex:
        """The index of a changed wiki, scoring as :meth:`build` over the new documents does,
        without tokenizing the unchanged ones: ``layout[i]`` is document ``i`` of the new
        index, either the id of an unchanged document of this index (kept with its raw term
        frequencies and length) or a new :data:`Document` (tokenized). The result is layered
        (lexlayer.py): the base postings are kept as they are, the new documents' postings
        appended, the statistics those of now; past :data:`lexlayer.COMPACT_FRACTION` it is
        compacted into a plain index equal to a build's, array for array.

        Raises :class:`LexicalIndexError` when this index has no raw frequencies (written
        before they were kept): build from every document instead."""
        if self._tf is None or self._lengths is None:
            raise LexicalIndexError("this lexical index keeps no term frequencies (rebuild it)")
        cur_to_new, fresh_at, fresh_docs = self._placed(layout)
        at = np.asarray(fresh_at, dtype=np.int64)
        kept = np.flatnonzero(cur_to_new[:-1] >= 0)
        lengths = np.zeros(len(layout), dtype=np.float64)
        lengths[cur_to_new[kept]] = np.asarray(self._lengths, dtype=np.float64)[kept]
        f_terms, f_term, f_doc, f_tf, f_lengths = tokenize_all(fresh_docs)
        lengths[at] = f_lengths
        base_map = (
            self._layer.doc_map
            if self._layer is not None
            else np.arange(self.n_docs, dtype=np.int64)
        )
        doc_map = cur_to_new[base_map]  # a dead base document (-1) lands on the "dropped" slot
        names: list[str] = []
        s_term = s_doc = np.zeros(0, dtype=np.int64)
        s_tf = np.zeros(0, dtype=np.float64)
        if self._layer is not None:  # the earlier segment's documents, renumbered
            names, s_term, s_doc, s_tf = self._layer.segment_postings()
            s_doc = cur_to_new[s_doc]
            keep = s_doc >= 0
            s_term, s_doc, s_tf = s_term[keep], s_doc[keep], s_tf[keep]
        layer = Layer(
            doc_map,
            *segment(
                names + list(f_terms),
                np.concatenate((s_term, np.asarray(f_term, dtype=np.int64) + len(names))),
                np.concatenate((s_doc, at[np.asarray(f_doc, dtype=np.int64)])),
                np.concatenate((s_tf, np.asarray(f_tf, dtype=np.float64))),
            ),
        )
        index = LexicalIndex(
            n_docs=len(layout),
            avg_doc_len=float(lengths.mean()) if len(layout) and lengths.any() else 0.0,
            arrays={**self._base_arrays(), "lengths": lengths},
            k1=self.k1,
            b=self.b,
            files=self._files,
            layer=layer,
            source=self._source,
            base_ids=self._base_ids,
        )
        return index.compacted() if layer.due() else index

    def _placed(
        self, layout: Sequence[int | Document]
    ) -> tuple[np.ndarray, list[int], list[Document]]:
        """For `updated`: each document's new number (-1: dropped; one more slot, -1, for
        "no document"), and the new documents with their places."""
        cur_to_new = np.full(self.n_docs + 1, -1, dtype=np.int64)
        fresh_at: list[int] = []
        fresh_docs: list[Document] = []
        for i, item in enumerate(layout):
            if isinstance(item, (int, np.integer)):
                if not 0 <= item < self.n_docs or cur_to_new[item] != -1:
                    raise IndexError(
                        f"document {item} is not a document of this index or is kept twice"
                    )
                cur_to_new[item] = i
            else:
                fresh_at.append(i)
                fresh_docs.append(item)
        return cur_to_new, fresh_at, fresh_docs

    def _base_arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "terms": self._terms,
            "term_offsets": self._term_offsets,
            "indptr": self._indptr,
            "doc_ids": self._doc_ids,
            "weights": self._weights,
        }
        if self._tf is not None:
            arrays["tf"] = self._tf
        return arrays

    @property
    def layered(self) -> bool:
        """Whether this index carries an appended layer (:meth:`compacted` removes it)."""
        return self._layer is not None

    def compacted(self) -> LexicalIndex:
        """This index without its layer: the plain index a build over the same documents
        writes, array for array (itself when it has no layer)."""
        layer = self._layer
        if layer is None:
            return self
        assert self._tf is not None and self._lengths is not None
        base_term = np.repeat(
            np.arange(self.n_terms, dtype=np.int64), np.diff(np.asarray(self._indptr))
        )
        mapped = layer.doc_map[np.asarray(self._doc_ids, dtype=np.int64)]
        keep = mapped >= 0
        b_term, b_doc = base_term[keep], mapped[keep]
        b_tf = np.asarray(self._tf, dtype=np.float64)[keep]
        alive = np.flatnonzero(np.bincount(b_term, minlength=self.n_terms))
        b_names = decode_terms(self._terms, self._term_offsets, alive)
        s_names, s_term, s_doc, s_tf = layer.segment_postings()
        terms = sorted(set(b_names).union(s_names))
        position = {t: i for i, t in enumerate(terms)}
        b_map = np.zeros(self.n_terms, dtype=np.int64)
        b_map[alive] = [position[t] for t in b_names]
        s_map = np.fromiter((position[t] for t in s_names), dtype=np.int64, count=len(s_names))
        term = np.concatenate((b_map[b_term], s_map[s_term]))
        doc = np.concatenate((b_doc, s_doc))
        tf = np.concatenate((b_tf, s_tf))
        order = np.lexsort((doc, term))
        lengths = np.asarray(self._lengths, dtype=np.float64)
        return self._assemble(
            terms, term[order], doc[order], tf[order], lengths, k1=self.k1, b=self.b
        )

    @classmethod
    def _assemble(
        cls,
        terms: list[str],
        term: np.ndarray,
        doc: np.ndarray,
        tf: np.ndarray,
        lengths: np.ndarray,
        *,
        k1: float,
        b: float,
    ) -> LexicalIndex:
        """The index of postings ``(term[i], doc[i], tf[i])`` sorted by term then document,
        ``terms`` the sorted vocabulary (every term with a posting), ``lengths`` per document."""
        n_docs = len(lengths)
        n_terms = len(terms)
        df = np.bincount(term, minlength=n_terms).astype(np.float64)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        avg_doc_len = float(lengths.mean()) if n_docs and lengths.any() else 0.0
        if len(term):
            norm = k1 * (1.0 - b + b * lengths / avg_doc_len)  # per document, then per posting
            weights = idf[term] * tf * (k1 + 1.0) / (tf + norm[doc])
        else:
            weights = np.zeros(0, dtype=np.float64)
        encoded = [t.encode("utf-8") for t in terms]
        term_offsets = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=term_offsets[1:])
        arrays = {
            "terms": np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(),
            "term_offsets": term_offsets,
            "indptr": np.concatenate(([0], np.cumsum(df, dtype=np.int64))).astype(np.int64),
            "doc_ids": doc.astype(np.int32),
            "weights": weights.astype(np.float32),
            "tf": tf.astype(np.float32),
            "lengths": lengths.astype(np.float64),
        }
        return cls(n_docs=n_docs, avg_doc_len=avg_doc_len, arrays=arrays, k1=k1, b=b)

    @property
    def updatable(self) -> bool:
        """Whether :meth:`updated` can derive a changed wiki's index from this one."""
        return self._tf is not None and self._lengths is not None

    # -- queries -----------------------------------------------------------------------

    @property
    def n_terms(self) -> int:
        """Size of the vocabulary."""
        return len(self._indptr) - 1

    def __len__(self) -> int:
        return self.n_docs

    def term_id(self, term: str) -> int | None:
        """The id of an already tokenized ``term`` in the (base) vocabulary, or None when no
        document of it has the term (a layered index: see :meth:`document_frequency`)."""
        return find_term(self._terms, self._term_offsets, self.n_terms, term.encode("utf-8"))

    def document_frequency(self, term: str) -> int:
        """How many documents contain the already tokenized ``term``."""
        if self._layer is not None:
            return len(self._live(term)[0])
        tid = self.term_id(term)
        return 0 if tid is None else int(self._indptr[tid + 1] - self._indptr[tid])

    def _live(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """A layered index's (documents, frequencies) of ``term``: the base's postings of
        documents still there, renumbered, and the segment's."""
        assert self._layer is not None and self._tf is not None
        docs: list[np.ndarray] = []
        freqs: list[np.ndarray] = []
        tid = self.term_id(term)
        if tid is not None:
            start, end = int(self._indptr[tid]), int(self._indptr[tid + 1])
            mapped = self._layer.doc_map[np.asarray(self._doc_ids[start:end], dtype=np.int64)]
            keep = mapped >= 0
            docs.append(mapped[keep])
            freqs.append(np.asarray(self._tf[start:end], dtype=np.float64)[keep])
        appended = self._layer.postings(term.encode("utf-8"))
        if appended is not None:
            docs.append(appended[0])
            freqs.append(appended[1])
        if not docs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return np.concatenate(docs), np.concatenate(freqs)

    def idf(self, term: str) -> float:
        """The idf of ``term`` (> 0 for every term present; 0.0 for an unknown one)."""
        df = self.document_frequency(term)
        if df == 0:
            return 0.0
        return math.log1p((self.n_docs - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        """One float32 score >= 0 per document (0 = no query term in it)."""
        if self._layer is not None:
            return self._layered_scores(query)
        scores = np.zeros(self.n_docs, dtype=np.float32)
        counts: dict[int, int] = {}
        for token in query_terms(query):
            tid = self.term_id(token)
            if tid is not None:
                counts[tid] = counts.get(tid, 0) + 1
        for tid in sorted(counts):
            start, end = int(self._indptr[tid]), int(self._indptr[tid + 1])
            # Within one term's slice every doc id appears once: fancy += is safe.
            weights = np.asarray(self._weights[start:end])
            if counts[tid] != 1:
                weights = weights * np.float32(counts[tid])
            scores[np.asarray(self._doc_ids[start:end])] += weights
        return scores

    def _layered_scores(self, query: str) -> np.ndarray:
        """`scores` of a layered index: each query term's weights computed from its live
        postings with the statistics of now, in the operations `_assemble` uses (so equal
        to a build's, bit for bit), added up in term order as a plain index adds them."""
        scores = np.zeros(self.n_docs, dtype=np.float32)
        counts: dict[str, int] = {}
        for token in query_terms(query):
            counts[token] = counts.get(token, 0) + 1
        found = [(token, *self._live(token)) for token in sorted(counts)]
        found = [item for item in found if len(item[1])]
        if not found:
            return scores
        df = np.array([len(item[1]) for item in found], dtype=np.float64)
        idf = np.log1p((self.n_docs - df + 0.5) / (df + 0.5))
        k1, b = self.k1, self.b
        assert self._lengths is not None
        for (token, docs, tf), term_idf in zip(found, idf):
            norm = k1 * (1.0 - b + b * np.asarray(self._lengths)[docs] / self.avg_doc_len)
            weights = (term_idf * tf * (k1 + 1.0) / (tf + norm)).astype(np.float32)
            if counts[token] != 1:
                weights = weights * np.float32(counts[token])
            scores[docs] += weights
        return scores

    def scores_for(self, query: str, doc_ids: Iterable[int]) -> np.ndarray:
        """The scores of ``doc_ids`` only, in that order (statistics still whole-wiki)."""
        ids = np.fromiter((int(i) for i in doc_ids), dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_docs):
            raise IndexError(f"document id out of range 0..{self.n_docs - 1}")
        return self.scores(query)[ids]

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(doc_id, score)`` pairs with score > 0, best first (ties: lower id)."""
        scores = self.scores(query)
        n = scores.size
        if k <= 0 or n == 0:
            return []
        if k < n:
            kth = np.partition(scores, n - k)[n - k]  # the k-th best score
            hits = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
        else:
            hits = np.flatnonzero(scores > 0)
        order = np.lexsort((hits, -scores[hits]))[:k]
        return [(int(hits[i]), float(scores[hits[i]])) for i in order]

    # -- persistence -------------------------------------------------------------------

    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "terms": self._terms,
            "term_offsets": self._term_offsets,
            "indptr": self._indptr,
            "doc_ids": self._doc_ids,
            "weights": self._weights,
        }
        if self._tf is not None and self._lengths is not None:
            arrays.update(tf=self._tf, lengths=self._lengths)
        if self._layer is not None:
            arrays.update(self._layer.arrays())
        return arrays

    def _linked(self, tmp: Path, name: str) -> dict[str, Any] | None:
        """A layered index's base file, hard-linked from the folder it was read from into
        ``tmp`` (not written again: that is the point of the layer); its size and digest as
        the base recorded them. None when it cannot be linked (then it is written)."""
        if self._layer is None or self._source is None or self._files is None:
            return None
        recorded = self._files.get(f"{name}.npy")
        source = self._source / f"{name}.npy"
        try:
            info = source.stat()
            if (
                not isinstance(recorded, dict)
                or info.st_size != recorded.get("bytes")
                or (info.st_dev, info.st_ino) != self._base_ids.get(name)
            ):  # replaced since it was read (another writer compacted): written from memory
                return None
            os.link(source, tmp / source.name)
        except OSError:  # another file system, no hard links: written instead
            return None
        return recorded

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write the index to ``folder``, replacing any previous one as a whole.

        Files go to a temporary sibling folder first, are fsynced, then the folder is
        renamed into place (the old one is renamed aside first and removed afterwards).
        A reader never sees a half-written index: a crash leaves the old index, the new
        one, or (between the two renames) none, which :meth:`load` reports as missing so
        the caller rebuilds; stale hidden ``.<name>.tmp-*`` / ``.<name>.old-*`` siblings
        may remain. Concurrent writers must be serialised by the caller (the project lock).
        """
        import shutil  # noqa: PLC0415 - save-only import, kept off the query path

        folder = Path(folder)
        parent = folder.parent
        parent.mkdir(parents=True, exist_ok=True)
        unique = f"{os.getpid()}-{os.urandom(4).hex()}"
        tmp = parent / f".{folder.name}.tmp-{unique}"
        tmp.mkdir()  # not tempfile.mkdtemp: that one is 0700, this one follows the umask
        try:
            files: dict[str, dict[str, Any]] = {}
            for name, array in self._arrays().items():
                path = tmp / f"{name}.npy"
                linked = self._linked(tmp, name) if name in _BASE_FILES else None
                if linked is not None:
                    files[path.name] = linked
                    continue
                with open(path, "wb") as fh:
                    np.save(fh, np.ascontiguousarray(array), allow_pickle=False)
                    fh.flush()
                    os.fsync(fh.fileno())
                files[path.name] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
            meta = {
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "tokenizer": TOKENIZER_VERSION,
                "doc_count": self.n_docs,
                "term_count": self.n_terms,
                "postings": int(len(self._doc_ids)),
                "avg_doc_len": self.avg_doc_len,
                "k1": self.k1,
                "b": self.b,
                "idf": "ln(1 + (N - df + 0.5) / (df + 0.5))",
                "files": files,
            }
            if self._layer is not None:
                meta["layer"] = {
                    "base_docs": len(self._layer.doc_map),
                    "segment_postings": len(self._layer.doc_ids),
                    "segment_terms": self._layer.n_terms,
                }
            with open(tmp / META_FILE, "w", encoding="utf-8") as fh:
                json.dump(meta, fh, indent=1, sort_keys=True)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _swap_in(tmp, folder)

    @classmethod
    def install(
        cls, scratch: Path, folder: Path, sums: Mapping[str, str], docs: int
    ) -> LexicalIndex:
        """The index whose files the caller wrote (and fsynced) in the folder ``scratch``,
        checked as ``load(verify=True)`` checks one -- each file's SHA-256 as the caller
        computed it from the bytes it wrote (``sums``: file name -> hex digest, not hashed
        again), the postings, ``docs`` documents -- then renamed to ``folder`` as `save`
        replaces an index. LexicalIndexError, nothing renamed, for anything that fails."""
        index = cls.load(scratch)
        assert index._files is not None
        for name in index._checked_files():
            if sums.get(name) != index._files[name].get("sha256"):
                raise LexicalIndexError(
                    f"lexical index {scratch}: {name} does not match its checksum (corrupt index)"
                )
        index._check_postings(scratch)
        if len(index) != docs:
            raise LexicalIndexError(
                f"lexical index {scratch}: it has {len(index)} chunks, not {docs}"
            )
        _swap_in(scratch, folder)
        return index

    @classmethod
    def load(
        cls, folder: str | os.PathLike[str], mmap: bool = True, *, verify: bool = False
    ) -> LexicalIndex:
        """Open an index written by :meth:`save`.

        With ``mmap`` (the default) the arrays stay on disk, read on demand. Sizes and shapes
        are always checked (a layer's too, and how it fits its base); ``verify=True`` also
        checks every SHA-256 and the postings. LexicalIndexError names what is wrong."""
        folder = Path(folder)
        where = f"lexical index {folder}"
        meta = _read_meta(folder, where)
        try:
            n_docs = _count(meta, "doc_count")
            n_terms = _count(meta, "term_count")
            postings = _count(meta, "postings")
            avg_doc_len = float(meta["avg_doc_len"])
            k1, b = float(meta["k1"]), float(meta["b"])
            files = meta["files"]
            if not isinstance(files, dict):
                raise ValueError("files is not an object")
            layered = meta.get("layer") is not None
            optional = [name for name in _UPDATE_ARRAYS if f"{name}.npy" in files]
            wanted = {
                **_ARRAYS,
                **{name: _UPDATE_ARRAYS[name] for name in optional},
                **(LAYER_ARRAYS if layered else {}),
            }
            expected_sizes = {f"{name}.npy": int(files[f"{name}.npy"]["bytes"]) for name in wanted}
        except (KeyError, TypeError, ValueError) as exc:
            raise LexicalIndexError(f"{where}: {META_FILE} is corrupt ({exc!r})") from None
        base_ids: dict[str, tuple[int, int]] = {}
        arrays = {
            name: _map_array(
                folder / f"{name}.npy", dtype, expected_sizes, mmap, where, base_ids, name
            )
            for name, dtype in wanted.items()
        }
        if not _shapes_fit(arrays, n_terms, postings, n_docs):
            raise LexicalIndexError(
                f"{where}: array sizes disagree with {META_FILE} (corrupt index)"
            )
        layer = checked_layer(arrays, meta, n_docs, where) if layered else None
        index = cls(
            n_docs=n_docs,
            avg_doc_len=avg_doc_len,
            arrays=arrays,
            k1=k1,
            b=b,
            files=files,
            layer=layer,
            source=folder,
            base_ids=base_ids,
        )
        if verify:
            index._verify(folder)
        return index

    def _checked_files(self) -> list[str]:
        """The files whose SHA-256 `meta.json` records and a verified load checks."""
        assert self._files is not None
        layer = list(LAYER_ARRAYS) if self._layer is not None else []
        return [
            f"{name}.npy"
            for name in [
                *_ARRAYS,
                *(n for n in _UPDATE_ARRAYS if f"{n}.npy" in self._files),
                *layer,
            ]
        ]

    def _verify(self, folder: Path) -> None:
        assert self._files is not None
        for filename in self._checked_files():
            if _sha256(folder / filename) != self._files[filename].get("sha256"):
                raise LexicalIndexError(
                    f"lexical index {folder}: {filename} does not match its checksum (corrupt index)"
                )
        self._check_postings(folder)

    def _check_postings(self, folder: Path) -> None:
        where = f"lexical index {folder}"
        indptr, doc_ids, weights = self._indptr, self._doc_ids, self._weights
        problems = []
        if np.any(np.diff(indptr) < 0) or np.any(np.diff(self._term_offsets) < 0):
            problems.append("offsets are not increasing")
        base_docs = len(self._layer.doc_map) if self._layer is not None else self.n_docs
        if len(doc_ids) and (int(doc_ids.min()) < 0 or int(doc_ids.max()) >= base_docs):
            problems.append("document ids out of range")
        if len(weights) and not (np.all(np.isfinite(weights)) and float(weights.min()) >= 0):
            problems.append("negative or non-finite weights")
        if problems:
            raise LexicalIndexError(f"{where}: {', '.join(problems)} (corrupt index)")


def _read_meta(folder: Path, where: str) -> dict[str, Any]:
    """``meta.json`` of the index in ``folder``, of a format and tokenizer this code reads."""
    if not folder.is_dir():
        raise LexicalIndexError(f"{where}: not found (build the index first)")
    if not (folder / META_FILE).exists():
        raise LexicalIndexError(f"{where}: {META_FILE} is missing (incomplete index)")
    try:  # non-blocking, size-capped, bounded depth: a FIFO or a hostile file is corrupt, not a hang
        meta = confine.read_json(folder / META_FILE, name=META_FILE)
    except (PathRefused, ValueError) as exc:
        raise LexicalIndexError(f"{where}: {META_FILE} is unreadable or corrupt ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise LexicalIndexError(f"{where}: {META_FILE} is not a {FORMAT} index")
    if meta.get("version") not in READABLE_VERSIONS or (
        meta.get("version") == 1 and meta.get("layer") is not None
    ):
        raise LexicalIndexError(
            f"{where}: format version {meta.get('version')!r}, this llmwiki-git reads "
            f"versions {', '.join(map(str, READABLE_VERSIONS))} (rebuild the index)"
        )
    if meta.get("tokenizer") != TOKENIZER_VERSION:
        raise LexicalIndexError(
            f"{where}: built by tokenizer version {meta.get('tokenizer')!r}, this "
            f"llmwiki-git uses version {TOKENIZER_VERSION} (rebuild the index)"
        )
    return meta


def _map_array(
    path: Path,
    dtype: np.dtype[Any],
    sizes: dict[str, int],
    mmap: bool,
    where: str,
    ids: dict[str, tuple[int, int]],
    name: str,
) -> np.ndarray:
    """One array file, its size as ``meta.json`` says, read (memory-mapped) as a 1-d array
    of ``dtype``; its (device, inode) recorded in ``ids`` under ``name``."""
    try:
        info = path.stat()
        size = info.st_size
        ids[name] = (info.st_dev, info.st_ino)
    except FileNotFoundError:
        raise LexicalIndexError(f"{where}: {path.name} is missing (incomplete index)") from None
    if size != sizes[path.name]:
        raise LexicalIndexError(
            f"{where}: {path.name} is truncated or was modified "
            f"({size} bytes, {META_FILE} says {sizes[path.name]})"
        )
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise LexicalIndexError(f"{where}: {path.name} is corrupt ({exc})") from None
    if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
        raise LexicalIndexError(f"{where}: {path.name} has an unexpected type or shape")
    # A plain ndarray over the same mapped pages: np.memmap's Python-level
    # __getitem__ would cost microseconds per term lookup step.
    return array.view(np.ndarray)


def _shapes_fit(arrays: dict[str, np.ndarray], n_terms: int, postings: int, n_docs: int) -> bool:
    return (
        len(arrays["indptr"]) == n_terms + 1
        and len(arrays["term_offsets"]) == n_terms + 1
        and len(arrays["doc_ids"]) == postings
        and len(arrays["weights"]) == postings
        and int(arrays["indptr"][0]) == 0
        and int(arrays["indptr"][-1]) == postings
        and int(arrays["term_offsets"][0]) == 0
        and int(arrays["term_offsets"][-1]) == len(arrays["terms"])
        and len(arrays.get("tf", arrays["weights"])) == postings
        and len(arrays.get("lengths", range(n_docs))) == n_docs
    )


def _count(meta: dict[str, Any], key: str) -> int:
    value = meta[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key} is not a non-negative integer")
    return value


def _sha256(path: Path) -> str:
    import hashlib  # noqa: PLC0415 - save/verify only, kept off the query path

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _swap_in(tmp: Path, folder: Path) -> None:
    """Rename the complete index folder ``tmp`` to ``folder``, the old one renamed aside
    first and removed afterwards (a reader finds the old index, the new one, or none)."""
    import shutil  # noqa: PLC0415 - save-only import, kept off the query path

    old: Path | None = None
    try:
        if folder.exists() or folder.is_symlink():
            old = folder.parent / f".{folder.name}.old-{os.getpid()}-{os.urandom(4).hex()}"
            os.replace(folder, old)
        try:
            os.replace(tmp, folder)
        except OSError:
            if old is not None:
                os.replace(old, folder)
                old = None
            raise
        _fsync_dir(folder.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # Windows cannot open a directory
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
