"""Titles by convention: frontmatter, a Logseq ``title::`` property, a level-1 heading that
opens the body, else the file name; never a heading from the middle of a page. Shown the same
way by context, the generated index, review and the MCP server, in both layouts."""

from __future__ import annotations

import json

import pytest

from llmwiki_git.wiki.titles import declared_title, opening_heading, page_title, stem_title

from ..conftest import Repo

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}

# A decision record as many vaults write them: the file name is the title, sections follow.
RECORD = "We chose sqlite for the queue.\n\n# Context\n\nThe queue lost jobs on restart.\n\n# Decision\n\nUse sqlite.\n"


@pytest.mark.parametrize(
    ("data", "body", "stem", "want"),
    [
        ({"title": " Queue storage "}, "# Other\n", "adr-1", "Queue storage"),
        ({}, RECORD, "adr-0007-queue-storage", "adr-0007-queue-storage"),
        ({}, "\n\n# Daily notes\n\nText.\n", "daily-notes", "Daily notes"),
        ({}, "# Daily notes #\n", "x", "Daily notes"),
        ({}, "<!-- omit in toc -->\n\n# Recipes\n\nA #recipe is a guide.\n", "recipes", "Recipes"),
        ({}, "<!-- a comment\nover lines -->\n# Not opening\n", "multi", "multi"),
        ({}, "Daily notes\n===========\n\nText.\n", "x", "Daily notes"),
        ({}, "## Usage\n\n# Not a title either\n", "Snap to grid", "Snap to grid"),
        ({}, "#tag-line first\n\n# Heading\n", "tagged", "tagged"),
        ({}, "type:: [[Feature]]\ntitle:: What is it?\n\n- text\n", "What is it%3F", "What is it?"),
        (
            {},
            "alias:: Element locking\n\n# Usage\n\t- lock it\n",
            "Whiteboard___Element locking",
            "Whiteboard/Element locking",
        ),
        ({}, "- # Index\n", "Community", "Community"),
        ({"title": 7}, "", "numbers%zz", "numbers%zz"),
    ],
)
def test_page_title_by_convention(data: dict, body: str, stem: str, want: str) -> None:
    assert page_title(data, body, stem) == want


def test_only_an_opening_heading_counts() -> None:
    assert opening_heading(RECORD) is None
    assert declared_title({}, RECORD) is None
    assert opening_heading("# A\n" + "x\n" * 10_000) == "A"
    assert stem_title("a___b___c") == "a/b/c" and stem_title("100%") == "100%"


def _record_vault(repo: Repo, root: str) -> None:
    repo.write(f"{root}adr-0007-queue-storage.md", RECORD)
    repo.write(
        f"{root}queue-notes.md", "# Queue notes\n\nThe worker reads jobs from the queue table.\n"
    )
    repo.commit("vault")


@pytest.mark.parametrize("root", ["wiki/", ""], ids=["wiki-folder", "root-layout"])
def test_context_shows_the_conventional_title(repo: Repo, root: str) -> None:
    if not root:
        repo.write(
            "index.md", "# My home page\n\nMine.\n"
        )  # the user's own home page, never rewritten
    _record_vault(repo, root)
    assert repo.llmwiki("index", env=FAST).returncode == 0
    proc = repo.llmwiki("context", "why sqlite for the queue", "--json", env=FAST)
    assert proc.returncode == 0, proc.stderr
    titles = {p["id"].rsplit("/", 1)[-1]: p["title"] for p in json.loads(proc.stdout)["primary"]}
    assert titles["adr-0007-queue-storage"] == "adr-0007-queue-storage"  # not "Context"
    assert titles["queue-notes"] == "Queue notes"
    markdown = repo.llmwiki("context", "why sqlite for the queue", env=FAST).stdout
    assert "### adr-0007-queue-storage (`" in markdown and "### Context" not in markdown


def test_generated_index_uses_the_conventional_title(repo: Repo) -> None:
    repo.write("wiki/concepts/queue-notes.md", "# Queue notes\n\nThe worker reads jobs.\n")
    repo.write("wiki/concepts/adr-0007.md", RECORD)
    repo.write("wiki/concepts/blobs.md", "---\ntitle: Blobs\n---\n# Something else\n")
    repo.commit("concepts")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    index = (repo.root / "wiki" / "index.md").read_text()
    assert "- **[[queue-notes|Queue notes]]**" in index
    assert "- **[[adr-0007|adr-0007]]**" in index and "Context" not in index
    assert "- **[[blobs|Blobs]]**" in index


@pytest.mark.parametrize("root", ["wiki/", ""], ids=["wiki-folder", "root-layout"])
def test_review_show_names_the_target_title(repo: Repo, root: str) -> None:
    _record_vault(repo, root)
    repo.write(f"{root}adr-0007-queue-storage.md", RECORD + "\n# Consequences\n\nOne more table.\n")
    proc = repo.llmwiki(
        "review", "stage", f"{root}adr-0007-queue-storage.md", "--json", "--restore"
    )
    assert proc.returncode == 0, proc.stderr
    candidate = json.loads(proc.stdout)["staged"][0]["id"]
    shown = repo.llmwiki("review", "show", candidate, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["title"] == "adr-0007-queue-storage"
    text = repo.llmwiki("review", "show", candidate).stdout
    assert "title: adr-0007-queue-storage\n" in text
