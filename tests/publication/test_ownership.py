"""Ownership of generated files (issue 11, Deliver 1): a user's own index.md and log.md are
never rewritten by `index`, `query --save` or `--save --review` + `review approve`, in any
layout; llmwiki keeps its table of contents and journal in the state folder then, and says
so once. Generated files (llmwiki's, or the TypeScript tool's exact format) stay llmwiki's."""

from __future__ import annotations

import re
import subprocess

import pytest

from llmwiki_git.wiki.generated import is_generated_index, is_generated_log

from ..conftest import REPO_ROOT, Repo, copy_demo

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
HOME = """# My notes

Welcome to my vault. Start with [[notes/blobs]] or the [[guides/trees|tree guide]].

- Things I keep forgetting
- Things I want to learn
"""
USER_LOG = """# Changelog

2026-01-01: started this vault.
2026-02-01: reorganised the guides.
"""


def run(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(*args, env=FAST)


@pytest.fixture
def vault(repo: Repo) -> Repo:
    """A root-layout wiki: pages in folders next to a hand-written home index.md and a user log.md."""
    demo = REPO_ROOT / "examples" / "demo" / "wiki" / "concepts"
    for name in ("blobs", "git-objects", "pre-commit-hooks"):
        repo.write(f"notes/{name}.md", (demo / f"{name}.md").read_text())
    for name in ("trees", "commits"):
        repo.write(f"guides/{name}.md", (demo / f"{name}.md").read_text())
    repo.write("index.md", HOME)
    repo.write("log.md", USER_LOG)
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit("my vault")
    return repo


def user_files_untouched(repo: Repo) -> None:
    assert (repo.root / "index.md").read_text() == HOME
    assert (repo.root / "log.md").read_text() == USER_LOG
    assert repo.git("show", "HEAD:index.md") == HOME
    assert repo.git("show", "HEAD:log.md") == USER_LOG
    assert (
        repo.git("log", "--format=%h", "--", "index.md", "log.md").count("\n") == 1
    )  # only the user's commit


def test_root_layout_index_save_review_approve_never_touch_the_users_files(vault: Repo) -> None:
    assert run(vault, "index").returncode == 0
    user_files_untouched(vault)
    saved = run(vault, "query", "what is a blob?", "--save")
    assert saved.returncode == 0, saved.stderr
    assert "index.md is your own page" in saved.stderr and ".llmwiki/index.md" in saved.stderr
    assert "log.md is your own file" in saved.stderr
    assert vault.git("show", "--name-only", "--format=", "HEAD").split() == [
        "queries/what-is-a-blob.md"
    ]
    user_files_untouched(vault)
    local_index = (vault.root / ".llmwiki" / "index.md").read_text()
    assert "[[what-is-a-blob|what is a blob?]]" in local_index and is_generated_index(
        local_index.encode()
    )
    assert "Saved: [[what-is-a-blob]]" in (vault.root / ".llmwiki" / "log.md").read_text()

    assert (
        run(vault, "index").returncode == 0
    )  # a queries/ folder exists now: still never rewritten
    user_files_untouched(vault)
    staged = run(vault, "query", "what is a tree?", "--save", "--review")
    assert staged.returncode == 0, staged.stderr
    cid = re.search(r"Staged review candidate (\S+)", staged.stderr).group(1)  # type: ignore[union-attr]
    approved = run(vault, "review", "approve", cid)
    assert approved.returncode == 0, approved.stderr
    assert "your own" not in approved.stderr  # said once, not every time
    assert vault.git("show", "--name-only", "--format=", "HEAD").split() == [
        "queries/what-is-a-tree.md"
    ]
    user_files_untouched(vault)
    assert f"Candidate: {cid}" in (vault.root / ".llmwiki" / "log.md").read_text()
    assert vault.git("status", "--porcelain", "--untracked-files=all") == ""


def test_an_uncommitted_human_edit_to_a_generated_log_makes_it_the_users(repo: Repo) -> None:
    copy_demo(repo.root)
    repo.commit("demo")
    edited = (repo.root / "log.md").read_text() + "My own remark, typed by hand.\n"
    repo.write("log.md", edited)
    staged = run(repo, "query", "what is a blob?", "--save", "--review")
    cid = re.search(r"Staged review candidate (\S+)", staged.stderr).group(1)  # type: ignore[union-attr]
    approved = run(repo, "review", "approve", cid)
    assert approved.returncode == 0, approved.stderr
    assert (repo.root / "log.md").read_text() == edited
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == ["wiki/index.md"]
    assert repo.git("status", "--porcelain") == " M log.md\n"


def test_the_typescript_tools_generated_index_stays_llmwikis(repo: Repo) -> None:
    copy_demo(repo.root)
    repo.commit("demo")
    assert is_generated_index((repo.root / "wiki/index.md").read_bytes())
    assert run(repo, "query", "what is a blob?", "--save").returncode == 0
    assert "[[what-is-a-blob|what is a blob?]]" in repo.git("show", "HEAD:wiki/index.md")
    assert "Saved: [[what-is-a-blob]]" in repo.git("show", "HEAD:log.md")


@pytest.mark.parametrize(
    "text, generated",
    [
        (
            "# Knowledge Wiki\n\n## Concepts\n\n- **[[a|A]]** — x\n\n_1 pages | Generated 2026-01-01T00:00:00Z_\n",
            True,
        ),
        (
            "# Knowledge Wiki\n\n## Concepts\n\n- **[[a|A]]**\n\nA line of my own.\n\n_1 pages | Generated 2026-01-01T00:00:00Z_\n",
            False,
        ),
        ("# Knowledge Wiki\n\n## Concepts\n", False),
        (HOME, False),
    ],
)
def test_generated_index_format(text: str, generated: bool) -> None:
    assert is_generated_index(text.encode()) is generated


@pytest.mark.parametrize(
    "text, generated",
    [
        ("", True),
        ("# Log\n\n", True),
        ("## [2026-01-01T00:00:00Z] query | what?\n- Pages: [[a]]\n\n", True),
        ("# Log\n\n## [2026-01-01T00:00:00Z] approve | q\n- Candidate: x\n\nhand note\n", False),
        (USER_LOG, False),
    ],
)
def test_generated_log_format(text: str, generated: bool) -> None:
    assert is_generated_log(text.encode()) is generated


@pytest.mark.parametrize("layout", ["vault", "wiki"])
def test_index_adds_no_index_md_to_a_vault_that_has_none(repo: Repo, layout: str) -> None:
    """A vault of the user's notes at the repository root with no index.md of its own (Foam,
    Obsidian): `llmwiki index` is read-mostly and leaves `git status` as it was; llmwiki's
    table of contents goes to the state folder. A wiki/ folder is llmwiki's: its index.md is
    generated there as before."""
    prefix = "" if layout == "vault" else "wiki/"
    demo = REPO_ROOT / "examples" / "demo" / "wiki" / "concepts"
    repo.write(f"{prefix}tea.md", "# Tea\n\nMy own note about [[blobs]] and tea.\n")
    for name in ("blobs", "trees"):
        repo.write(f"{prefix}concepts/{name}.md", (demo / f"{name}.md").read_text())
    if layout == "wiki":
        repo.write(".llmwiki/config.toml", 'wiki_dir = "wiki"\n')
    repo.write(".gitignore", ".llmwiki/*\n!.llmwiki/config.toml\n")
    repo.commit("my notes")
    before = repo.git("status", "--porcelain", "--untracked-files=all")
    indexed = run(repo, "index")
    assert indexed.returncode == 0, indexed.stderr
    after = repo.git("status", "--porcelain", "--untracked-files=all")
    if layout == "vault":
        assert after == before == ""
        assert not (repo.root / "index.md").exists() and not (repo.root / "log.md").exists()
        assert "this vault has no index.md" in indexed.stderr
        assert "your own page" not in indexed.stderr  # there is no index.md to call the user's
        assert is_generated_index((repo.root / ".llmwiki" / "index.md").read_bytes())
        again = run(repo, "index")  # said once; still nothing new in the vault
        assert again.returncode == 0 and "this vault has no" not in again.stderr
        assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    else:
        assert after == "?? wiki/index.md\n"
        assert is_generated_index((repo.root / "wiki" / "index.md").read_bytes())
