"""The saved-answer page's frontmatter (issue 23): a summary never ends inside a link, and a
very long question gives a bounded title."""

from __future__ import annotations

import pytest
import yaml

from llmwiki_git.publication.document import summarize

from ..conftest import Repo, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


def test_a_summary_never_ends_inside_a_link_or_code() -> None:
    """Regression: the saved summary was cut at 119 characters, inside a wikilink:
    ``'… [[capture-not…'``."""
    answer = (
        "Capture notes from the Drafts app on iOS and send them to the inbox of your workspace with "
        "one tap [[capture-notes-with-drafts-pro]]. Then file them."
    )
    summary = summarize(answer)
    assert len(summary) <= 120 and summary.endswith("…")
    assert summary.count("[[") == summary.count("]]") and "[[capture-not" not in summary.replace(
        "[[capture-notes-with-drafts-pro]]", ""
    ), summary
    code = "Run " + "x" * 90 + " with `llmwiki index --fast --json` to see it. Then more."
    assert summarize(code).count("`") % 2 == 0, summarize(code)
    assert summarize("A blob stores bytes [[blobs]]. More.") == "A blob stores bytes [[blobs]]."
    # a sentence end inside a link is not the end of the sentence
    assert summarize("See [[v1.2. notes]] for details. Then.") == "See [[v1.2. notes]] for details."


@pytest.mark.parametrize("layout", ["wiki", "root"])
def test_a_very_long_question_saves_a_page_with_a_bounded_title(repo: Repo, layout: str) -> None:
    """Regression: a 10,000-character question saved a page whose title was all of it."""
    prefix = "wiki/" if layout == "wiki" else ""
    if layout == "root":
        repo.write("index.md", "# Home\n\nMy vault.\n")
    repo.write(
        f"{prefix}notes/compost.md", page("Compost", "A compost heap turns garden waste into soil.")
    )
    repo.commit("vault")
    question = "what does a compost heap turn garden waste into " + " ".join(
        f"word{i}" for i in range(1400)
    )
    assert len(question) > 10_000
    proc = repo.llmwiki("query", question, "--save", env=FAST)
    assert proc.returncode == 0, proc.stderr
    saved = next((repo.root / f"{prefix}queries").glob("*.md")).read_text(encoding="utf-8")
    meta = yaml.safe_load(saved.split("---\n")[1])
    assert meta["title"].startswith("what does a compost heap turn garden waste into word0")
    assert len(meta["title"]) <= 200 and meta["title"].endswith("…")
    assert question in repo.git(
        "log", "-1", "--format=%B"
    )  # the whole question stays in the commit
