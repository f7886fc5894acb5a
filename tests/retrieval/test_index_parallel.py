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
def test_pages_read_in_shares_equal_pages_read_in_one_process(repo: Repo, prefix: str, monkeypatch) -> None:
    n = MIN_PAGES + 20
    for i in range(n):
        links = f"[[note-{(i + 1) % n}]] [[Note {(i * 7) % n}|seven]] [[missing-{i % 5}]] [[note-{i}#Part]]"
        repo.write(f"{prefix}notes/note-{i}.md", page(f"Note {i}", f"# Part\n\nNote {i} body. {links}\n\n" + "Words. " * (i % 300),
                                                      aliases=f"[Alias {i}]"))
    repo.write(f"{prefix}notes/latin.md", "caf\xe9\n".encode("latin-1"))
    repo.write(f"{prefix}notes/binary.md", b"\x00\x01")
    if not prefix:
        repo.write("index.md", "# Home\n\n[[note-1]]\n")
    repo.commit("wiki")
    from llmwiki_git.wiki import parallel

    assert parallel._workers(n) == min(parallel.usable_cores(), 8)  # shared out (on a multi-core machine)
    wiki = Workspace.open(Path(repo.root)).wiki()
    shared = indexer.read_pages(wiki)
    monkeypatch.setenv("LLMWIKI_SERIAL_SCAN", "1")
    alone = indexer.read_pages(Workspace.open(Path(repo.root)).wiki())
    assert shared == alone
    pages, skipped = shared
    assert len(pages) == n + (prefix == "") and set(skipped) == {f"{prefix}notes/latin.md", f"{prefix}notes/binary.md"}
    first = next(p for p in pages if p.page_id == "notes/note-3")
    assert first.links == ("notes/note-4", "notes/note-21") and first.dangling == ("missing-3",)
