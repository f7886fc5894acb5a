"""A long page in its place: a changelog that mentions every feature once per release must
not outrank the short page that answers just because it has many chunks, each a chance to
match (search.page_scores).

The fixture (tests/retrieval/fixtures/long-page) is written for these tests: the changelog
of a made-up note app, 36 releases over two years, and one short page per feature."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ..conftest import Repo

LOCAL = {"LLMWIKI_EMBEDDING_PROVIDER": "local"}

FIXTURE = Path(__file__).parent / "fixtures" / "long-page"
QUESTIONS = {
    "tags.md": "group notes by topic with a label, nested under a parent",
    "templates.md": "start a new note pre-filled with today's date and an agenda",
    "daily-notes.md": "open a note for today's date with a keyboard shortcut",
    "graph-view.md": "see my notes as dots connected by lines",
    "backlinks.md": "which other notes point to this one",
    "embeds.md": "show the content of another note inline",
    "export.md": "save a note as a pdf file",
    "sync.md": "what happens when I edit the same note on two devices while offline",
    "search.md": "find notes that contain a phrase but not some word",
    "attachments.md": "where do files I drag onto a note end up",
}


def _wiki(repo: Repo, layout: str) -> str:
    prefix = "wiki/concepts/" if layout == "wiki" else "notes/"
    if layout == "vault":
        repo.write("index.md", "# My notes\n\nThe user's own home page.\n")
    for page in FIXTURE.glob("*.md"):
        target = repo.root / prefix / page.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, target)
    repo.commit("a note app's docs and its changelog")
    return prefix


def _ranked(repo: Repo, question: str, *extra: str) -> list[str]:
    proc = repo.llmwiki("context", question, "--json", "--top-pages", "5", *extra, env=LOCAL)
    assert proc.returncode == 0, proc.stderr
    return [p["id"].rsplit("/", 1)[-1] + ".md" for p in json.loads(proc.stdout)["primary"]]


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_a_long_page_pays_for_its_many_chunks(repo: Repo, layout: str) -> None:
    """In the cosine list a page ranks by its best chunk less a length penalty: the answer
    outranks the changelog for every question. Scored by its best chunk alone, the
    changelog's one release note about backlinks came first for "which other notes point
    to this one" (cosine 0.419 against the backlinks page's 0.374)."""
    prefix = _wiki(repo, layout)
    assert repo.llmwiki("index", env=LOCAL).returncode == 0
    assert (repo.root / prefix / "CHANGELOG.md").stat().st_size > 9000  # a long page: 16 chunks
    for page, question in QUESTIONS.items():
        ranked = _ranked(repo, question, "--top-pages", "11")
        with_cosine_only = _cosine_ranking(repo, question)
        assert with_cosine_only.index(page) < with_cosine_only.index("CHANGELOG.md"), (
            question,
            with_cosine_only,
        )
        assert page in ranked[:2], (
            question,
            ranked,
        )  # and the default (hybrid) ranking has it near the top


def _cosine_ranking(repo: Repo, question: str) -> list[str]:
    from llmwiki_git.workspace import Workspace

    loaded, result = (
        Workspace.open(repo.root, environ=LOCAL)
        .retrieval()
        .search(question, keep=50, max_pages=20, mode="cosine")
    )
    paths = {p.page_id: p.path for p in loaded.store.pages}
    return [paths[page_id].rsplit("/", 1)[-1] for page_id, _ in result.pages]


def test_page_scores_do_not_reward_chunk_count() -> None:
    import numpy as np

    from llmwiki_git.retrieval.search import Aggregation, page_scores

    # page 0: one chunk; page 1: 250 chunks, one of them a little closer to the question
    owner = np.array([0] + [1] * 250)
    counts = np.array([1, 250])
    cosine = np.array([0.40] + [0.42] + [0.30] * 249, dtype=np.float32)
    assert (
        page_scores(owner, counts, cosine, Aggregation(), dense=True).argmax() == 1
    )  # best chunk alone
    scored = page_scores(owner, counts, cosine, Aggregation("length", 0.02), dense=True)
    assert scored.argmax() == 0 and abs(scored[1] - (0.42 - 0.02 * np.log(250))) < 1e-6
    # BM25: a long page's best score shrinks by its length; a page without a term scores 0
    bm25 = np.array([5.0] + [6.0] + [1.0] * 249, dtype=np.float32)
    assert page_scores(owner, counts, bm25, Aggregation(), dense=False).tolist() == [5.0, 6.0]
    scored = page_scores(owner, counts, bm25, Aggregation("length", 0.05), dense=False)
    assert scored.argmax() == 0 and scored[1] == pytest.approx(6.0 * 250**-0.05)
    assert page_scores(
        owner, counts, np.zeros(251, np.float32), Aggregation("length", 0.05), dense=False
    ).tolist() == [0, 0]
