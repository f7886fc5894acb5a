"""Review candidates as git branches: staging, pending, approval, refusals, races.

Real git repositories, the real CLI in subprocesses, and a real OpenAI-compatible server
on 127.0.0.1 for scripted answers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from llmwiki_git.errors import LlmwikiError
from llmwiki_git.gitstore.commits import build_commit, move_branch
from llmwiki_git.gitstore.git import Git

from ..answer.test_query_cli import openai_env, sse_answer
from ..conftest import Repo, copy_demo
from ..servers import serve

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
TRAILER_KEYS = [
    "Llmwiki-Candidate",
    "Llmwiki-Kind",
    "Llmwiki-Target",
    "Llmwiki-Precondition",
    "Llmwiki-Body-Digest",
    "Llmwiki-Base",
]


@pytest.fixture
def demo(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.commit("demo wiki")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    return repo


def stage(repo: Repo, question: str, answer: str | None = None) -> str:
    if answer is None:
        proc = repo.llmwiki("query", question, "--save", "--review", env=FAST)
    else:
        with serve(sse_answer(answer)) as (url, _):
            proc = repo.llmwiki("query", question, "--save", "--review", env=openai_env(url))
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"Staged review candidate (\S+)", proc.stderr)
    assert match, proc.stderr
    return match.group(1)


def head(repo: Repo) -> str:
    return repo.git("rev-parse", "HEAD").strip()


def trailers(repo: Repo, rev: str) -> list[tuple[str, str]]:
    out = repo.git("log", "-1", "--format=%(trailers:only,unfold)", rev)
    return [tuple(line.split(": ", 1)) for line in out.splitlines() if line]  # type: ignore[misc]


def approve(repo: Repo, candidate: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki("review", "approve", candidate, env=FAST)


def test_stage_builds_one_commit_with_plumbing_and_touches_nothing_of_the_user(demo: Repo) -> None:
    demo.write("notes.txt", "staged\n")
    demo.git("add", "notes.txt")
    demo.write(
        "wiki/concepts/trees.md", (demo.root / "wiki/concepts/trees.md").read_text() + "unstaged\n"
    )
    before, status = head(demo), demo.git("status", "--porcelain")
    cid = stage(demo, "What is a tree object?", "A tree lists names [[trees]].")
    assert re.fullmatch(r"what-is-a-tree-object-[0-9a-f]{8}", cid)
    assert head(demo) == before and demo.git("status", "--porcelain") == status
    branch = f"llmwiki/review/{cid}"
    assert demo.git("rev-parse", f"{branch}~1").strip() == before
    assert demo.git("diff-tree", "-r", "--name-only", "--no-commit-id", before, branch).split() == [
        "wiki/queries/what-is-a-tree-object.md"
    ]
    found = trailers(demo, branch)
    assert [k for k, _ in found] == TRAILER_KEYS
    values = dict(found)
    assert values["Llmwiki-Candidate"] == cid and values["Llmwiki-Kind"] == "validated-answer/1"
    assert values["Llmwiki-Precondition"] == "absent" and values["Llmwiki-Base"] == before
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", values["Llmwiki-Body-Digest"])
    sibling = stage(demo, "What is a tree object?", "Trees are directories [[trees]].")
    assert sibling != cid and demo.git("rev-parse", f"llmwiki/review/{sibling}~1").strip() == before


def test_stage_policy_pending_allowed_broken_refused(demo: Repo) -> None:
    first = stage(demo, "What is a tree object?", "Trees [[trees]].")
    cid = stage(
        demo, "How do trees relate to blobs?", "See [[what-is-a-tree-object]] and [[blobs]]."
    )
    report = demo.git("show", f"llmwiki/review/{cid}:wiki/queries/how-do-trees-relate-to-blobs.md")
    assert "[[what-is-a-tree-object]]" in report
    with serve(sse_answer("See [[nowhere]].")) as (url, _):
        proc = demo.llmwiki(
            "query", "Where are trees stored?", "--save", "--review", env=openai_env(url)
        )
    assert (
        proc.returncode == 1 and "staging refused: broken citation targets: nowhere" in proc.stderr
    )
    assert demo.git("for-each-ref", "refs/heads/llmwiki/review/").count("\n") == 2
    # pending now shows in query, links and check
    proc = demo.llmwiki("links", input="See [[what-is-a-tree-object]].\n")
    assert proc.stdout.splitlines()[:2] == [
        "Answer citations: 0 resolved, 1 pending, 0 broken",
        "pending: what-is-a-tree-object",
    ]
    proc = demo.llmwiki("links", "--json", input="See [[what-is-a-tree-object]].\n")
    assert json.loads(proc.stdout)["citations"][0]["candidateIds"] == [first]
    demo.write("wiki/concepts/forward.md", "# Forward\nSoon: [[what-is-a-tree-object]]\n")
    check = demo.llmwiki("check", "--json")
    assert check.returncode == 0
    assert [p["code"] for p in json.loads(check.stdout)["problems"]] == ["pending-link"]
    demo.git("pack-refs", "--all")  # candidates only in packed-refs: the check must still see them
    assert not (demo.root / ".git" / "refs" / "heads" / "llmwiki" / "review").exists()
    assert demo.llmwiki("check", "--json").stdout == check.stdout
    with serve(sse_answer("See [[what-is-a-tree-object]].")) as (url, _):
        direct = demo.llmwiki("query", "How do trees work?", "--save", env=openai_env(url))
    assert (
        direct.returncode == 1
        and "pending citation targets: what-is-a-tree-object" in direct.stderr
    )


def test_list_show_and_fast_forward_approval(demo: Repo) -> None:
    cid = stage(
        demo,
        "What is a tree object?",
        "A tree lists names [[trees]].\n\n---\n\nA rule above must not hide trailers.",
    )
    rows = json.loads(demo.llmwiki_process("review", "list", "--json").stdout)["candidates"]
    assert [r["id"] for r in rows] == [cid] and rows[0][
        "citationStatus"
    ] == "1 resolved, 0 pending, 0 broken"
    view = json.loads(demo.llmwiki_process("review", "show", cid, "--json").stdout)
    assert (
        view["verdict"]["ok"] is True and view["target"] == "wiki/queries/what-is-a-tree-object.md"
    )
    assert "+A tree lists names [[trees]]." in view["diff"]
    candidate_commit = demo.git("rev-parse", f"llmwiki/review/{cid}").strip()
    before = head(demo)
    proc = approve(demo, cid)
    assert proc.returncode == 0, proc.stderr
    assert "fast-forward" in proc.stdout
    assert (
        demo.git("rev-parse", "HEAD~1").strip() == candidate_commit
    )  # the candidate commit itself
    assert demo.git("rev-parse", "HEAD~2").strip() == before
    assert sorted(demo.git("show", "--name-only", "--format=", "HEAD").split()) == [
        "log.md",
        "wiki/index.md",
    ]
    assert demo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""
    assert (demo.root / "wiki/queries/what-is-a-tree-object.md").is_file()
    assert demo.git("status", "--porcelain") == ""
    log = demo.git("log", "--format=%(trailers:key=Llmwiki-Candidate,valueonly)", "-3")
    assert cid in log


def test_replay_on_a_moved_tip_keeps_provenance(demo: Repo) -> None:
    cid = stage(demo, "What is a tree object?", "Trees [[trees]].")
    original = demo.git("rev-parse", f"llmwiki/review/{cid}").strip()
    demo.write("wiki/concepts/extra.md", "# Extra\n")
    moved = demo.commit("unrelated work")
    assert approve(demo, cid).returncode == 0
    replay = demo.git("rev-parse", "HEAD~1").strip()
    assert replay != original and demo.git("rev-parse", "HEAD~2").strip() == moved
    found = dict(trailers(demo, replay))
    assert found["Llmwiki-Replayed-From"] == original and found["Llmwiki-Candidate"] == cid
    assert [k for k, _ in trailers(demo, replay)] == TRAILER_KEYS + ["Llmwiki-Replayed-From"]


def refuses(demo: Repo, cid: str, code_text: str) -> None:
    branch_before = demo.git("rev-parse", f"llmwiki/review/{cid}").strip()
    before, status = head(demo), demo.git("status", "--porcelain")
    proc = approve(demo, cid)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert code_text in proc.stderr
    assert head(demo) == before and demo.git("status", "--porcelain") == status
    assert demo.git("rev-parse", f"llmwiki/review/{cid}").strip() == branch_before


def _rewrite_branch(
    demo: Repo, cid: str, message_edit=None, files=None, extra_parent_commit=False
) -> None:
    git = Git(demo.root)
    branch = f"refs/heads/llmwiki/review/{cid}"
    commit = demo.git("rev-parse", branch).strip()
    parent = demo.git("rev-parse", f"{commit}~1").strip()
    raw = demo.git("cat-file", "commit", commit)
    message = raw.split("\n\n", 1)[1]
    if message_edit:
        message = message_edit(message)
    target = dict(trailers(demo, commit))["Llmwiki-Target"]
    content = demo.git("show", f"{commit}:{target}").encode()
    changes = {target: content, **(files or {})}
    base = parent
    if extra_parent_commit:
        base = build_commit(git, parent, {"wiki/concepts/sneaky.md": b"# Sneaky\n"}, "sneak\n")
    new = build_commit(git, base, changes, message)
    demo.git("update-ref", branch, new)


def test_hostile_branches_are_refused(demo: Repo) -> None:
    two = stage(demo, "What is a tree object?", "Trees [[trees]].")
    _rewrite_branch(demo, two, extra_parent_commit=True)
    refuses(demo, two, "must be exactly one commit")

    other = stage(demo, "What is a blob?", "Blobs [[blobs]].")
    _rewrite_branch(demo, other, files={"wiki/concepts/blobs.md": b"# Hijacked\n"})
    refuses(demo, other, "must change exactly")

    forged = stage(demo, "What is a commit?", "Commits [[commits]].")
    _rewrite_branch(
        demo, forged, message_edit=lambda m: re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, m)
    )
    refuses(demo, forged, "candidate-edited")

    edited = stage(demo, "What is a trailer?", "Trailers [[commit-trailers]].")
    target = "wiki/queries/what-is-a-trailer.md"
    body = demo.git("show", f"llmwiki/review/{edited}:{target}").replace(
        "Trailers", "Edited after staging"
    )
    _rewrite_branch(demo, edited, files={target: body.encode()})
    refuses(demo, edited, "candidate-edited")

    dupe = stage(demo, "What is CAS?", "CAS [[compare-and-swap]].")
    _rewrite_branch(
        demo, dupe, message_edit=lambda m: m + "Llmwiki-Target: wiki/concepts/blobs.md\n"
    )
    refuses(demo, dupe, "malformed")


def test_forged_precondition_and_changed_target(demo: Repo) -> None:
    first = stage(demo, "What is a tree object?", "Trees [[trees]].")
    sibling = stage(demo, "What is a tree object?", "Trees again [[trees]].")
    assert approve(demo, first).returncode == 0
    refuses(demo, sibling, "now exists since")  # target appeared since staging

    replace = stage(demo, "What is a tree object?", "Replacement [[trees]].")
    blob = dict(trailers(demo, f"llmwiki/review/{replace}"))["Llmwiki-Precondition"]
    assert blob.startswith("blob ")
    _rewrite_branch(demo, replace, message_edit=lambda m: m.replace(blob, "absent"))
    refuses(demo, replace, "claims precondition 'absent'")

    changed = stage(demo, "What is a tree object?", "Another [[trees]].")
    demo.write(
        "wiki/queries/what-is-a-tree-object.md",
        (demo.root / "wiki/queries/what-is-a-tree-object.md").read_text() + "\nhand edit\n",
    )
    demo.commit("edit the page")
    refuses(demo, changed, "changed since")

    vanished = stage(demo, "What is a tree object?", "Gone [[trees]].")
    demo.git("rm", "-q", "wiki/queries/what-is-a-tree-object.md")
    demo.commit("delete the page")
    refuses(demo, vanished, "was deleted since")


def test_pending_links_block_approval_until_published(demo: Repo) -> None:
    base_page = stage(demo, "What is a tree object?", "Trees [[trees]].")
    follower = stage(demo, "How do trees relate?", "See [[what-is-a-tree-object]].")
    refuses(demo, follower, "pending citation targets: what-is-a-tree-object")
    assert approve(demo, base_page).returncode == 0
    assert approve(demo, follower).returncode == 0


def test_reject_keeps_the_bytes(demo: Repo) -> None:
    cid = stage(demo, "What is a tree object?", "Trees [[trees]].")
    commit = demo.git("rev-parse", f"llmwiki/review/{cid}").strip()
    proc = demo.llmwiki_process("review", "reject", cid)
    assert proc.returncode == 0 and f"refs/llmwiki/rejected/{cid}" in proc.stdout
    assert demo.git("rev-parse", f"refs/llmwiki/rejected/{cid}").strip() == commit
    assert demo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""
    assert approve(demo, cid).returncode == 1


@pytest.mark.parametrize(
    "bad",
    ["../../etc", "a b-0123abcd", "x..y-0123abcd", "-rf-0123abcd", "nohex", "x.lock-0123abcd~"],
)
def test_invalid_ids_are_usage_errors(demo: Repo, bad: str) -> None:
    for command in ("approve", "show", "reject"):
        proc = demo.llmwiki("review", command, bad)
        assert proc.returncode == 2, (command, bad, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_compare_and_swap_loses_cleanly(demo: Repo) -> None:
    git = Git(demo.root)
    old = head(demo)
    new = build_commit(git, old, {"wiki/concepts/x.md": b"# X\n"}, "x\n")
    demo.write("wiki/concepts/y.md", "# Y\n")
    moved = demo.commit("someone else moved main")
    with pytest.raises(LlmwikiError, match="moved"):
        move_branch(git, demo.root, "refs/heads/main", old, new, "x\n")  # compare-and-swap
    assert head(demo) == moved and demo.git("status", "--porcelain") == ""
    assert not (demo.root / ".llmwiki" / "transaction.json").exists()


def test_two_sibling_approvals_at_once_exactly_one_wins(demo: Repo) -> None:
    a = stage(demo, "What is a tree object?", "Trees [[trees]].")
    b = stage(demo, "What is a tree object?", "Trees, again [[trees]].")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "llmwiki_git", "review", "approve", c],
            cwd=demo.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **FAST},
        )
        for c in (a, b)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 1], outs
    loser_err = next(err for (out, err), p in zip(outs, procs) if p.returncode == 1)
    assert "now exists since" in loser_err
    assert demo.git("fsck", "--no-progress").strip() == ""
    assert demo.git("status", "--porcelain") == ""


def _break_tree(repo: Repo, folder: str) -> None:
    """Delete the loose object of ``folder``'s tree at HEAD: listing the tree then fails, so
    citation validation is unavailable (the work tree and the answer are unaffected)."""
    tree = repo.git("rev-parse", f"HEAD:{folder}").strip()
    (repo.root / ".git" / "objects" / tree[:2] / tree[2:]).unlink()


def test_validation_unavailable_refuses_staging_and_approval(demo: Repo) -> None:
    cid = stage(demo, "What is a tree object?", "Trees [[trees]].")
    _break_tree(demo, "wiki/concepts")
    with serve(sse_answer("Blobs [[blobs]].")) as (url, _):
        proc = demo.llmwiki("query", "What is a blob?", "--save", "--review", env=openai_env(url))
    assert proc.returncode == 1 and proc.stdout.startswith("Blobs [[blobs]].")  # the answer is kept
    assert "citation validation unavailable" in proc.stderr
    assert demo.git(
        "for-each-ref", "--format=%(refname)", "refs/heads/llmwiki/review/"
    ).split() == [f"refs/heads/llmwiki/review/{cid}"]
    proc = approve(demo, cid)
    assert (
        proc.returncode == 1
        and "citation validation unavailable" in proc.stderr
        and "kept" in proc.stderr
    )
    assert demo.git("rev-parse", "--verify", "--quiet", f"llmwiki/review/{cid}").strip()


def test_query_without_save_reports_pending(demo: Repo) -> None:
    cid = stage(demo, "What is a tree object?", "Trees [[trees]].")
    with serve(sse_answer("See [[what-is-a-tree-object]].")) as (url, _):
        proc = demo.llmwiki("query", "How do trees work?", env=openai_env(url))
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[-2:] == [
        "Answer citations: 0 resolved, 1 pending, 0 broken",
        "pending: what-is-a-tree-object",
    ]
    with serve(sse_answer("See [[what-is-a-tree-object]].")) as (url, _):
        data = json.loads(
            demo.llmwiki("query", "How do trees work?", "--json", env=openai_env(url)).stdout
        )
    assert data["answerCitations"]["citations"] == [
        {"target": "what-is-a-tree-object", "status": "pending", "candidateIds": [cid]}
    ]
