"""Search terms: the words of a text as BM25 and the offline answerer see them.

Pure Python (no numpy), below every package that reads terms: the BM25 index
(``retrieval/lexical.py``), the offline answerer (``providers/extractive.py``) and the
compile notes (``compiler/notes.py``, :data:`KEYWORD_STOPWORDS`) import it from here.

:func:`tokenize`: NFKC, casefold, Unicode words (letters, digits and combining marks), CJK
and other space-less scripts as character bigrams, English stopwords dropped, a light English
stemmer (plural, -ed, -ing). :func:`query_terms`: the same, minus question words and filler.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from functools import lru_cache
from itertools import groupby

__all__ = [
    "KEYWORD_STOPWORDS",
    "QUERY_STOPWORDS",
    "QUESTION_STOPWORDS",
    "STOPWORDS",
    "TOKENIZER_VERSION",
    "query_terms",
    "tokenize",
]

#: Bumped whenever :func:`tokenize` changes its output; an index built by another
#: tokenizer is refused (its terms would no longer match the query's).
TOKENIZER_VERSION = 1

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
    "en": frozenset(
        """
        how what what's whats which who whom whose why when where whether can could do does did
        doing done i i'm im me my mine myself we our ours us you your yours would should shall
        may might must am been being was were has have had having get getting got want wants
        wanted need needs trying try tried way possible please there's thing things something
        anything any some also just so too very really about there here its it's
        one ones s t m ll d ve re don doesn didn isn aren can't cant
        """.split()
    ),
    "fr": frozenset(
        """
        comment quoi quel quelle quels quelles qui que qu pourquoi quand où est-ce je j me m
        mon ma mes moi nous notre nos vous votre vos peut peux puis pouvez faire fait dois
        doit faut il elle ce cet cette ces des du les la une un et ou est sont avec pour dans
        sur pas ne
        """.split()
    ),
    "de": frozenset(
        """
        wie was welche welcher welches wer wen wem warum wann wo woher wohin ich mich mir mein
        meine meinen meiner wir unser kann kannst können muss musst müssen soll sollte
        möchte will willst ist sind der das den dem des ein eine einen einem und oder mit für
        auf nicht es
        """.split()
    ),
    "es": frozenset(
        """
        cómo como qué que cuál cuáles quién quiénes por qué porqué cuándo dónde yo mi mis me
        nosotros nuestro puedo puede pueden debo hacer hago el la los las un una unos unas
        es con para en del al se lo
        """.split()
    ),
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
                    out.append(found)
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


#: The wider English stop set of the compile notes' keywords and page-name matching
#: (``compiler/notes.py``): function words, pronouns and filler that make no keyword.
KEYWORD_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her his how i if
in into is it its just may me more most my no not of on or our out over she should so some such than that the their them
then there these they this those through to too under up us was we were what when where which while who why will with
would you your also about after all any because before being both each few here however like many much must new now
only other own same see since still very way well""".split()
)
