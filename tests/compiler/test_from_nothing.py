"""A start from nothing (issue 36, item 5): the first ingest says which layout the wiki has and
where llmwiki writes; a root-layout vault never gets a note it did not ask for (no new
index.md or log.md beside the user's notes)."""

from __future__ import annotations

import re

from ..conftest import Repo

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
NOTE = "# Tea\n\nGreen tea is steamed or pan-fired soon after picking, which keeps it green.\n"


def test_the_first_ingest_says_which_layout_it_makes(repo: Repo) -> None:
    repo.write("inbox/tea.md", NOTE)
    first = repo.llmwiki("ingest", "inbox/tea.md", env=FAST)
    assert first.returncode == 0, first.stderr
    assert "First sources of this wiki: pages at the repository root" in first.stderr
    assert "table of contents to index.md and the journal to log.md" in first.stderr
    assert 'wiki_dir = "wiki"' in first.stderr
    repo.write("inbox/more.md", "# More\n\nMore about tea and the ways to brew it well.\n")
    again = repo.llmwiki("ingest", "inbox/more.md", env=FAST)
    assert again.returncode == 0 and "First sources" not in again.stderr


def test_a_wiki_folder_layout_is_named_as_such(repo: Repo) -> None:
    repo.write(".llmwiki/config.toml", 'wiki_dir = "wiki"\n')
    repo.write("wiki/.keep", "")
    repo.commit("a wiki folder")
    repo.write("inbox/tea.md", NOTE)
    first = repo.llmwiki("ingest", "inbox/tea.md", env=FAST)
    assert first.returncode == 0, first.stderr
    assert "pages under wiki/ (the wiki-folder layout)" in first.stderr
    assert "compiled notes go to wiki/concepts/" in first.stderr


def test_a_vault_without_index_or_log_gets_neither(repo: Repo) -> None:
    """A Foam or Dendron vault: notes at the root, no index.md, no log.md. Ingest, compile
    and approval keep llmwiki's table of contents and journal in .llmwiki/."""
    repo.write("daily.journal.md", "# Daily\n\nMy own note about [[tea]] drinking.\n")
    repo.write("tea.md", "# Tea\n\nMy own note about tea.\n")
    repo.commit("my vault")
    repo.write("inbox/green.md", NOTE)
    ingested = repo.llmwiki("ingest", "inbox/green.md", env=FAST)
    assert ingested.returncode == 0, ingested.stderr
    assert "this vault has no index.md" in ingested.stderr
    compiled = repo.llmwiki("compile", env=FAST)
    cid = re.search(r"Staged (compile-[0-9a-f]{8})", compiled.stdout)
    assert cid, compiled.stdout + compiled.stderr
    approved = repo.llmwiki("review", "approve", cid.group(1), env=FAST)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    tracked = repo.git("ls-tree", "-r", "--name-only", "HEAD").split()
    assert "index.md" not in tracked and "log.md" not in tracked, tracked
    assert not (repo.root / "index.md").exists() and not (repo.root / "log.md").exists()
    assert (repo.root / ".llmwiki/log.md").exists()
