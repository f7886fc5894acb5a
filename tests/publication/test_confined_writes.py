"""Issue 22, item 2: every write resolves its real destination and refuses a path whose real
location leaves the repository or passes through a symlink -- committed or untracked --
before any ref moves; and the write itself (a folder walk that never follows a symlink)
refuses one swapped in after the decision. Real repositories and the real CLI, both layouts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmwiki_git import confine
from llmwiki_git.errors import PathRefused

from ..conftest import Repo
from ..test_security import demo_in

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


@pytest.fixture(params=["wiki", "vault"])
def demo(repo: Repo, request: pytest.FixtureRequest) -> tuple[Repo, str]:
    return repo, demo_in(repo, request.param)


def state(repo: Repo) -> tuple[str, str, str]:
    return (
        repo.git("for-each-ref", "--format=%(refname) %(objectname)"),
        repo.git("ls-files", "-s"),
        repo.git("status", "--porcelain", "--untracked-files=all"),
    )


def test_save_through_an_untracked_symlinked_queries_folder_is_refused(
    demo: tuple[Repo, str], tmp_path: Path
) -> None:
    repo, prefix = demo
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.root / f"{prefix}queries").symlink_to(outside)  # untracked: git never sees it
    before = state(repo)
    proc = repo.llmwiki("query", "what is a blob?", "--save", env=FAST)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "symlink" in proc.stderr and f"{prefix}queries" in proc.stderr, proc.stderr
    assert list(outside.iterdir()) == []
    assert state(repo) == before
    assert not (repo.root / ".llmwiki" / "transaction.json").exists()


def test_approve_through_an_untracked_symlinked_queries_folder_is_refused(
    demo: tuple[Repo, str], tmp_path: Path
) -> None:
    repo, prefix = demo
    staged = repo.llmwiki("query", "what is a blob?", "--save", "--review", env=FAST)
    assert staged.returncode == 0, staged.stderr
    (cid,) = repo.git(
        "for-each-ref", "--format=%(refname:lstrip=4)", "refs/heads/llmwiki/review/"
    ).split()
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.root / f"{prefix}queries").symlink_to(outside)
    before = state(repo)
    proc = repo.llmwiki("review", "approve", cid, env=FAST)
    assert proc.returncode == 1 and "symlink" in proc.stderr, proc.stderr
    assert list(outside.iterdir()) == []
    assert state(repo) == before  # main, the candidate, the index and the work tree as they were


def test_the_write_itself_never_follows_a_symlink_swapped_in_after_the_decision(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    (root / "wiki").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    confine.replace_file(root, "wiki/queries/a.md", b"fine\n")
    assert (root / "wiki/queries/a.md").read_bytes() == b"fine\n"
    os.rename(root / "wiki/queries", tmp_path / "moved")
    (root / "wiki/queries").symlink_to(outside)  # a swap between the check and the write
    with pytest.raises(PathRefused, match="symlink"):
        confine.replace_file(root, "wiki/queries/a.md", b"evil\n")
    (root / "wiki/b.md").symlink_to(outside / "b.md")
    with pytest.raises(PathRefused, match="symlink"):
        confine.replace_file(root, "wiki/b.md", b"evil\n")
    for bad in ("../x.md", "/etc/x.md", "wiki/../../x.md"):
        with pytest.raises(PathRefused):
            confine.replace_file(root, bad, b"evil\n")
    assert list(outside.iterdir()) == []
    assert not [p for p in root.rglob("*.tmp")]
