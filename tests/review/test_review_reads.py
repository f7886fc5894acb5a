"""Listing and showing review candidates read the wiki through the checker's scan cache: a
second evaluation (the review view's queue, `review list` run again) scans no page, only
the pages edited since."""

from __future__ import annotations

import pytest

from llmwiki_git.review.service import list_view, show_view
from llmwiki_git.wiki.model import ScanTally
from llmwiki_git.workspace import Workspace
from tests.conftest import Repo, layout_prefix, page


def _candidate(repo: Repo, layout: str) -> tuple[str, str]:
    prefix = layout_prefix(repo, layout)
    for n in range(8):
        repo.write(f"{prefix}concepts/p{n}.md", page(f"Page {n}", f"Links to [[p{(n + 1) % 8}]]."))
    repo.commit("pages")
    proc = repo.llmwiki("mv", f"{prefix}concepts/p3.md", f"{prefix}concepts/three.md", "--review")
    assert proc.returncode == 0, proc.stderr
    (row,) = list_view(Workspace.open(repo.root))
    return prefix, row.id


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_a_second_evaluation_scans_no_page(repo: Repo, layout: str) -> None:
    prefix, cid = _candidate(repo, layout)
    before = ScanTally.pages
    (row,) = list_view(Workspace.open(repo.root))  # a fresh process's `review list`
    view = show_view(Workspace.open(repo.root), cid)
    assert row.id == cid and not row.notes and view.verdict.ok, view.verdict.message
    assert ScanTally.pages == before  # every page's scan came from the cache the first wrote
    # a page edited in the work tree is scanned again, and only it
    repo.write(f"{prefix}concepts/p5.md", page("Page Five", "Links to [[p6]]."))
    (row,) = list_view(Workspace.open(repo.root))
    assert not row.notes
    assert ScanTally.pages <= before + 1
