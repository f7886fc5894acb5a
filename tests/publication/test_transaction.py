"""Writes as transactions (issue 10): the everyday flows on a fresh repository, refusals that
change nothing, generated content from the committed tree, the per-repository lock, and two
worktrees approving one candidate at once. Real repositories, the real CLI in subprocesses."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

from ..conftest import REPO_ROOT, Repo
from ..review.test_review import stage

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


@pytest.fixture
def fresh(repo: Repo) -> Repo:
    """Committed concept pages only: no index.md, no log.md (a new user's repository)."""
    shutil.copytree(
        REPO_ROOT / "examples" / "demo" / "wiki" / "concepts", repo.root / "wiki" / "concepts"
    )
    repo.commit("pages")
    return repo


def run(
    repo: Repo, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(*args, env={**FAST, **(env or {})})


def head(repo: Repo) -> str:
    return repo.git("rev-parse", "HEAD").strip()


def snapshot(repo: Repo) -> dict[str, object]:
    """Branches, index, status and every work-tree byte: what a refusal must leave alone."""
    files = {}
    for path in sorted(repo.root.rglob("*")):
        rel = path.relative_to(repo.root).as_posix()
        if rel == ".git" or rel.startswith(".git/") or rel.startswith(".llmwiki/") or path.is_dir():
            continue
        files[rel] = path.read_bytes()
    return {
        "refs": repo.git("for-each-ref", "--format=%(refname) %(objectname)"),
        "index": repo.git("ls-files", "-s"),
        "status": repo.git("status", "--porcelain", "--untracked-files=all"),
        "files": files,
    }


def clean(repo: Repo) -> None:
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert not list(repo.root.rglob(".llmwiki-*.tmp"))
    assert not (repo.root / ".llmwiki" / "transaction.json").exists()


# --------------------------------------------------------------------------- the flows of (5)


def test_index_then_save_review_then_approve_on_a_fresh_repository(fresh: Repo) -> None:
    assert run(fresh, "index").returncode == 0
    assert fresh.git("status", "--porcelain") == "?? wiki/index.md\n"  # generated, uncommitted
    cid = stage(fresh, "what is a blob?")
    shown = run(fresh, "review", "show", cid)
    assert "Approval would pass" in shown.stdout
    before = head(fresh)
    proc = run(fresh, "review", "approve", cid)
    assert proc.returncode == 0, proc.stderr
    assert fresh.git("rev-parse", "HEAD~2").strip() == before
    assert fresh.git("show", "--name-only", "--format=", "HEAD~1").split() == [
        "wiki/queries/what-is-a-blob.md"
    ]
    assert fresh.git("show", "--name-only", "--format=", "HEAD").split() == [
        "log.md",
        "wiki/index.md",
    ]
    assert "[[what-is-a-blob|what is a blob?]]" in fresh.git("show", "HEAD:wiki/index.md")
    assert f"Candidate: {cid}" in fresh.git("show", "HEAD:log.md")
    assert fresh.git("branch", "--list", "llmwiki/review/*") == ""
    clean(fresh)
    assert run(fresh, "check", "--rev", "HEAD").returncode == 0


def test_index_then_save_then_save_again_on_a_fresh_repository(fresh: Repo) -> None:
    assert run(fresh, "index").returncode == 0
    first = run(fresh, "query", "what is a blob?", "--save")
    assert first.returncode == 0, first.stderr
    clean(fresh)
    assert fresh.git("show", "--name-only", "--format=", "HEAD").split() == [
        "log.md",
        "wiki/index.md",
        "wiki/queries/what-is-a-blob.md",
    ]
    second = run(fresh, "query", "what is a tree?", "--save")
    assert second.returncode == 0, second.stderr
    clean(fresh)
    assert int(fresh.git("rev-list", "--count", "HEAD")) == 3
    log = fresh.git("show", "HEAD:log.md")
    assert log.count("## [") == 2 and "what-is-a-tree" in log


def test_new_files_get_the_users_umask(fresh: Repo) -> None:
    assert run(fresh, "index").returncode == 0
    assert stat.S_IMODE((fresh.root / "wiki/index.md").stat().st_mode) == 0o644
    assert run(fresh, "query", "what is a blob?", "--save").returncode == 0
    for rel in ("wiki/index.md", "log.md", "wiki/queries/what-is-a-blob.md"):
        assert stat.S_IMODE((fresh.root / rel).stat().st_mode) == 0o644, rel


def test_an_untracked_draft_never_leaks_into_the_committed_index(fresh: Repo) -> None:
    fresh.write(
        "wiki/concepts/draft.md", "---\ntitle: Secret draft\nsummary: Not ready.\n---\nDraft.\n"
    )
    assert run(fresh, "query", "what is a blob?", "--save").returncode == 0
    committed = fresh.git("show", "HEAD:wiki/index.md")
    assert "Secret draft" not in committed and "draft" not in committed
    assert run(fresh, "check", "--rev", "HEAD").returncode == 0
    assert (
        fresh.git("status", "--porcelain", "--untracked-files=all") == "?? wiki/concepts/draft.md\n"
    )


def test_a_human_edit_to_the_target_refuses_with_a_hint_that_works_for_untracked_files(
    fresh: Repo,
) -> None:
    cid = stage(fresh, "what is a blob?")
    fresh.write("wiki/queries/what-is-a-blob.md", "my own notes\n")  # untracked, in the way
    before = snapshot(fresh)
    proc = run(fresh, "review", "approve", cid)
    assert proc.returncode == 1
    assert "uncommitted changes to wiki/queries/what-is-a-blob.md" in proc.stderr
    assert snapshot(fresh) == before
    hint = re.search(r"\((mv [^)]*)\)", proc.stderr)
    assert hint, proc.stderr
    subprocess.run(hint.group(1), shell=True, cwd=fresh.root, check=True)
    assert run(fresh, "review", "approve", cid).returncode == 0
    assert (fresh.root / "wiki/queries/what-is-a-blob.md.mine").read_text() == "my own notes\n"


# --------------------------------------------------------------------------- refusals of (7)


def _refusal_cases() -> list[str]:
    return [
        "unstaged-target",
        "staged-target",
        "edited-candidate",
        "target-appeared",
        "broken-citation",
    ]


@pytest.mark.parametrize("case", _refusal_cases())
def test_every_refusal_of_approve_leaves_main_candidate_and_work_tree_byte_identical(
    fresh: Repo, case: str
) -> None:
    assert run(fresh, "index").returncode == 0  # an uncommitted generated index.md, as users have
    cid = stage(fresh, "what is a blob?")
    target = "wiki/queries/what-is-a-blob.md"
    if case in ("unstaged-target", "staged-target"):
        fresh.write(target, "mine\n")
        fresh.git("add", "-N" if case == "unstaged-target" else "-A", target)
    elif case == "edited-candidate":
        fresh.git("switch", "-q", f"llmwiki/review/{cid}")
        fresh.write(target, fresh.root.joinpath(target).read_text() + "\nedited by hand\n")
        fresh.git("commit", "-q", "--amend", "-a", "--no-edit")
        fresh.git("switch", "-q", "main")
    elif case == "target-appeared":
        fresh.write(target, "---\ntitle: other\n---\nSomeone else's page.\n")
        fresh.git("add", target)
        fresh.git("commit", "-q", "-m", "someone else")
    elif case == "broken-citation":
        fresh.git("rm", "-q", "wiki/concepts/blobs.md")
        fresh.git("commit", "-q", "-m", "drop the cited page")
    before = snapshot(fresh)
    proc = run(fresh, "review", "approve", cid)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(fresh) == before
    assert not (fresh.root / ".llmwiki" / "transaction.json").exists()


# --------------------------------------------------------------------------- lock and worktrees


def test_the_lock_lives_in_the_common_git_dir(fresh: Repo) -> None:
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom llmwiki_git.gitstore.git import Git\n"
        "from llmwiki_git.gitstore.lock import repository_lock\n"
        "with repository_lock(Git(Path(sys.argv[1])), Path(sys.argv[1]) / '.llmwiki'):\n"
        "    print('held', flush=True)\n    time.sleep(30)\n"
    )
    other = fresh.root.parent / "wt2"
    fresh.git("worktree", "add", "-q", str(other), "-b", "other")
    with subprocess.Popen(
        [sys.executable, "-c", code, str(fresh.root)], stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert (fresh.root / ".git" / "llmwiki" / "lock").is_file()
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys\nfrom pathlib import Path\nfrom llmwiki_git.gitstore.git import Git\n"
                "from llmwiki_git.gitstore.lock import repository_lock\n"
                "repository_lock(Git(Path(sys.argv[1])), Path(sys.argv[1]) / '.llmwiki', timeout=0.3).acquire()\n",
                str(other),
            ],
            capture_output=True,
            text=True,
        )
        holder.kill()
    assert proc.returncode != 0 and "is held by pid" in proc.stderr


def test_two_worktrees_approving_one_candidate_at_once_exactly_one_wins(fresh: Repo) -> None:
    other = fresh.root.parent / "wt2"
    fresh.git("worktree", "add", "-q", str(other), "-b", "other")
    for round_ in range(2):
        cid = stage(fresh, f"what is a blob, take {round_}?")
        main_before, other_before = head(fresh), fresh.git("rev-parse", "other").strip()
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "llmwiki_git", "review", "approve", cid],
                cwd=where,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, **FAST},
            )
            for where in (fresh.root, other)
        ]
        results = [p.communicate(timeout=120) for p in procs]
        codes = [p.returncode for p in procs]
        assert sorted(codes) == [0, 1], results
        moved = [
            head(fresh) != main_before,
            fresh.git("rev-parse", "other").strip() != other_before,
        ]
        assert moved == [c == 0 for c in codes], (codes, moved)
        loser = results[codes.index(1)][1]
        # Either the winner had already cleared the candidate, or (in round 1, approving onto
        # `other`, which lacks round 0's page) the loser refused it on its own branch's tree.
        assert f"no review candidate {cid!r}" in loser or "broken" in loser, loser
        clean(fresh)
        assert (
            subprocess.run(
                ["git", "status", "--porcelain"], cwd=other, capture_output=True, text=True
            ).stdout
            == ""
        )


def test_approve_rerun_on_a_candidate_already_on_the_branch_finishes_it(fresh: Repo) -> None:
    cid = stage(fresh, "what is a blob?")
    fresh.git(
        "merge", "-q", "--ff-only", f"llmwiki/review/{cid}"
    )  # landed by hand, branch still open
    proc = run(fresh, "review", "approve", cid)
    assert proc.returncode == 0, proc.stderr
    assert "already on the branch" in proc.stdout
    assert fresh.git("branch", "--list", "llmwiki/review/*") == ""
    clean(fresh)


def test_stray_temp_files_of_a_killed_writer_are_swept(fresh: Repo) -> None:
    stray = fresh.root / "wiki" / ".llmwiki-0123456789ab.tmp"
    stray.write_bytes(b"half")
    assert run(fresh, "query", "what is a blob?", "--save").returncode == 0
    assert not stray.exists()
    clean(fresh)


def test_a_save_onto_an_edited_page_is_refused_before_the_model_is_asked(fresh: Repo) -> None:
    from ..answer.test_query_cli import openai_env, sse_answer
    from ..servers import serve

    fresh.write("wiki/queries/what-is-a-blob.md", "my draft answer\n")
    before = snapshot(fresh)
    with serve(sse_answer("Blobs [[blobs]].")) as (url, seen):
        proc = fresh.llmwiki("query", "what is a blob?", "--save", env=openai_env(url))
    assert (
        proc.returncode == 1
        and "uncommitted changes to wiki/queries/what-is-a-blob.md" in proc.stderr
    )
    assert seen.requests == []
    assert snapshot(fresh) == before


def test_recovery_never_blocks_the_hook_while_git_holds_the_index(fresh: Repo) -> None:
    killed = run(fresh, "query", "what is a blob?", "--save", env={"LLMWIKI_TEST_KILL_AT": "ref"})
    assert killed.returncode == -9
    moved = head(fresh)
    (fresh.root / ".git" / "index.lock").write_bytes(
        b""
    )  # a `git commit` running its pre-commit hook
    during = run(fresh, "check")
    assert (
        during.returncode == 0 and "could not finish an interrupted write yet" in during.stderr
    ), during.stderr
    (fresh.root / ".git" / "index.lock").unlink()
    after = run(fresh, "check")
    assert (
        after.returncode == 0
        and "completed an interrupted save of wiki/queries/what-is-a-blob.md" in after.stderr
    )
    assert head(fresh) == moved
    clean(fresh)


def test_index_sweeps_what_a_killed_index_write_left(fresh: Repo) -> None:
    killed = run(
        fresh, "index", env={"LLMWIKI_TEST_KILL_AT": "file"}
    )  # inside the write of wiki/index.md
    assert killed.returncode == -9
    assert list((fresh.root / "wiki").glob(".llmwiki-*.tmp"))
    assert run(fresh, "index").returncode == 0
    assert not list(fresh.root.rglob(".llmwiki-*.tmp"))
    assert fresh.git("status", "--porcelain", "--untracked-files=all") == "?? wiki/index.md\n"
