"""Reading one page (MCP ``read_page``, ``check_links``) costs what the change costs, not what
the wiki costs: the wiki is read through the checker's scan cache, so a read after an earlier
read (or a check) scans no page again -- only the pages edited since."""

from __future__ import annotations

import pytest

from llmwiki_git.pages.service import links_report, read_page
from llmwiki_git.wiki.model import ScanTally
from llmwiki_git.workspace import Workspace
from tests.conftest import Repo, layout_prefix, page


def _wiki(repo: Repo, layout: str, count: int = 12) -> str:
    prefix = layout_prefix(repo, layout)
    for n in range(count):
        repo.write(
            f"{prefix}concepts/p{n}.md", page(f"Page {n}", f"Links to [[p{(n + 1) % count}]].")
        )
    repo.commit("pages")
    return prefix


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_second_read_scans_no_page(repo: Repo, layout: str) -> None:
    prefix = _wiki(repo, layout)
    ws = Workspace.open(repo.root)
    first = read_page(ws, path=f"{prefix}concepts/p3.md")
    assert first.title == "Page 3"
    before = ScanTally.pages
    again = read_page(Workspace.open(repo.root), page_id="concepts/p4")  # a fresh process's read
    assert again.title == "Page 4" and "[[p5]]" in again.body
    assert ScanTally.pages == before  # served from the scan cache the first read wrote
    # an edited page is scanned again, and only it
    repo.write(f"{prefix}concepts/p4.md", page("Page Four", "Edited."))
    edited = read_page(Workspace.open(repo.root), page_id="concepts/p4")
    assert edited.title == "Page Four" and edited.body.strip() == "Edited."
    assert ScanTally.pages == before + 1


def test_links_after_a_read_scan_no_page(repo: Repo) -> None:
    _wiki(repo, "wiki")
    read_page(Workspace.open(repo.root), page_id="concepts/p0")
    before = ScanTally.pages
    report = links_report(Workspace.open(repo.root), "See [[p1]] and [[nowhere]].")
    assert [c.target for c in report] == ["p1", "nowhere"]
    assert ScanTally.pages == before


def test_without_the_cache_every_read_scans(repo: Repo) -> None:
    """LLMWIKI_NO_CACHE (and a folder outside git) still reads correctly, scanning anew."""
    _wiki(repo, "wiki", count=5)
    ws = Workspace.open(repo.root, environ={"LLMWIKI_NO_CACHE": "1"})
    read_page(ws, page_id="concepts/p0")
    before = ScanTally.pages
    assert read_page(ws, page_id="concepts/p1").title == "Page 1"
    assert ScanTally.pages == before + 5
