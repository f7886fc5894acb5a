"""Issue 22, item 3: git's own locks are decided before any ref moves. A held
``.git/index.lock``, ``HEAD.lock``, branch or candidate ref lock refuses an approval or a save
with the lock's path and what to do, and nothing moves; recovery of an interrupted write names
a stale git lock it cannot clear (and clears one older than the machine's boot). Real
repositories, the real CLI; both layouts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmwiki_git.errors import GitLockHeld
from llmwiki_git.gitstore.commits import commit_paths
from llmwiki_git.gitstore.git import Git

from ..conftest import Repo
from ..test_security import demo_in
from .test_confined_writes import FAST, demo, state  # noqa: F401 - demo is a fixture


def stage(repo: Repo) -> str:
    proc = repo.llmwiki("query", "what is a blob?", "--save", "--review", env=FAST)
    assert proc.returncode == 0, proc.stderr
    (cid,) = repo.git(
        "for-each-ref", "--format=%(refname:lstrip=4)", "refs/heads/llmwiki/review/"
    ).split()
    return cid


LOCKS = [
    ("wiki", "index.lock"),
    ("vault", "index.lock"),
    ("wiki", "HEAD.lock"),
    ("vault", "refs/heads/main.lock"),
    ("wiki", "candidate"),
]


@pytest.mark.parametrize("layout,lock", LOCKS)
def test_approve_with_a_held_git_lock_refuses_and_nothing_moves(
    repo: Repo, layout: str, lock: str
) -> None:
    demo_in(repo, layout)
    cid = stage(repo)
    rel = f"refs/heads/llmwiki/review/{cid}.lock" if lock == "candidate" else lock
    held = repo.root / ".git" / rel
    held.write_bytes(b"")
    before = state(repo)
    proc = repo.llmwiki("review", "approve", cid, env=FAST)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        str(held) in proc.stderr and "rm " in proc.stderr and "nothing was changed" in proc.stderr
    ), proc.stderr
    held.unlink()
    assert state(repo) == before
    assert not (repo.root / ".llmwiki" / "transaction.json").exists()
    assert repo.llmwiki("review", "approve", cid, env=FAST).returncode == 0  # once the lock is gone


def test_save_with_a_held_index_lock_refuses_before_anything_moves(demo: tuple[Repo, str]) -> None:
    repo, prefix = demo
    held = repo.root / ".git" / "index.lock"
    held.write_bytes(b"")
    before = state(repo)
    proc = repo.llmwiki("query", "what is a blob?", "--save", env=FAST)
    assert proc.returncode == 1 and str(held) in proc.stderr, proc.stderr
    held.unlink()
    assert state(repo) == before
    assert not (repo.root / prefix / "queries").exists()


def test_commit_paths_with_a_held_index_lock_refuses_before_the_ref_moves(repo: Repo) -> None:
    repo.write("wiki/a.md", "# A\n")
    head = repo.commit("a")
    (repo.root / ".git" / "index.lock").write_bytes(b"")
    with pytest.raises(GitLockHeld) as info:
        commit_paths(Git(repo.root), {"wiki/a.md": b"new\n"}, "m", expected_head=None)
    assert str(repo.root / ".git" / "index.lock") in str(info.value) + (info.value.hint or "")
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert not (repo.root / ".llmwiki" / "transaction.json").exists()


def test_recovery_names_a_stale_candidate_ref_lock_then_finishes(demo: tuple[Repo, str]) -> None:
    """Killed after the branch moved; a stale lock on the candidate's ref (a git killed while
    deleting it) must not let recovery say "completed" and leave the candidate behind."""
    repo, prefix = demo
    cid = stage(repo)
    killed = repo.llmwiki("review", "approve", cid, env={**FAST, "LLMWIKI_TEST_KILL_AT": "ref"})
    assert killed.returncode == -9
    moved = repo.git("rev-parse", "HEAD").strip()
    held = repo.root / ".git" / "refs" / "heads" / "llmwiki" / "review" / f"{cid}.lock"
    held.write_bytes(b"")
    proc = repo.llmwiki("review", "list", env=FAST)
    assert str(held) in proc.stderr and "rm " in proc.stderr, proc.stderr
    assert "completed" not in proc.stderr
    assert (
        repo.root / ".llmwiki" / "transaction.json"
    ).exists()  # kept: the next command finishes it
    held.unlink()
    proc = repo.llmwiki("review", "list", env=FAST)
    assert "completed an interrupted approval" in proc.stderr, proc.stderr
    assert repo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""
    assert repo.git("rev-parse", "HEAD").strip() == moved
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert (repo.root / prefix / "queries" / "what-is-a-blob.md").is_file()


def test_recovery_names_a_held_index_lock_and_clears_one_older_than_the_boot(
    demo: tuple[Repo, str],
) -> None:
    repo, prefix = demo
    killed = repo.llmwiki(
        "query", "what is a blob?", "--save", env={**FAST, "LLMWIKI_TEST_KILL_AT": "ref"}
    )
    assert killed.returncode == -9
    held = repo.root / ".git" / "index.lock"
    held.write_bytes(b"")
    during = repo.llmwiki("check", env=FAST)
    assert during.returncode == 0, during.stderr  # the hook's command is never blocked
    assert str(held) in during.stderr and "rm " in during.stderr, during.stderr
    if not Path("/proc/stat").is_file():
        return
    os.utime(
        held, (1_000_000, 1_000_000)
    )  # 1970: left before this machine booted, so nothing holds it
    after = repo.llmwiki("check", env=FAST)
    assert "completed an interrupted save" in after.stderr and "stale" in after.stderr, after.stderr
    assert not held.exists()
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert (repo.root / prefix / "queries" / "what-is-a-blob.md").is_file()
