"""commit_paths on real repositories: one commit, only the given paths, the user's work kept,
compare-and-swap, and real concurrent and killed writers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from llmwiki_git.errors import DirtyPaths, LlmwikiError, RefChanged, UnsafePath
from llmwiki_git.gitstore.commits import build_commit, commit_paths
from llmwiki_git.gitstore.git import Git
from llmwiki_git.gitstore.lock import ProjectLock

from ..conftest import Repo


@pytest.fixture
def base(repo: Repo) -> Repo:
    (repo.root / ".git" / "info" / "exclude").write_text(".llmwiki/\n")
    repo.write("wiki/a.md", "# A\n")
    repo.write("wiki/b.md", "# B\n")
    repo.write("log.md", "# Log\n")
    repo.write("other.txt", "other\n")
    repo.commit("initial")
    return repo


def _state(repo: Repo) -> dict[str, object]:
    """Everything commit_paths must leave alone when it refuses: HEAD, index, work tree."""
    files = {}
    for path in sorted(repo.root.rglob("*")):
        rel = path.relative_to(repo.root).as_posix()
        if rel.startswith(".git/") or rel == ".git" or path.is_dir():
            continue
        files[rel] = path.read_bytes()
    return {
        "head": repo.git("rev-parse", "-q", "--verify", "HEAD", check=False).strip(),
        "index": repo.git("ls-files", "-s"),
        "status": repo.git("status", "--porcelain", "--untracked-files=all"),
        "files": files,
        "temp": sorted(
            p.name for p in (repo.root / ".git").iterdir() if p.name.startswith("llmwiki-")
        ),
    }


def _changed(repo: Repo, rev: str = "HEAD") -> list[str]:
    return repo.git("show", "--name-status", "--format=", rev).split("\n")[:-1]


def test_commits_exactly_the_given_paths(base: Repo) -> None:
    git = Git(base.root)
    head = base.git("rev-parse", "HEAD").strip()
    new = commit_paths(
        git,
        {"wiki/a.md": b"# A v2\n", "wiki/queries/q.md": b"# Q\n"},
        "llmwiki: save query\n\nQuestion: q\n",
        expected_head=head,
    )
    assert new == base.git("rev-parse", "HEAD").strip() != head
    assert base.git("rev-parse", "HEAD^").strip() == head
    stat = base.git("show", "--stat", "--format=", "HEAD")
    assert "wiki/a.md" in stat and "wiki/queries/q.md" in stat and "2 files changed" in stat
    assert _changed(base) == ["M\twiki/a.md", "A\twiki/queries/q.md"]
    assert base.git("log", "-1", "--format=%B").strip() == "llmwiki: save query\n\nQuestion: q"
    assert base.git("log", "-1", "--format=%an <%ae>") == "Test User <test@example.com>\n"
    assert base.git("symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert (
        base.git("reflog", "-1", "--format=%gs", "refs/heads/main").strip() == "llmwiki: save query"
    )
    assert (base.root / "wiki/a.md").read_bytes() == b"# A v2\n"
    assert (base.root / "wiki/queries/q.md").read_bytes() == b"# Q\n"
    assert base.git("status", "--porcelain", "--untracked-files=all") == ""
    assert (
        base.git("diff-files", "--name-only") == ""
    )  # index stat info refreshed, not just content-equal
    assert not [p for p in (base.root / ".git").iterdir() if p.name.startswith("llmwiki-")]


def test_users_staged_and_unstaged_work_is_kept(base: Repo) -> None:
    base.write("other.txt", "other, staged edit\n")
    base.write("new.txt", "new staged file\n")
    base.git("add", "other.txt", "new.txt")
    base.write("other.txt", "other, staged edit\nplus an unstaged line\n")
    base.write("wiki/b.md", "# B with unstaged edit\n")
    base.write("untracked.txt", "scratch\n")
    before = _state(base)
    cached_before = base.git("diff", "--cached")
    unstaged_before = base.git("diff")

    commit_paths(Git(base.root), {"wiki/a.md": b"# A v2\n"}, "save", expected_head=None)

    assert _changed(base) == ["M\twiki/a.md"]
    assert base.git("diff", "--cached") == cached_before  # still staged, still uncommitted
    assert base.git("diff") == unstaged_before
    after = _state(base)
    assert after["status"] == before["status"]
    files = dict(before["files"])  # type: ignore[call-overload]
    files["wiki/a.md"] = b"# A v2\n"
    assert after["files"] == files
    assert "new.txt" not in base.git("ls-tree", "-r", "--name-only", "HEAD").split()


@pytest.mark.parametrize(
    "kind",
    [
        "unstaged",
        "staged",
        "staged-only",
        "deleted",
        "untracked",
        "ignored",
        "untracked-below",
        "staged-new-file",
    ],
)
def test_refuses_when_a_target_has_uncommitted_edits(base: Repo, kind: str) -> None:
    target = "wiki/a.md"
    if kind == "unstaged":
        base.write(target, "# A edited\n")
    elif kind == "staged":
        base.write(target, "# A edited\n")
        base.git("add", target)
    elif kind == "staged-only":  # staged edit, work tree back at HEAD's bytes
        base.write(target, "# A edited\n")
        base.git("add", target)
        base.write(target, "# A\n")
    elif kind == "deleted":
        (base.root / target).unlink()
    elif kind == "untracked":
        target = "wiki/queries/new.md"
        base.write(target, "mine\n")
    elif kind == "ignored":
        target = "wiki/queries/new.md"
        base.write(".gitignore", "wiki/queries/\n")
        base.commit("ignore")
        base.write(target, "mine, ignored\n")
    elif kind == "untracked-below":  # a folder of the user's files where the page would go
        target = "wiki/queries/new.md"
        base.write("wiki/queries/new.md/notes.txt", "mine\n")
    elif kind == "staged-new-file":  # a staged new file at the target
        target = "wiki/queries/new.md"
        base.write(target, "staged new\n")
        base.git("add", target)
    before = _state(base)
    with pytest.raises((DirtyPaths, UnsafePath)) as info:
        commit_paths(
            Git(base.root),
            {target: b"llmwiki content\n", "log.md": b"# Log\nentry\n"},
            "save",
            expected_head=None,
        )
    if kind != "untracked-below":
        assert isinstance(info.value, DirtyPaths)
        assert info.value.paths == [target]
        assert target in str(info.value) and "commit or stash" in str(info.value)
    assert _state(base) == before


def test_lists_every_dirty_target(base: Repo) -> None:
    base.write("wiki/a.md", "x\n")
    base.write("log.md", "y\n")
    with pytest.raises(DirtyPaths) as info:
        commit_paths(
            Git(base.root),
            {"wiki/a.md": b"1", "wiki/b.md": b"2", "log.md": b"3"},
            "m",
            expected_head=None,
        )
    assert info.value.paths == ["log.md", "wiki/a.md"]


def test_stale_expected_head_changes_nothing(base: Repo) -> None:
    old = base.git("rev-parse", "HEAD").strip()
    base.write("other.txt", "user commit\n")
    base.commit("user commit")
    base.write("wiki/b.md", "# B unstaged\n")
    before = _state(base)
    with pytest.raises(RefChanged) as info:
        commit_paths(Git(base.root), {"wiki/a.md": b"new\n"}, "save", expected_head=old)
    assert info.value.expected == old and info.value.actual == before["head"]
    assert _state(base) == before


class RacingGit(Git):
    """Real git, plus a real user commit slipped in just before our update-ref (the race the
    compare-and-swap exists for)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.raced = ""

    def run(
        self, *args: str, input: bytes | None = None, check: bool = True, detached: bool = False
    ) -> bytes:
        if args and args[0] == "update-ref" and not self.raced:
            # Another writer commits on the branch (same tree, so the user's index and work
            # tree still compare the same way against it).
            racer = subprocess.run(
                ["git", "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "racer"],
                cwd=self.root,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            subprocess.run(
                ["git", "update-ref", "refs/heads/main", racer], cwd=self.root, check=True
            )
            self.raced = racer
        return super().run(*args, input=input, check=check, detached=detached)


def test_lost_race_at_update_ref_leaves_everything_untouched(base: Repo) -> None:
    base.write("other.txt", "staged\n")
    base.git("add", "other.txt")
    base.write("wiki/b.md", "# B unstaged\n")
    git = RacingGit(base.root)
    before = _state(base)
    with pytest.raises(RefChanged) as info:
        commit_paths(git, {"wiki/a.md": b"lost\n", "log.md": None}, "save", expected_head=None)
    assert git.raced and info.value.actual == git.raced
    after = _state(base)
    assert after["head"] == git.raced
    assert base.git("log", "-1", "--format=%s").strip() == "racer"
    assert {k: v for k, v in after.items() if k != "head"} == {
        k: v for k, v in before.items() if k != "head"
    }


def test_first_commit_on_an_unborn_branch(repo: Repo) -> None:
    repo.write("notes.txt", "staged before the first commit\n")
    repo.git("add", "notes.txt")
    new = commit_paths(Git(repo.root), {"wiki/a.md": b"# A\n"}, "first", expected_head=None)
    assert repo.git("rev-list", "--count", "HEAD").strip() == "1"
    assert repo.git("rev-list", "--parents", "-1", "HEAD").split() == [new]  # no parent
    assert repo.git("ls-tree", "-r", "--name-only", "HEAD") == "wiki/a.md\n"
    assert repo.git("status", "--porcelain") == "A  notes.txt\n"


def test_unborn_branch_with_explicit_zero_expectation_and_race(repo: Repo) -> None:
    commit_paths(Git(repo.root), {"a.md": b"a\n"}, "first", expected_head="0" * 40)
    with pytest.raises(RefChanged):
        commit_paths(Git(repo.root), {"b.md": b"b\n"}, "second", expected_head="0" * 40)


def test_deletion(base: Repo) -> None:
    base.write("wiki/sub/only.md", "only\n")
    base.commit("sub")
    commit_paths(
        Git(base.root),
        {"wiki/b.md": None, "wiki/sub/only.md": None, "wiki/a.md": b"A\n"},
        "delete",
        expected_head=None,
    )
    assert _changed(base) == ["M\twiki/a.md", "D\twiki/b.md", "D\twiki/sub/only.md"]
    assert not (base.root / "wiki/b.md").exists()
    assert not (base.root / "wiki/sub").exists()  # emptied folder removed, as git does
    assert base.git("status", "--porcelain", "--untracked-files=all") == ""


def test_deleting_an_absent_path_with_other_changes(base: Repo) -> None:
    commit_paths(
        Git(base.root), {"wiki/never.md": None, "log.md": b"# Log\nx\n"}, "m", expected_head=None
    )
    assert _changed(base) == ["M\tlog.md"]


def test_no_change_makes_no_commit(base: Repo) -> None:
    head = base.git("rev-parse", "HEAD").strip()
    assert commit_paths(Git(base.root), {"wiki/a.md": b"# A\n"}, "same", expected_head=head) == head
    assert base.git("rev-parse", "HEAD").strip() == head


@pytest.mark.parametrize(
    "bad",
    [
        "../x.md",
        "wiki/../../x.md",
        "wiki/../log.md",
        "/etc/passwd",
        ".git/config",
        "wiki/.git/x",
        ".GIT/hooks/pre-commit",
        "a//b.md",
        "./a.md",
        "wiki/",
        "",
        "C:/x.md",
        "wiki\\a.md",
        "a\0b",
    ],
)
def test_unsafe_paths_are_refused(base: Repo, bad: str) -> None:
    before = _state(base)
    with pytest.raises(LlmwikiError):
        commit_paths(
            Git(base.root), {bad: b"evil\n", "wiki/a.md": b"fine\n"}, "m", expected_head=None
        )
    assert _state(base) == before


def test_symlinked_folder_is_never_written_through(base: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (base.root / "link").symlink_to(outside)
    base.commit("add a symlink")
    before = _state(base)
    with pytest.raises(UnsafePath, match="symlink"):
        commit_paths(Git(base.root), {"link/x.md": b"evil\n"}, "m", expected_head=None)
    assert list(outside.iterdir()) == []
    assert _state(base) == before


@pytest.mark.parametrize("target", ["wiki", "log.md/x.md", "link"])
def test_file_folder_clashes_are_refused(base: Repo, target: str) -> None:
    os.symlink("wiki/a.md", base.root / "link")
    base.commit("symlink")
    before = _state(base)
    with pytest.raises(UnsafePath):
        commit_paths(Git(base.root), {target: b"x\n"}, "m", expected_head=None)
    assert _state(base) == before


def test_detached_head_is_refused(base: Repo) -> None:
    base.git("checkout", "-q", "--detach")
    before = _state(base)
    with pytest.raises(LlmwikiError, match="detached"):
        commit_paths(Git(base.root), {"wiki/a.md": b"x\n"}, "m", expected_head=None)
    assert _state(base) == before


def test_executable_bit_is_kept(base: Repo) -> None:
    base.write("tool.sh", "#!/bin/sh\n")
    os.chmod(base.root / "tool.sh", 0o755)
    base.commit("tool")
    commit_paths(Git(base.root), {"tool.sh": b"#!/bin/sh\necho hi\n"}, "m", expected_head=None)
    assert base.git("ls-tree", "HEAD", "tool.sh").split()[0] == "100755"
    assert os.access(base.root / "tool.sh", os.X_OK)
    assert base.git("status", "--porcelain") == ""


def _env_without_identity() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))
    }


def test_identity_falls_back_only_when_git_has_none(base: Repo) -> None:
    base.git("config", "user.useConfigOnly", "true")
    git = Git(base.root, _env_without_identity())
    commit_paths(git, {"wiki/a.md": b"1\n"}, "m", expected_head=None)
    assert (
        base.git("log", "-1", "--format=%an <%ae>|%cn <%ce>").strip()
        == "llmwiki <llmwiki@localhost>|llmwiki <llmwiki@localhost>"
    )
    base.git("config", "user.name", "Ada")
    base.git("config", "user.email", "ada@example.org")
    commit_paths(git, {"wiki/a.md": b"2\n"}, "m", expected_head=None)
    assert base.git("log", "-1", "--format=%an <%ae>").strip() == "Ada <ada@example.org>"
    assert "llmwiki" not in base.git("config", "--list")


def test_build_commit_touches_no_ref_index_or_work_tree(base: Repo) -> None:
    base.write("other.txt", "staged\n")
    base.git("add", "other.txt")
    base.write("wiki/a.md", "unstaged edit of the target\n")  # build_commit does not care
    head = base.git("rev-parse", "HEAD").strip()
    before = _state(base)
    refs = base.git("for-each-ref")
    commit = build_commit(
        Git(base.root),
        head,
        {"wiki/queries/q.md": b"# Q\n", "wiki/b.md": None},
        "candidate\n\nLlmwiki-Candidate: q-0000\n",
        author=("Original Author", "orig@example.org", "1700000000 +0100"),
    )
    assert _state(base) == before and base.git("for-each-ref") == refs
    assert base.git("rev-parse", f"{commit}^").strip() == head
    assert _changed(base, commit) == ["D\twiki/b.md", "A\twiki/queries/q.md"]
    assert (
        base.git("log", "-1", "--format=%an <%ae> %ad|%cn", "--date=raw", commit).strip()
        == "Original Author <orig@example.org> 1700000000 +0100|Test User"
    )
    assert (
        base.git("log", "-1", "--format=%B", commit).strip().endswith("Llmwiki-Candidate: q-0000")
    )
    with pytest.raises(UnsafePath):
        build_commit(Git(base.root), head, {"../x": b""}, "m")


# --------------------------------------------------------------------------- real processes

WRITER = """
import sys
from pathlib import Path
from llmwiki_git.gitstore.commits import commit_paths
from llmwiki_git.gitstore.lock import ProjectLock
from llmwiki_git.gitstore.git import Git
root, path, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
git = Git(root)
with ProjectLock(root / ".llmwiki", timeout=120):
    head = git.rev_parse("HEAD")
    content = (f"writer {n} line\\n" * (2000 + n)).encode()
    commit_paths(git, {path: content}, f"writer {n}", expected_head=head)
"""


def _content(n: int) -> bytes:
    return (f"writer {n} line\n" * (2000 + n)).encode()


def _assert_consistent(repo: Repo) -> None:
    fsck = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling"], cwd=repo.root, capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert "error" not in fsck.stderr and "missing" not in fsck.stdout
    assert repo.git("cat-file", "-t", "HEAD").strip() == "commit"
    leftovers = [
        p
        for p in repo.root.rglob("*")
        if ".llmwiki-" in p.name or p.name.startswith("llmwiki-index-")
    ]
    assert leftovers == []


@pytest.mark.parametrize("same_path", [False, True], ids=["different-paths", "same-path"])
def test_eight_concurrent_writers(base: Repo, same_path: bool) -> None:
    base.write("other.txt", "staged by the user\n")
    base.git("add", "other.txt")
    start = base.git("rev-parse", "HEAD").strip()
    paths = ["wiki/queries/shared.md" if same_path else f"wiki/queries/q{n}.md" for n in range(8)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(base.root), paths[n], str(n)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(8)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors

    commits = base.git("rev-list", "--reverse", f"{start}..HEAD").split()
    assert len(commits) == 8
    assert sorted(base.git("log", "-1", "--format=%s", c).strip() for c in commits) == [
        f"writer {n}" for n in range(8)
    ]
    for commit in commits:  # each commit touches exactly its one path, with complete content
        (changed,) = base.git("show", "--name-only", "--format=", commit).split()
        n = int(base.git("log", "-1", "--format=%s", commit).split()[1])
        assert changed == paths[n]
        blob = subprocess.run(
            ["git", "cat-file", "blob", f"{commit}:{changed}"],
            cwd=base.root,
            capture_output=True,
            check=True,
        ).stdout
        assert blob == _content(n)
    if same_path:
        last = int(base.git("log", "-1", "--format=%s").split()[1])
        assert (base.root / paths[0]).read_bytes() == _content(last)
    else:
        for n in range(8):
            assert (base.root / paths[n]).read_bytes() == _content(n)
    assert base.git("status", "--porcelain", "--untracked-files=all") == "M  other.txt\n"
    assert "other.txt" not in base.git("diff", "--name-only", f"{start}..HEAD")
    _assert_consistent(base)
    assert not (base.root / ".llmwiki" / "lock").exists()


KILLED = """
import sys, time
from pathlib import Path
from llmwiki_git.gitstore import commits as gitwrite
from llmwiki_git.gitstore.lock import ProjectLock
from llmwiki_git.gitstore.git import Git
root = Path(sys.argv[1])
git = Git(root)
with ProjectLock(root / ".llmwiki", timeout=30):
    git_dir = Path(git.text("rev-parse", "--absolute-git-dir"))
    scope = gitwrite.temp_index(git_dir)  # kept referenced: its cleanup must never run
    index = scope.__enter__()
    tmp = gitwrite._with_index(git, index)
    tmp.run("read-tree", "HEAD")
    blob = tmp.run("hash-object", "-w", "--stdin", input=b"half-done\\n").decode().strip()
    tmp.run("update-index", "--add", "--cacheinfo", f"100644,{blob},wiki/a.md")
    tree = tmp.text("write-tree")
    print("ready", flush=True)  # temp index written, before commit-tree / update-ref
    time.sleep(120)
"""


def test_killed_writer_leaves_a_consistent_repo_and_its_lock_is_reclaimed(base: Repo) -> None:
    start = base.git("rev-parse", "HEAD").strip()
    with subprocess.Popen(
        [sys.executable, "-c", KILLED, str(base.root)], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        assert (base.root / ".llmwiki" / "lock").exists()
        assert [p for p in (base.root / ".git").iterdir() if p.name.startswith("llmwiki-index-")]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert base.git("rev-parse", "HEAD").strip() == start
    assert base.git("status", "--porcelain", "--untracked-files=all") == ""

    git = Git(base.root)
    with ProjectLock(base.root / ".llmwiki", timeout=5):  # the dead writer's lock is reclaimed
        new = commit_paths(
            git,
            {"wiki/a.md": b"# A after the crash\n"},
            "after",
            expected_head=git.rev_parse("HEAD"),
        )
    assert base.git("rev-parse", "HEAD^").strip() == start and new != start
    assert (base.root / "wiki/a.md").read_bytes() == b"# A after the crash\n"
    assert base.git("status", "--porcelain", "--untracked-files=all") == ""
    _assert_consistent(base)  # also: the dead writer's temp index folder was swept
