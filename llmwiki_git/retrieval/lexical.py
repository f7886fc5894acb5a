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
import re
import unicodedata
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np

from .. import confine
from ..errors import LexicalIndexError, PathRefused

__all__ = [
    "B",
    "FIELD_WEIGHTS",
    "FORMAT_VERSION",
    "K1",
    "LexicalIndex",
    "Document",
    "LexicalIndexError",
    "QUESTION_STOPWORDS",
    "STOPWORDS",
    "TOKENIZER_VERSION",
    "query_terms",
    "tokenize",
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
FORMAT_VERSION = 1
#: Bumped whenever :func:`tokenize` changes its output; an index built by another
#: tokenizer is refused (its terms would no longer match the query's).
TOKENIZER_VERSION = 1

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


# --------------------------------------------------------------------------- tokenizer

# Combining marks (Unicode categories Mn/Mc/Me) are not matched by Python's ``\w``, which
# would cut Devanagari, Bengali, Thai, Hebrew points, ... words at every vowel sign.
# Generated once from unicodedata 14.0 (Python 3.11); ranges are merged across gaps made
# only of ``\w`` characters, which changes nothing since those are word characters anyway.
_MARK_RANGES = (
    "0300-036F 0483-0489 0591-05BD 05BF 05C1-05C2 05C4-05C5 05C7 0610-061A 064B-065F 0670 "
    "06D6-06DC 06DF-06E8 06EA-06ED 0711-074A 07A6-07B0 07EB-07F3 07FD 0816-082D 0859-085B "
    "0898-08E1 08E3-0963 0981-0983 09BC-09C4 09C7-09C8 09CB-09CD 09D7 09E2-09E3 09FE "
    "0A01-0A03 0A3C 0A3E-0A42 0A47-0A48 0A4B-0A4D 0A51 0A70-0A75 0A81-0A83 0ABC-0AC5 "
    "0AC7-0AC9 0ACB-0ACD 0AE2-0AE3 0AFA-0AFF 0B01-0B03 0B3C-0B44 0B47-0B48 0B4B-0B4D "
    "0B55-0B57 0B62-0B63 0B82 0BBE-0BC2 0BC6-0BC8 0BCA-0BCD 0BD7 0C00-0C04 0C3C-0C44 "
    "0C46-0C48 0C4A-0C4D 0C55-0C56 0C62-0C63 0C81-0C83 0CBC-0CC4 0CC6-0CC8 0CCA-0CCD "
    "0CD5-0CD6 0CE2-0CE3 0D00-0D03 0D3B-0D44 0D46-0D48 0D4A-0D4D 0D57-0D63 0D81-0D83 0DCA "
    "0DCF-0DD4 0DD6 0DD8-0DDF 0DF2-0DF3 0E31-0E3A 0E47-0E4E 0EB1-0EBC 0EC8-0ECD 0F18-0F19 "
    "0F35 0F37 0F39 0F3E-0F3F 0F71-0F84 0F86-0F97 0F99-0FBC 0FC6 102B-103E 1056-109D "
    "135D-135F 1712-1715 1732-1734 1752-1753 1772-1773 17B4-17D3 17DD 180B-180D 180F "
    "1885-18A9 1920-192B 1930-193B 1A17-1A1B 1A55-1A5E 1A60-1A7C 1A7F 1AB0-1ACE 1B00-1B44 "
    "1B6B-1B73 1B80-1BF3 1C24-1C37 1CD0-1CD2 1CD4-1CF9 1DC0-1DFF 20D0-20F0 2CEF-2CF1 2D7F "
    "2DE0-2DFF 302A-302F 3099-309A A66F-A672 A674-A67D A69E-A6F1 A802-A827 A82C A880-A8C5 "
    "A8E0-A8F1 A8FF-A92D A947-A953 A980-A9C0 A9E5 AA29-AA36 AA43-AA4D AA7B-AAC1 AAEB-AAEF "
    "AAF5-AAF6 ABE3-ABEA ABEC-ABED FB1E FE00-FE0F FE20-FE2F 101FD 102E0 10376-1037A "
    "10A01-10A03 10A05-10A06 10A0C-10A0F 10A38-10A3A 10A3F 10AE5-10AE6 10D24-10D27 "
    "10EAB-10EAC 10F46-10F50 10F82-10F85 11000-11046 11070-11074 1107F-110BA 110C2 "
    "11100-11134 11145-11146 11173 11180-111C0 111C9-111CC 111CE-111CF 1122C-11237 1123E "
    "112DF-112EA 11300-11303 1133B-11344 11347-11348 1134B-1134D 11357 11362-11363 "
    "11366-1136C 11370-11374 11435-11446 1145E 114B0-114C3 115AF-115B5 115B8-115C0 "
    "115DC-115DD 11630-11640 116AB-116B7 1171D-1172B 1182C-1183A 11930-11935 11937-11938 "
    "1193B-11943 119D1-119D7 119DA-119E0 119E4 11A01-11A3E 11A47 11A51-11A99 11C2F-11C36 "
    "11C38-11C3F 11C92-11CA7 11CA9-11CB6 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D47 "
    "11D8A-11D8E 11D90-11D91 11D93-11D97 11EF3-11EF6 16AF0-16AF4 16B30-16B36 16F4F-16F87 "
    "16F8F-16F92 16FE4 16FF0-16FF1 1BC9D-1BC9E 1CF00-1CF2D 1CF30-1CF46 1D165-1D169 "
    "1D16D-1D172 1D17B-1D182 1D185-1D18B 1D1AA-1D1AD 1D242-1D244 1DA00-1DA36 1DA3B-1DA6C "
    "1DA75 1DA84 1DA9B-1DA9F 1DAA1-1DAAF 1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 "
    "1E026-1E02A 1E130-1E136 1E2AE 1E2EC-1E2EF 1E8D0-1E8D6 1E944-1E94A E0100-E01EF "
)

# Scripts written without spaces between words: a run of them becomes overlapping
# character bigrams (a lone character stays a unigram), as Lucene's CJK analyzer does, so
# that a Chinese or Japanese question matches text containing its words. Hangul is
# included: Korean has spaces, but particles glue onto nouns.
_NOSPACE_RANGES = (
    "0E00-0EFF "  # Thai, Lao
    "1000-109F "  # Myanmar
    "1780-17FF "  # Khmer
    "3040-30FF 31F0-31FF "  # Hiragana, Katakana
    "3400-4DBF 4E00-9FFF F900-FAFF 20000-3134F "  # Han
    "1100-11FF 3130-318F AC00-D7AF "  # Hangul
)


def _ranges(spec: str) -> list[tuple[int, int]]:
    out = []
    for item in spec.split():
        lo, _, hi = item.partition("-")
        out.append((int(lo, 16), int(hi or lo, 16)))
    return sorted(out)


# Sorted [start, end + 1, start, end + 1, ...]: c is inside iff bisect_right(...) is odd.
_NOSPACE_BOUNDS = [b for lo, hi in _ranges(_NOSPACE_RANGES) for b in (lo, hi + 1)]


def _is_nospace(char: str) -> bool:
    return bisect_right(_NOSPACE_BOUNDS, ord(char)) % 2 == 1


#: A word: letters and digits (``\w`` without ``_``) ...
_WORD = re.compile(r"[^\W_]+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@lru_cache(maxsize=1)
def _word_with_marks() -> re.Pattern[str]:
    """... and, in a text that has combining marks, the marks that follow a letter or digit
    (a mark after punctuation or an emoji, such as U+FE0F, is no word). Compiled on first
    use (~5 ms) and ~4x slower than ``_WORD``, hence only used for such texts."""
    marks = "".join(
        f"\\U{lo:08x}" + (f"-\\U{hi:08x}" if hi != lo else "") for lo, hi in _ranges(_MARK_RANGES)
    )
    return re.compile(f"[^\\W_](?:[^\\W_]|[{marks}])*")


def _has_marks(text: str) -> bool:
    if text.isascii():
        return False
    return any(unicodedata.category(c)[0] == "M" for c in set(_NON_ASCII.findall(text)))


#: Lucene's English stop set (33 words). Measured on the labelled questions against no
#: list and against a 130-word list (docs/bm25-notes.md): this one scored best, by a margin
#: within noise; a bigger list dropped useful words ("off", "how", "which").
STOPWORDS = frozenset(
    """
    a an and are as at be but by for if in into is it no not of on or such that the their
    then there these they this to was will with
    """.split()
)


#: Question words and filler, dropped from a *query* (never from the indexed text, never from
#: the embedded question): "how can I ...", "what does my ... do". Per language for the
#: scripts the tokenizer splits on spaces; a word that is also a common English content word
#: ("come", "die", "son", "per") is left out of the other languages' lists. Measured on the
#: labelled questions (docs/embeddings.md).
QUESTION_STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset("""
        how what what's whats which who whom whose why when where whether can could do does did
        doing done i i'm im me my mine myself we our ours us you your yours would should shall
        may might must am been being was were has have had having get getting got want wants
        wanted need needs trying try tried way possible please there's thing things something
        anything any some also just so too very really about there here its it's
        one ones s t m ll d ve re don doesn didn isn aren can't cant
        """.split()),
    "fr": frozenset("""
        comment quoi quel quelle quels quelles qui que qu pourquoi quand où est-ce je j me m
        mon ma mes moi nous notre nos vous votre vos peut peux puis pouvez faire fait dois
        doit faut il elle ce cet cette ces des du les la une un et ou est sont avec pour dans
        sur pas ne
        """.split()),
    "de": frozenset("""
        wie was welche welcher welches wer wen wem warum wann wo woher wohin ich mich mir mein
        meine meinen meiner wir unser kann kannst können muss musst müssen soll sollte
        möchte will willst ist sind der das den dem des ein eine einen einem und oder mit für
        auf nicht es
        """.split()),
    "es": frozenset("""
        cómo como qué que cuál cuáles quién quiénes por qué porqué cuándo dónde yo mi mis me
        nosotros nuestro puedo puede pueden debo hacer hago el la los las un una unos unas
        es con para en del al se lo
        """.split()),
}
QUERY_STOPWORDS = frozenset().union(*QUESTION_STOPWORDS.values())


def _is_consonant(word: str, i: int) -> bool:
    c = word[i]
    if c in "aeiou":
        return False
    if c == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    m = 0
    previous_vowel = False
    for i in range(len(stem)):
        vowel = not _is_consonant(stem, i)
        if not vowel and previous_vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _cvc(stem: str) -> bool:
    n = len(stem)
    return (
        n >= 3
        and _is_consonant(stem, n - 3)
        and not _is_consonant(stem, n - 2)
        and _is_consonant(stem, n - 1)
        and stem[-1] not in "wxy"
    )


#: Words whose -ed is not a past tense (Porter would make "embed" "emb", while "embedding"
#: becomes "embed").
_NOT_INFLECTED = frozenset({"embed", "hundred", "kindred", "naked", "sacred", "wicked"})


def _light_stem(word: str) -> str:
    """Porter's steps 1a-1c and 5a: plurals, -ed, -ing, final y and e; nothing else.

    links/linked/linking -> link, embeds/embedding -> embed, notes/noted -> note,
    queries/query -> queri, use/uses/used/using -> us. Only lowercase ASCII words of 3+
    letters (as Porter: "has" -> "ha" too; both sides of a match are stemmed alike).
    """
    if len(word) < 3 or not (word.isascii() and word.isalpha()):
        return word
    w = word
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    removed = False
    if w in _NOT_INFLECTED:
        pass
    elif w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w, removed = w[:-2], True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w, removed = w[:-3], True
    if removed:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif len(w) >= 2 and w[-1] == w[-2] and _is_consonant(w, len(w) - 1) and w[-1] not in "lsz":
            w = w[:-1]
        elif _measure(w) == 1 and _cvc(w):
            w += "e"
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    if w.endswith("e") and len(w) > 1:
        m = _measure(w[:-1])
        if m > 1 or (m == 1 and not _cvc(w[:-1])):
            w = w[:-1]
    return w


class _Tokenizer:
    """The tokenizer with its switches; :func:`tokenize` is the configured instance."""

    def __init__(self, *, stopwords: frozenset[str] = frozenset(), stem: bool = False) -> None:
        self.stopwords = stopwords
        self.stem = stem
        # word -> its term ("" when dropped) or, for a CJK-like word, a tuple of terms.
        self._cache: dict[str, str | tuple[str, ...]] = {}

    def _terms_of(self, word: str) -> str | tuple[str, ...]:
        if word.isascii() or not any(map(_is_nospace, word)):
            if word in self.stopwords:
                return ""
            return _light_stem(word) if self.stem else word
        terms: list[str] = []
        for nospace, chars in groupby(word, key=_is_nospace):
            run = "".join(chars)
            if not nospace:
                term = self._terms_of(run)
                if term:
                    terms.append(term)  # type: ignore[arg-type]
            elif len(run) == 1:
                terms.append(run)
            else:
                terms.extend(run[i : i + 2] for i in range(len(run) - 1))
        return tuple(terms)

    def __call__(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text).casefold()
        words = (_word_with_marks() if _has_marks(text) else _WORD).findall(text)
        cache = self._cache
        terms = list(map(cache.get, words))
        if None in terms:
            for i, found in enumerate(terms):
                if found is None:
                    word = words[i]
                    terms[i] = found = self._terms_of(word)
                    if len(cache) < 200_000:
                        cache[word] = found
        if text.isascii():  # no tuples: those come from non-ASCII scripts
            return [t for t in terms if t]  # type: ignore[misc]
        out: list[str] = []
        for found in terms:
            if found.__class__ is str:
                if found:
                    out.append(found)  # type: ignore[arg-type]
            else:
                out.extend(found)  # type: ignore[arg-type]
        return out


_DEFAULT_TOKENIZER = _Tokenizer(stopwords=STOPWORDS, stem=True)


_QUERY_TOKENIZER = _Tokenizer(stopwords=STOPWORDS | QUERY_STOPWORDS, stem=True)


def query_terms(question: str) -> list[str]:
    """The BM25 terms of a question: :func:`tokenize` minus question words and filler
    (:data:`QUESTION_STOPWORDS`). A question made only of such words keeps them all."""
    return _QUERY_TOKENIZER(question) or tokenize(question)


def tokenize(text: str) -> list[str]:
    """The BM25 terms of ``text``, in order.

    NFKC, then casefold; words are runs of Unicode letters, digits and combining marks
    (``_`` and punctuation separate words; numbers are kept). Runs of CJK, Thai, Lao,
    Khmer, Myanmar or Hangul become overlapping character bigrams. English stopwords are
    dropped and English words get a light suffix stripping (plural, -ed, -ing).
    """
    return _DEFAULT_TOKENIZER(text)


# ------------------------------------------------------------------------------- index


#: What :meth:`LexicalIndex.build` indexes: a text, or ``(text, weight)`` fields.
Document = str | Sequence[tuple[str, float]]


class _Vocabulary(dict):  # type: ignore[type-arg]
    """term -> id, numbering new terms as they come (``vocab[term]`` never fails)."""

    def __missing__(self, term: str) -> int:
        self[term] = tid = len(self)
        return tid


Tokenized = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]
SHARED_DOCS = 4000  # from this many documents, tokenize in shares on every core (a fork costs ~20 ms)


def _tokenize_all(docs: Sequence[Document]) -> Tokenized:
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
    return terms, term.astype(np.int64).tobytes(), doc.astype(np.int64).tobytes(), tf.tobytes(), lengths.tobytes()


def _merge(shares: list[Any], n_docs: int) -> Tokenized:
    """Shares tokenized apart (documents numbered from 0 in each) as one: a vocabulary of
    every term, term ids renumbered into it, documents moved to their place, the postings
    sorted by (term, document) again."""
    parts = [part if isinstance(part[1], np.ndarray) else
             (part[0], *(np.frombuffer(b, dtype=t) for b, t in zip(part[1:], (np.int64, np.int64, np.float64,
                                                                                 np.float64)))) for part in shares]
    vocabulary = sorted(set().union(*(part[0] for part in parts)))
    position = {term: i for i, term in enumerate(vocabulary)}
    terms, docs, tfs, lengths = [], [], [], []
    offset = 0
    for share_terms, term, doc, tf, share_lengths in parts:
        remap = np.fromiter((position[t] for t in share_terms), dtype=np.int64, count=len(share_terms))
        terms.append(remap[term] if len(term) else term)
        docs.append(doc + offset)
        tfs.append(tf)
        lengths.append(share_lengths)
        offset += len(share_lengths)
    keys = np.concatenate(terms) * max(n_docs, 1) + np.concatenate(docs)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    term_ids = keys // max(n_docs, 1)
    return vocabulary, term_ids, keys - term_ids * max(n_docs, 1), np.concatenate(tfs)[order], np.concatenate(lengths)


def _tokenize_share(docs: Sequence[Document]) -> Tokenized:
    """`_tokenize_all` in this process."""
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
    tf = np.bincount(where.reshape(-1), weights=np.frombuffer(token_weights, dtype=np.float64),
                     minlength=len(keys))
    term = keys // max(n_docs, 1)
    return sorted_terms, term, keys - term * max(n_docs, 1), tf, lengths


def _decode_terms(blob: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> list[str]:
    data = np.asarray(blob).tobytes()
    bounds = np.asarray(offsets).tolist()
    return [data[bounds[i] : bounds[i + 1]].decode("utf-8") for i in ids.tolist()]


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

    # -- construction ------------------------------------------------------------------

    @classmethod
    def build(cls, docs: Sequence[Document], *, k1: float = K1, b: float = B) -> LexicalIndex:
        """Index ``docs`` (document ``i`` is ``docs[i]``); statistics cover all of them.

        A document is a string, or a sequence of ``(text, weight)`` fields: BM25F's simple
        form, where a term's frequency and the document's length are the weighted sums
        over its fields (a title token with weight 3 counts as three body tokens)."""
        terms, term, doc, tf, lengths = _tokenize_all(docs)
        return cls._assemble(terms, term, doc, tf, lengths, k1=k1, b=b)

    def updated(self, layout: Sequence[int | Document]) -> LexicalIndex:
        """The index of a changed wiki, equal to :meth:`build` over the new documents, without
        tokenizing the unchanged ones: ``layout[i]`` is document ``i`` of the new index, either
        the id of an unchanged document of this index (kept with its raw term frequencies and
        length) or a new :data:`Document` (tokenized). The statistics (N, df, the average
        length) and so every weight are recomputed from those frequencies, as a build does.

        Raises :class:`LexicalIndexError` when this index has no raw frequencies (written
        before they were kept): build from every document instead."""
        if self._tf is None or self._lengths is None:
            raise LexicalIndexError("this lexical index keeps no term frequencies (rebuild it)")
        n_docs = len(layout)
        old_to_new = np.full(self.n_docs + 1, -1, dtype=np.int64)  # last slot: "dropped"
        fresh_at: list[int] = []
        fresh_docs: list[Document] = []
        lengths = np.zeros(n_docs, dtype=np.float64)
        for i, item in enumerate(layout):
            if isinstance(item, (int, np.integer)):
                if not 0 <= item < self.n_docs or old_to_new[item] != -1:
                    raise IndexError(f"document {item} is not a document of this index or is kept twice")
                old_to_new[item] = i
            else:
                fresh_at.append(i)
                fresh_docs.append(item)
        kept_old = np.flatnonzero(old_to_new[:-1] >= 0)
        lengths[old_to_new[kept_old]] = np.asarray(self._lengths, dtype=np.float64)[kept_old]
        # The kept postings, still grouped by old term (and by document within a term).
        old_term = np.repeat(np.arange(self.n_terms, dtype=np.int64), np.diff(np.asarray(self._indptr)))
        new_doc = old_to_new[np.asarray(self._doc_ids, dtype=np.int64)]
        keep = new_doc >= 0
        old_term, new_doc = old_term[keep], new_doc[keep]
        kept_tf = np.asarray(self._tf, dtype=np.float64)[keep]
        alive = np.flatnonzero(np.bincount(old_term, minlength=self.n_terms))
        old_names = _decode_terms(self._terms, self._term_offsets, alive)
        f_terms, f_term, f_doc, f_tf, f_lengths = _tokenize_all(fresh_docs)
        at = np.asarray(fresh_at, dtype=np.int64)
        lengths[at] = f_lengths
        terms = sorted(set(old_names).union(f_terms))
        position = {t: i for i, t in enumerate(terms)}
        old_map = np.zeros(self.n_terms, dtype=np.int64)
        old_map[alive] = [position[t] for t in old_names]
        fresh_map = np.fromiter((position[t] for t in f_terms), dtype=np.int64, count=len(f_terms))
        # Both runs stay sorted by (term, document): the id maps are increasing. Merge them.
        kept_term, fresh_term, fresh_doc = old_map[old_term], fresh_map[f_term], at[f_doc]
        span = max(n_docs, 1)
        where = np.searchsorted(kept_term * span + new_doc, fresh_term * span + fresh_doc)
        term = np.insert(kept_term, where, fresh_term)
        doc = np.insert(new_doc, where, fresh_doc)
        tf = np.insert(kept_tf, where, f_tf)
        return self._assemble(terms, term, doc, tf, lengths, k1=self.k1, b=self.b)

    @classmethod
    def _assemble(cls, terms: list[str], term: np.ndarray, doc: np.ndarray, tf: np.ndarray,
                  lengths: np.ndarray, *, k1: float, b: float) -> LexicalIndex:
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
        """The id of an already tokenized ``term``, or None when no document has it."""
        key = term.encode("utf-8")
        offsets, blob = self._term_offsets, self._terms
        lo, hi = 0, self.n_terms
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

    def document_frequency(self, term: str) -> int:
        """How many documents contain the already tokenized ``term``."""
        tid = self.term_id(term)
        return 0 if tid is None else int(self._indptr[tid + 1] - self._indptr[tid])

    def idf(self, term: str) -> float:
        """The idf of ``term`` (> 0 for every term present; 0.0 for an unknown one)."""
        df = self.document_frequency(term)
        if df == 0:
            return 0.0
        return math.log1p((self.n_docs - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        """One float32 score >= 0 per document (0 = no query term in it)."""
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
        return arrays

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
        old: Path | None = None
        try:
            files: dict[str, dict[str, Any]] = {}
            for name, array in self._arrays().items():
                path = tmp / f"{name}.npy"
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
            with open(tmp / META_FILE, "w", encoding="utf-8") as fh:
                json.dump(meta, fh, indent=1, sort_keys=True)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            if folder.exists() or folder.is_symlink():
                old = parent / f".{folder.name}.old-{unique}"
                os.replace(folder, old)
            try:
                os.replace(tmp, folder)
            except OSError:
                if old is not None:
                    os.replace(old, folder)
                    old = None
                raise
            _fsync_dir(parent)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)

    @classmethod
    def load(
        cls, folder: str | os.PathLike[str], mmap: bool = True, *, verify: bool = False
    ) -> LexicalIndex:
        """Open an index written by :meth:`save`.

        With ``mmap`` (the default) the arrays stay on disk and pages are read on demand.
        File sizes and array shapes are always checked; ``verify=True`` also checks every
        file's SHA-256 and the postings' consistency (reads everything). Any problem raises
        :class:`LexicalIndexError` naming the folder and the file.
        """
        folder = Path(folder)
        where = f"lexical index {folder}"
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
        if meta.get("version") != FORMAT_VERSION:
            raise LexicalIndexError(
                f"{where}: format version {meta.get('version')!r}, this llmwiki-git reads "
                f"version {FORMAT_VERSION} (rebuild the index)"
            )
        if meta.get("tokenizer") != TOKENIZER_VERSION:
            raise LexicalIndexError(
                f"{where}: built by tokenizer version {meta.get('tokenizer')!r}, this "
                f"llmwiki-git uses version {TOKENIZER_VERSION} (rebuild the index)"
            )
        try:
            n_docs = _count(meta, "doc_count")
            n_terms = _count(meta, "term_count")
            postings = _count(meta, "postings")
            avg_doc_len = float(meta["avg_doc_len"])
            k1, b = float(meta["k1"]), float(meta["b"])
            files = meta["files"]
            if not isinstance(files, dict):
                raise ValueError("files is not an object")
            optional = [name for name in _UPDATE_ARRAYS if f"{name}.npy" in files]
            wanted = {**_ARRAYS, **{name: _UPDATE_ARRAYS[name] for name in optional}}
            expected_sizes = {f"{name}.npy": int(files[f"{name}.npy"]["bytes"]) for name in wanted}
        except (KeyError, TypeError, ValueError) as exc:
            raise LexicalIndexError(f"{where}: {META_FILE} is corrupt ({exc!r})") from None

        arrays: dict[str, np.ndarray] = {}
        for name, dtype in wanted.items():
            filename = f"{name}.npy"
            path = folder / filename
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise LexicalIndexError(f"{where}: {filename} is missing (incomplete index)") from None
            if size != expected_sizes[filename]:
                raise LexicalIndexError(
                    f"{where}: {filename} is truncated or was modified "
                    f"({size} bytes, {META_FILE} says {expected_sizes[filename]})"
                )
            try:
                array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
            except (OSError, ValueError, EOFError) as exc:
                raise LexicalIndexError(f"{where}: {filename} is corrupt ({exc})") from None
            if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
                raise LexicalIndexError(f"{where}: {filename} has an unexpected type or shape")
            # A plain ndarray over the same mapped pages: np.memmap's Python-level
            # __getitem__ would cost microseconds per term lookup step.
            arrays[name] = array.view(np.ndarray)

        shapes_ok = (
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
        if not shapes_ok:
            raise LexicalIndexError(f"{where}: array sizes disagree with {META_FILE} (corrupt index)")
        index = cls(
            n_docs=n_docs, avg_doc_len=avg_doc_len, arrays=arrays, k1=k1, b=b, files=files
        )
        if verify:
            index._verify(folder)
        return index

    def _verify(self, folder: Path) -> None:
        where = f"lexical index {folder}"
        assert self._files is not None
        for name in [*_ARRAYS, *(n for n in _UPDATE_ARRAYS if f"{n}.npy" in self._files)]:
            filename = f"{name}.npy"
            if _sha256(folder / filename) != self._files[filename].get("sha256"):
                raise LexicalIndexError(f"{where}: {filename} does not match its checksum (corrupt index)")
        indptr, doc_ids, weights = self._indptr, self._doc_ids, self._weights
        problems = []
        if np.any(np.diff(indptr) < 0) or np.any(np.diff(self._term_offsets) < 0):
            problems.append("offsets are not increasing")
        if len(doc_ids) and (int(doc_ids.min()) < 0 or int(doc_ids.max()) >= self.n_docs):
            problems.append("document ids out of range")
        if len(weights) and not (np.all(np.isfinite(weights)) and float(weights.min()) >= 0):
            problems.append("negative or non-finite weights")
        if problems:
            raise LexicalIndexError(f"{where}: {', '.join(problems)} (corrupt index)")


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
