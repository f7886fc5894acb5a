"""The typed git helpers (gitstore/git.py and its mixins) on a real repository: each asks git
what the code outside gitstore/ used to ask with a hand-written command line."""

from __future__ import annotations

import os

import pytest

from llmwiki_git.errors import GitError
from llmwiki_git.gitstore.git import Git, blob_id

from ..conftest import Repo


@pytest.fixture
def git(repo: Repo) -> Git:
    repo.write("wiki/a.md", "alpha\n")
    repo.write("wiki/sub/b.md", "beta\n")
    repo.write("sources/s.txt", "source\n")
    (repo.root / "wiki" / "link.md").symlink_to("a.md")
    repo.commit("first")
    return Git(repo.root)


def test_objects_at_a_revision(git: Git) -> None:
    blob = git.blob_at("HEAD", "wiki/a.md")
    assert blob == blob_id(b"alpha\n")
    assert (
        git.blob_at("HEAD", "wiki/missing.md") is None
        and git.blob_at("nobranch", "wiki/a.md") is None
    )
    assert git.read_blob(blob) == b"alpha\n" and git.read_blob_at("HEAD", "wiki/a.md") == b"alpha\n"
    assert git.read_blob_at("HEAD", "wiki/missing.md") is None
    assert git.read_blob_at("HEAD", "wiki/sub") is None  # a tree is no blob
    with pytest.raises(GitError):
        git.read_blob("0" * 40)
    assert (
        git.object_type(blob),
        git.object_type("HEAD"),
        git.object_type("0" * 40),
        git.object_type("-p"),
    ) == ("blob", "commit", None, None)
    assert git.object_size(blob) == 6 and git.object_size("HEAD:nothing") is None
    assert (
        git.file_mode("HEAD", "wiki/a.md"),
        git.file_mode("HEAD", "wiki/link.md"),
        git.file_mode("HEAD", "wiki/none.md"),
    ) == ("100644", "120000", "")
    assert git.peel("HEAD", "commit") == git.rev_parse("HEAD")
    assert git.peel(blob, "blob") == blob


def test_trees(git: Git) -> None:
    assert [e.path for e in git.ls_tree_under("HEAD", ":(top,literal)wiki")] == [
        "wiki/a.md",
        "wiki/link.md",
        "wiki/sub/b.md",
    ]
    assert git.ls_tree_under("nobranch", "wiki") == []
    assert git.blob_ids("HEAD", ["wiki/a.md", "wiki/none.md"]) == {"wiki/a.md": blob_id(b"alpha\n")}
    assert git.blob_ids("nobranch", ["wiki/a.md"]) == {}
    assert (
        git.staged_blob("wiki/sub/b.md") == blob_id(b"beta\n")
        and git.staged_blob("wiki/x.md") is None
    )


def test_refs_move_by_compare_and_swap(git: Git) -> None:
    head = git.rev_parse("HEAD")
    assert head is not None
    assert git.update_ref("refs/heads/llmwiki/review/x", head, "", message="stage x")
    assert not git.update_ref(
        "refs/heads/llmwiki/review/x", head, "", check=False
    )  # exists already
    with pytest.raises(GitError):
        git.update_ref("refs/heads/llmwiki/review/x", head, "", message="again")
    assert git.for_each_ref("refs/heads/llmwiki/review/", ("refname", "objectname")) == [
        ["refs/heads/llmwiki/review/x", head]
    ]
    assert git.for_each_ref("refs/heads/llmwiki/review/", ("objectname",), count=1) == [[head]]
    with pytest.raises(GitError):
        git.delete_ref("refs/heads/llmwiki/review/x", "1" * 40)  # not where it is: refused
    git.delete_ref("refs/heads/llmwiki/review/x", head)
    assert git.for_each_ref("refs/heads/llmwiki/review/", ("refname",)) == []
    assert git.branch_name_ok("llmwiki/review/ok-1") and not git.branch_name_ok(
        "llmwiki/review/bad..name"
    )


def test_history(git: Git, repo: Repo) -> None:
    first = git.rev_parse("HEAD")
    repo.write("wiki/a.md", "alpha two\n")
    second = repo.commit("Subject line\n\nQuestion: why?\n\nReplayed: abc")
    assert git.commit_body(second).startswith("Question: why?")
    assert git.author(second) == ("Test User", "test@example.com", git.author(second)[2])
    assert (
        git.count_between(second, first or "") == 0 and git.count_between(first or "", second) == 1
    )
    assert git.parents(second) == [first]
    assert (
        git.log([second], format="%H", grep="Replayed: abc", fixed=True, max_count=1)
        .decode()
        .strip()
        == second
    )
    assert git.log([second], format="%H", grep="Replayed: zzz", fixed=True).strip() == b""
    assert git.log([first or "", second], format="%H", no_walk=True).decode().split() == [
        first,
        second,
    ]
    assert git.commit_object(second).split("\n\n", 1)[1].startswith("Subject line")


def test_changes(git: Git, repo: Repo) -> None:
    head = git.rev_parse("HEAD") or ""
    repo.git("mv", "wiki/sub/b.md", "wiki/sub/c.md")
    assert git.staged_renames("HEAD") == [("wiki/sub/b.md", "wiki/sub/c.md")]
    repo.write("wiki/new.md", "new\n")
    repo.git("add", "wiki/new.md")
    assert git.changed_names(head, None) == {"wiki/new.md", "wiki/sub/c.md"}
    tree = git.write_tree()
    assert tree is not None and git.spawn_write_tree()().decode().strip() == tree
    assert git.changed_names(f"{head}^{{tree}}", tree) == {"wiki/new.md", "wiki/sub/c.md"}
    assert b"wiki/new.md" in git.spawn_index_diff(head)()
    repo.write("wiki/loose.md", "x\n")
    assert [r[3:] for r in git.status_paths(":(top,literal)wiki", renames=False)] == [
        b"wiki/new.md",
        b"wiki/sub/b.md",
        b"wiki/sub/c.md",
        b"wiki/loose.md",
    ]
    repo.write("wiki/a.md", "edited\n")
    git.restore_from_head(":(top,literal)wiki/a.md")
    assert (repo.root / "wiki" / "a.md").read_text() == "alpha\n"
    git.unstage(":(top,literal)wiki/new.md")
    assert git.staged_blob("wiki/new.md") is None and (repo.root / "wiki" / "new.md").exists()
    assert "+new" not in git.text_diff(head, head, "wiki")


def test_repository_paths(git: Git, repo: Repo) -> None:
    assert git.git_path("hooks") == repo.root / ".git" / "hooks"
    assert git.git_path("index").is_absolute() and not git.is_shallow()
    assert os.path.samefile(git.common_dir(), repo.root / ".git")
