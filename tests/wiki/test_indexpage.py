"""The generated table of contents keeps links in summaries as a reader sees them."""

from __future__ import annotations

from llmwiki_git.wiki.generated import is_generated_index
from llmwiki_git.wiki.indexpage import Entry, render


def test_summary_links_stay_links_or_read_as_their_label() -> None:
    text = render(
        [Entry("blobs", "Blobs", "Stored by [[git-objects]] and [[trees|a tree]].", "concept")],
        "2026-12-01T00:00:00Z",
    )
    line = next(x for x in text.splitlines() if x.startswith("- **[[blobs|Blobs]]**"))
    assert line == "- **[[blobs|Blobs]]** — Stored by [[git-objects]] and a tree."
    assert is_generated_index(text.encode())


def test_one_page_footer_is_singular_and_still_llmwikis_own() -> None:
    text = render([Entry("blobs", "Blobs", "", "concept")], "2026-12-01T00:00:00Z")
    assert "_1 page | Generated 2026-12-01T00:00:00Z_" in text
    assert is_generated_index(text.encode())
