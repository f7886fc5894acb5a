"""BM25 lexical index: tokenizer, scoring, persistence and failure modes, on real files."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from llmwiki_git.retrieval.lexical import (
    FORMAT_VERSION,
    K1,
    B,
    LexicalIndex,
    LexicalIndexError,
)
from llmwiki_git.terms import TOKENIZER_VERSION, tokenize

DOCS = [
    "Wikilinks connect pages. A wikilink looks like [[page-name]] and the checker validates every link.",
    "Install the pre-commit hook so that broken links fail the commit.",
    "The graph view shows how pages link to each other.",
    "Daily notes live in the journal folder; the filename is the date.",
    "Embeds transclude another note: ![[note]] renders the whole note inline.",
    "",
    "Ссылки между страницами проверяются перед коммитом.",
    "Une page peut contenir des liens vers d'autres pages: c'est naïve mais efficace.",
    "维基页面之间的链接在提交前会被检查。配置文件在项目根目录。",
    "設定ファイルはプロジェクトのルートにあります。",
]


def reference_bm25(docs_tokens: list[list[str]], query_tokens: list[str]) -> list[float]:
    """Textbook BM25 (k1 1.5, b 0.75, idf ln(1 + (N - df + .5) / (df + .5))), plain Python."""
    n = len(docs_tokens)
    avg = sum(len(d) for d in docs_tokens) / n
    df = Counter(t for d in docs_tokens for t in set(d))
    out = []
    for d in docs_tokens:
        tf = Counter(d)
        score = 0.0
        for t in query_tokens:
            if tf[t]:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf[t] * (K1 + 1) / (tf[t] + K1 * (1 - B + B * len(d) / avg))
        out.append(score)
    return out


# ----------------------------------------------------------------------------- tokenizer


def test_tokenize_basics() -> None:
    assert tokenize("") == []
    assert tokenize("  ...  !!! ") == []
    # casefold, stopwords out, numbers kept, "_" and punctuation split words
    assert tokenize("The Wiki_Page with 300 LINKS.") == ["wiki", "page", "300", "link"]
    # NFKC: full-width letters, ligatures and superscripts become plain ones
    assert tokenize("ＡＢＣ ﬁle x²") == ["abc", "file", "x2"]


def test_light_stemming_conflates_inflections() -> None:
    for words in (
        ["link", "links", "linked", "linking"],
        ["note", "notes", "noted"],
        ["embed", "embeds", "embedding", "embedded"],
        ["query", "queries"],
        ["make", "making"],
        ["use", "uses", "used", "using"],
    ):
        assert len({tokenize(w)[0] for w in words}) == 1, words
    assert tokenize("string")[0] == "string"  # no vowel before -ing: untouched
    assert tokenize("naïve") == ["naïve"]  # non-ASCII words are not stemmed


def test_tokenize_unicode_scripts() -> None:
    assert tokenize("Привет, МИР!") == ["привет", "мир"]
    assert tokenize("Straße Café") == tokenize("STRASSE café")
    # decomposed "e" + combining acute is composed by NFKC
    assert tokenize("cafe\u0301") == tokenize("café")
    # Devanagari vowel signs (combining marks) stay inside the word
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    # a mark with no letter before it is no token (emoji variation selector)
    assert tokenize("done ✔️") == ["done"]
    # CJK: overlapping bigrams, a lone character stays a unigram, Latin split off
    assert tokenize("配置链接") == ["配置", "置链", "链接"]
    assert tokenize("书") == ["书"]
    assert tokenize("在Foam中") == ["在", "foam", "中"]
    assert tokenize("設定ファイル") == ["設定", "定フ", "ファ", "ァイ", "イル"]


# ----------------------------------------------------------------------------- scoring


def test_scores_match_reference_formula() -> None:
    index = LexicalIndex.build(DOCS)
    tokens = [tokenize(d) for d in DOCS]
    for query in ("link pages", "pages pages link", "note journal date", "ссылки", "链接配置"):
        expected = reference_bm25(tokens, tokenize(query))
        got = index.scores(query)
        assert got.dtype == np.float32 and got.shape == (len(DOCS),)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_term_in_every_document_scores_positive() -> None:
    docs = ["wiki page one", "wiki page two wiki", "wiki", "wiki page three four five six"]
    index = LexicalIndex.build(docs)
    assert index.document_frequency("wiki") == len(docs)
    assert index.idf("wiki") > 0
    scores = index.scores("wiki")
    assert np.all(scores > 0)
    # more occurrences in a shorter document still wins
    assert scores.argmax() == 2 and scores[1] > scores[0] > scores[3]


def test_term_in_exactly_half_and_all_common_terms() -> None:
    # rank-bm25 gives idf 0 to "windy" (in 2 of 4 docs) and negative scores, inverted, here
    half = LexicalIndex.build(["hello windy world", "windy day", "calm day", "quiet morning"])
    s = half.scores("windy")
    assert s[0] > 0 and s[1] > 0 and s[2] == 0 and s[3] == 0
    common = LexicalIndex.build(["x y", "x y", "x z"])
    s = common.scores("x y")
    assert np.all(s > 0)
    assert s[0] == s[1] > s[2]  # documents matching both terms rank first


def test_ranking_top_and_ties() -> None:
    index = LexicalIndex.build(DOCS)
    top = index.top("broken links commit hook", 3)
    assert top[0][0] == 1
    assert [score for _, score in top] == sorted((score for _, score in top), reverse=True)
    assert all(score > 0 for _, score in top)
    # only documents with a query term are returned, however large k is
    assert [doc for doc, _ in index.top("journal", 100)] == [3]
    assert index.top("journal", 0) == []
    # identical documents tie; the lower id comes first
    twins = LexicalIndex.build(["alpha beta", "gamma", "alpha beta", "alpha beta"])
    assert [doc for doc, _ in twins.top("alpha", 2)] == [0, 2]
    assert [doc for doc, _ in twins.top("alpha", 5)] == [0, 2, 3]


def test_repeated_query_terms_count_again() -> None:
    index = LexicalIndex.build(DOCS)
    np.testing.assert_allclose(
        index.scores("journal journal"), 2 * index.scores("journal"), rtol=1e-6
    )


def test_scores_for_candidates_uses_whole_corpus_statistics() -> None:
    index = LexicalIndex.build(DOCS)
    ids = [4, 0, 2]
    full = index.scores("link pages note")
    np.testing.assert_array_equal(index.scores_for("link pages note", ids), full[ids])
    # not the same as BM25 over the candidates alone (statistics over the whole wiki)
    alone = LexicalIndex.build([DOCS[i] for i in ids]).scores("link pages note")
    assert not np.allclose(alone, full[ids])
    assert index.scores_for("link", []).shape == (0,)
    with pytest.raises(IndexError):
        index.scores_for("link", [len(DOCS)])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Как проверяются ссылки?", 6),  # Cyrillic
        ("liens NAÏVE", 7),  # accented, other case
        ("如何配置链接", 8),  # Chinese, no spaces, shares words only
        ("設定ファイルはどこ", 9),  # Japanese
    ],
)
def test_unicode_queries_match(query: str, expected: int) -> None:
    index = LexicalIndex.build(DOCS)
    top = index.top(query, 3)
    assert top and top[0][0] == expected


def test_empty_corpus_and_empty_query(tmp_path: Path) -> None:
    empty = LexicalIndex.build([])
    assert len(empty) == 0 and empty.n_terms == 0
    assert empty.scores("anything").shape == (0,)
    assert empty.top("anything", 5) == []
    assert empty.scores_for("anything", []).shape == (0,)
    empty.save(tmp_path / "empty")
    again = LexicalIndex.load(tmp_path / "empty", verify=True)
    assert again.scores("anything").shape == (0,) and again.top("x", 3) == []

    index = LexicalIndex.build(DOCS)
    for query in ("", "   ", "the and of ?!", "zzzz-unknown-term"):
        scores = index.scores(query)
        assert scores.shape == (len(DOCS),) and not scores.any()
        assert index.top(query, 5) == []

    blank = LexicalIndex.build(["", "   ", "..."])  # documents without a single token
    assert not blank.scores("word").any() and blank.top("word", 2) == []


# ----------------------------------------------------------------------------- persistence


def test_save_load_round_trip(tmp_path: Path) -> None:
    index = LexicalIndex.build(DOCS)
    folder = tmp_path / "index" / "lexical"
    index.save(folder)
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["version"] == FORMAT_VERSION and meta["doc_count"] == len(DOCS)
    queries = ["link pages", "journal date", "ссылки", "链接", "naïve", "", "nothing-matches"]
    for mmap in (True, False):
        loaded = LexicalIndex.load(folder, mmap=mmap)
        assert len(loaded) == len(DOCS) and loaded.n_terms == index.n_terms
        for q in queries:
            np.testing.assert_array_equal(loaded.scores(q), index.scores(q))
            assert loaded.top(q, 4) == index.top(q, 4)
        assert loaded.scores("link").dtype == np.float32
    LexicalIndex.load(folder, verify=True)


def test_save_replaces_previous_index_atomically(tmp_path: Path) -> None:
    folder = tmp_path / "lexical"
    LexicalIndex.build(DOCS).save(folder)
    LexicalIndex.build(["just one document"]).save(folder)
    assert len(LexicalIndex.load(folder)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lexical"]  # no tmp/old leftovers


def _saved(tmp_path: Path) -> Path:
    folder = tmp_path / "lexical"
    LexicalIndex.build(DOCS).save(folder)
    return folder


def test_missing_index(tmp_path: Path) -> None:
    with pytest.raises(LexicalIndexError, match="not found"):
        LexicalIndex.load(tmp_path / "nope")
    folder = _saved(tmp_path)
    (folder / "meta.json").unlink()
    with pytest.raises(LexicalIndexError, match=r"meta\.json is missing"):
        LexicalIndex.load(folder)
    folder = _saved(tmp_path)
    (folder / "doc_ids.npy").unlink()
    with pytest.raises(LexicalIndexError, match=r"doc_ids\.npy is missing"):
        LexicalIndex.load(folder)


def test_truncated_file(tmp_path: Path) -> None:
    folder = _saved(tmp_path)
    path = folder / "weights.npy"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(LexicalIndexError, match=r"weights\.npy is truncated"):
        LexicalIndex.load(folder)


def test_corrupt_meta(tmp_path: Path) -> None:
    folder = _saved(tmp_path)
    meta_path = folder / "meta.json"
    good = meta_path.read_text()
    meta_path.write_text(good[: len(good) // 2])
    with pytest.raises(LexicalIndexError, match=r"meta\.json is unreadable or corrupt"):
        LexicalIndex.load(folder)
    meta = json.loads(good)
    meta["doc_count"] = -1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(LexicalIndexError, match=r"meta\.json is corrupt"):
        LexicalIndex.load(folder)
    meta = json.loads(good)
    meta["tokenizer"] = TOKENIZER_VERSION + 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(LexicalIndexError, match="rebuild the index"):
        LexicalIndex.load(folder)
    meta = json.loads(good)
    meta["version"] = FORMAT_VERSION + 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(LexicalIndexError, match="format version"):
        LexicalIndex.load(folder)


def test_corrupt_array_file(tmp_path: Path) -> None:
    folder = _saved(tmp_path)
    path = folder / "indptr.npy"
    size = path.stat().st_size
    path.write_bytes(b"\x00garbage" * (size // 8) + b"\x00" * (size % 8))  # same size
    with pytest.raises(LexicalIndexError, match=r"indptr\.npy is corrupt"):
        LexicalIndex.load(folder)


def test_corrupt_array_contents(tmp_path: Path) -> None:
    folder = _saved(tmp_path)
    # sizes agree with meta.json but the postings no longer do
    meta = json.loads((folder / "meta.json").read_text())
    indptr = np.load(folder / "indptr.npy")
    indptr[-1] += 1
    np.save(folder / "indptr.npy", indptr)
    assert (folder / "indptr.npy").stat().st_size == meta["files"]["indptr.npy"]["bytes"]
    with pytest.raises(LexicalIndexError, match="disagree"):
        LexicalIndex.load(folder)


def test_verify_detects_flipped_byte(tmp_path: Path) -> None:
    folder = _saved(tmp_path)
    path = folder / "weights.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    LexicalIndex.load(folder)  # sizes and shapes still fine: not detected without verify
    with pytest.raises(LexicalIndexError, match=r"weights\.npy does not match its checksum"):
        LexicalIndex.load(folder, verify=True)
