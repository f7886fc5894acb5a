"""`index` reads and chunks a large wiki on every core (wiki/parallel.py): the result is
exactly what one process gives, page for page, in the same order."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmwiki_git.retrieval import indexer
from llmwiki_git.wiki.parallel import MIN_PAGES
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, page


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_pages_read_in_shares_equal_pages_read_in_one_process(
    repo: Repo, prefix: str, monkeypatch
) -> None:
    n = MIN_PAGES + 20
    for i in range(n):
        links = f"[[note-{(i + 1) % n}]] [[Note {(i * 7) % n}|seven]] [[missing-{i % 5}]] [[note-{i}#Part]]"
        repo.write(
            f"{prefix}notes/note-{i}.md",
            page(
                f"Note {i}",
                f"# Part\n\nNote {i} body. {links}\n\n" + "Words. " * (i % 300),
                aliases=f"[Alias {i}]",
            ),
        )
    repo.write(f"{prefix}notes/latin.md", "caf\xe9\n".encode("latin-1"))
    repo.write(f"{prefix}notes/binary.md", b"\x00\x01")
    if not prefix:
        repo.write("index.md", "# Home\n\n[[note-1]]\n")
    repo.commit("wiki")
    from llmwiki_git.wiki import parallel

    assert parallel._workers(n) == min(
        parallel.usable_cores(), 8
    )  # shared out (on a multi-core machine)
    wiki = Workspace.open(Path(repo.root)).wiki()
    shared = indexer.read_pages(wiki)
    monkeypatch.setenv("LLMWIKI_SERIAL_SCAN", "1")
    alone = indexer.read_pages(Workspace.open(Path(repo.root)).wiki())
    assert shared == alone
    pages, skipped = shared
    assert len(pages) == n + (prefix == "") and set(skipped) == {
        f"{prefix}notes/latin.md",
        f"{prefix}notes/binary.md",
    }
    first = next(p for p in pages if p.page_id == "notes/note-3")
    assert first.links == ("notes/note-4", "notes/note-21") and first.dangling == ("missing-3",)


def test_bm25_tokenized_in_shares_equals_one_process(monkeypatch) -> None:
    """The lexical index of many chunks is tokenized on every core and merged: the same
    vocabulary, postings, weights and lengths, bit for bit, as one process builds."""
    import numpy as np

    from llmwiki_git.retrieval.lexical import LexicalIndex
    from llmwiki_git.retrieval.postings import SHARED_DOCS, tokenize_all

    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()
    docs = [
        (
            (f"Title {i % 97}", 3.0),
            ("", 2.0),
            (f"notes n{i % 13}", 1.5),
            (
                " ".join(words[(i * k) % len(words)] for k in range(i % 40))
                + f" 東京{i % 7} café{i % 3}",
                1.0,
            ),
        )
        for i in range(SHARED_DOCS + 500)
    ]
    shared, shared_top = tokenize_all(docs), LexicalIndex.build(docs).top("gamma café1", 5)
    monkeypatch.setenv("LLMWIKI_SERIAL_SCAN", "1")
    alone = tokenize_all(docs)
    assert shared[0] == alone[0]
    for a, b in zip(shared[1:], alone[1:]):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert shared_top and shared_top == LexicalIndex.build(docs).top("gamma café1", 5)
