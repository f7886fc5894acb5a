"""Evidence stays clean and the index follows the wiki on the real Foam docs (a root-layout
vault with its own hand-written home ``index.md``): part of the corpus suite (see
conftest.py)."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from ..conftest import Repo
from ..retrieval.test_follow_wiki import FAST, context, query
from .conftest import corpus


@pytest.fixture
def foam(repo: Repo) -> Repo:
    shutil.copytree(corpus("foam-docs"), repo.root, dirs_exist_ok=True)
    for folder, _dirs, files in os.walk(repo.root):
        if "/.git" in folder:
            continue
        os.chmod(folder, stat.S_IRWXU)
        for name in files:
            os.chmod(os.path.join(folder, name), stat.S_IRUSR | stat.S_IWUSR)
    repo.commit("the Foam docs")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    return repo


def test_a_page_committed_after_index_is_found_and_a_deleted_one_disappears(foam: Repo) -> None:
    foam.write(
        "user/recipes/medlar-jelly.md",
        "# Medlar jelly\n\nMedlar jelly is made from bletted medlars and lemon.\n",
    )
    foam.commit("a new note")
    result = query(foam, "How is medlar jelly made?")
    assert (
        result["pageIds"][0] == "user/recipes/medlar-jelly"
        and "[[medlar-jelly]]" in result["answer"]
    )
    assert context(foam, "medlar jelly")["primary"][0]["id"] == "user/recipes/medlar-jelly"
    daily = "user/features/daily-notes"
    assert daily in [p["id"] for p in context(foam, "daily notes")["primary"]]
    foam.git("rm", "-q", f"{daily}.md")
    foam.commit("drop daily notes")
    pack = context(foam, "daily notes")
    assert daily not in [p["id"] for p in pack["primary"]] and pack["warnings"] == []
    proc = foam.llmwiki("query", "How do I create a daily note?", env=FAST)
    assert (
        proc.returncode == 0 and "unreadable" not in proc.stderr and "warning" not in proc.stderr
    ), proc.stderr


def test_the_home_page_is_evidence_and_the_journal_is_not(foam: Repo) -> None:
    home = query(foam, "What is Foam, the personal knowledge management system?")
    assert "index" in home["pageIds"]  # Foam's own home page
    # Foam has both index.md and user/index.md: [[index]] would name either, so each is cited
    # by a link only it answers ([[/index]], [[user/index]]), never the short one (issue 23).
    citations = home["answerCitations"]["citations"]
    assert "[[index]]" not in home["answer"] and all(
        c["status"] == "resolved" for c in citations
    ), citations
    assert {c["pageId"] for c in citations if c["target"] in ("/index", "user/index")} <= {
        "index",
        "user/index",
    }
    question = "How do I create a new note from a template?"
    first = foam.llmwiki("query", question, "--save", env=FAST)
    assert first.returncode == 0, first.stderr
    again = query(foam, question)
    slug = "how-do-i-create-a-new-note-from-a-template"
    assert f"queries/{slug}" not in again["pageIds"] and f"[[{slug}]]" not in again["answer"]
    assert "log" not in again["pageIds"]
    second = foam.llmwiki("query", question, "--save", env=FAST)
    assert second.returncode == 0, second.stderr
    saved = next(foam.root.rglob(f"{slug}.md")).read_text()
    assert f"[[{slug}]]" not in saved and "[[templates]]" in saved
    # Whatever the journal holds, it never grounds an answer.
    assert (
        "log" not in query(foam, "save query how do I create a new note from a template")["pageIds"]
    )


def test_a_non_answer_is_not_published(foam: Repo) -> None:
    head = foam.git("rev-parse", "HEAD")
    proc = foam.llmwiki("query", "What is the capital of France?", "--save", env=FAST)
    assert proc.returncode == 0 and "Nothing to publish" in proc.stderr, proc.stderr
    assert foam.git("rev-parse", "HEAD") == head and foam.git("status", "--porcelain") == ""


def test_top_pages_is_exact(foam: Repo) -> None:
    for n in (1, 2, 5):
        assert (
            len(
                context(foam, "how do I create a new note from a template?", "--top-pages", str(n))[
                    "primary"
                ]
            )
            == n
        )
