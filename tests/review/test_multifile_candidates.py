"""Multi-file candidates (kind compile/1): one commit adds or replaces several pages, each
listed in the trailers with its own precondition; review list/show present it page by page;
approval is all or nothing through the validated transaction, and links among the run's own
pages resolve within it. Both layouts."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest

from llmwiki_git.errors import UsageError
from llmwiki_git.publication.trailers import (
    COMPILE_KIND,
    FileTrailer,
    Recorded,
    Trailers,
    parse,
    with_files,
)
from llmwiki_git.review.stagefiles import FileWrite, StagedFiles, acceptance_problem, stage_files
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, layout_prefix, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
SOURCE_TEXT = b"Notes the run was written from.\n"
#: the blob id git gives SOURCE_TEXT: approval checks that each Llmwiki-Source names a file
#: of sources/ at the base with exactly the blob recorded
SOURCE_BLOB = hashlib.sha1(b"blob %d\0" % len(SOURCE_TEXT) + SOURCE_TEXT).hexdigest()


@pytest.fixture(params=["wiki", "vault"])
def wiki(repo: Repo, request: pytest.FixtureRequest) -> tuple[Repo, str]:
    prefix = layout_prefix(repo, request.param)
    repo.write(f"{prefix}concepts/alpha.md", page("Alpha", "Alpha is the first letter."))
    repo.write(f"{prefix}concepts/beta.md", page("Beta", "Beta follows [[alpha]]."))
    repo.write("sources/notes.md", SOURCE_TEXT.decode())
    repo.commit("wiki")
    return repo, prefix


def run(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(*args, env=FAST)


def stage(repo: Repo, writes: list[FileWrite]) -> StagedFiles:
    staged = stage_files(
        Workspace.open(repo.root),
        writes,
        kind=COMPILE_KIND,
        slug="compile",
        subject="llmwiki: compile test run",
        body="Pages written by a test.",
        recorded=Recorded(
            (("sources/notes.md", SOURCE_BLOB),), "offline/source-notes", "source-note/1"
        ),
    )
    assert staged is not None
    return staged


def the_run(prefix: str) -> list[FileWrite]:
    """Two new pages linking each other (and alpha), and a replaced beta linking one of them."""
    return [
        FileWrite(
            f"{prefix}concepts/gamma.md",
            page("Gamma", "Gamma comes after [[delta]]? No: see [[alpha]]."),
        ),
        FileWrite(f"{prefix}concepts/delta.md", page("Delta", "Delta follows [[gamma]].")),
        FileWrite(
            f"{prefix}concepts/beta.md",
            page("Beta", "Beta follows [[alpha]] and precedes [[gamma]]."),
        ),
    ]


def trailer_lines(repo: Repo, rev: str) -> list[str]:
    return [
        line
        for line in repo.git("log", "-1", "--format=%(trailers:only,unfold)", rev).splitlines()
        if line
    ]


def test_the_trailer_block_of_one_file_is_unchanged_and_of_many_lists_each() -> None:
    single = Trailers(
        "a-0123abcd", "page/1", (FileTrailer("wiki/a.md", "absent", "sha256:00"),), "c0ffee"
    )
    assert single.block() == (
        "Llmwiki-Candidate: a-0123abcd\nLlmwiki-Kind: page/1\nLlmwiki-Target: wiki/a.md\n"
        "Llmwiki-Precondition: absent\nLlmwiki-Body-Digest: sha256:00\nLlmwiki-Base: c0ffee\n"
    )
    many = with_files(
        "compile-0123abcd",
        COMPILE_KIND,
        [
            FileTrailer("wiki/a.md", "absent", "sha256:01"),
            FileTrailer("wiki/b c.md", f"blob {SOURCE_BLOB}", "sha256:02"),
        ],
        "c0ffee",
        Recorded((("sources/x y.md", SOURCE_BLOB),), "openai/m", "concept-page/1"),
    )
    found: dict[str, list[str]] = {}
    for line in many.block().splitlines():
        key, _, value = line.partition(": ")
        found.setdefault(key, []).append(value)
    assert parse(found) == many
    assert many.block().splitlines()[2:8] == [
        "Llmwiki-Target: wiki/a.md",
        "Llmwiki-Precondition: absent",
        "Llmwiki-Body-Digest: sha256:01",
        "Llmwiki-Target: wiki/b c.md",
        f"Llmwiki-Precondition: blob {SOURCE_BLOB}",
        "Llmwiki-Body-Digest: sha256:02",
    ]
    assert (
        parse({**found, "Llmwiki-Kind": ["page/1"]}) is None
    )  # one file only for a single-file kind
    assert parse({**found, "Llmwiki-Precondition": ["absent"]}) is None  # the columns must line up
    assert parse({**found, "Llmwiki-Target": ["wiki/a.md", "wiki/a.md"]}) is None  # no target twice
    assert parse({**found, "Llmwiki-Source": ["sources/x.md not-a-blob"]}) is None


def test_a_run_is_staged_shown_page_by_page_and_approved_as_one(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    base = repo.git("rev-parse", "HEAD").strip()
    old_beta = repo.git("rev-parse", f"HEAD:{prefix}concepts/beta.md").strip()
    staged = stage(repo, the_run(prefix))
    assert repo.git("rev-parse", "HEAD").strip() == base and repo.git("status", "--porcelain") == ""
    lines = trailer_lines(repo, staged.branch)
    assert lines[:2] == [f"Llmwiki-Candidate: {staged.candidate_id}", "Llmwiki-Kind: compile/1"]
    assert lines[2:11:3] == [
        f"Llmwiki-Target: {prefix}concepts/{n}.md" for n in ("gamma", "delta", "beta")
    ]
    assert lines[3:12:3] == [
        "Llmwiki-Precondition: absent",
        "Llmwiki-Precondition: absent",
        f"Llmwiki-Precondition: blob {old_beta}",
    ]
    assert lines[11:] == [
        f"Llmwiki-Base: {base}",
        f"Llmwiki-Source: sources/notes.md {SOURCE_BLOB}",
        "Llmwiki-Model: offline/source-notes",
        "Llmwiki-Prompt: source-note/1",
    ]

    listed = json.loads(run(repo, "review", "list", "--json").stdout)["candidates"]
    assert [(r["kind"], len(r["targets"])) for r in listed] == [("compile/1", 3)]
    assert listed[0]["citationStatus"] == "0 newly broken, 0 broken before, 0 pending"
    shown = run(repo, "review", "show", staged.candidate_id)
    assert shown.returncode == 0, shown.stderr
    assert (
        f'=== page 1/3: {prefix}concepts/gamma.md "Gamma" ' in shown.stdout
        and "=== page 3/3: " in shown.stdout
    )
    assert (
        f"source: sources/notes.md (blob {SOURCE_BLOB})" in shown.stdout
        and "Approval would pass" in shown.stdout
    )
    view = json.loads(run(repo, "review", "show", staged.candidate_id, "--json").stdout)
    assert [p["target"] for p in view["pages"]] == [
        f"{prefix}concepts/{n}.md" for n in ("gamma", "delta", "beta")
    ]
    assert [p["title"] for p in view["pages"]] == [
        "Gamma",
        "Delta",
        "Beta",
    ]  # by convention, wiki/titles.py
    assert view["provenance"]["sources"] == [{"path": "sources/notes.md", "blob": SOURCE_BLOB}]
    assert view["verdict"]["ok"] is True
    assert [p["change"] for p in view["verdict"]["details"]["pages"]] == ["add", "add", "replace"]

    # the other pages' links to the run's new pages are pending while it is open
    repo.write(f"{prefix}concepts/epsilon.md", page("Epsilon", "See [[delta]]."))
    check = run(repo, "check", "--json")
    assert [p["code"] for p in json.loads(check.stdout)["problems"]] == ["pending-link"]
    os.unlink(repo.root / f"{prefix}concepts/epsilon.md")

    done = run(repo, "review", "approve", staged.candidate_id, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (
        out["commit"] == staged.commit and len(out["targets"]) == 3
    )  # a fast-forward: the candidate itself
    # then the index/log commit (none in the vault: its index.md and log.md are the user's)
    assert repo.git("rev-parse", "HEAD~1" if prefix else "HEAD").strip() == staged.commit
    assert repo.git("status", "--porcelain") == ""
    assert "precedes [[gamma]]" in (repo.root / f"{prefix}concepts/beta.md").read_text()
    assert (repo.root / f"{prefix}concepts/delta.md").is_file()
    assert repo.git("branch", "--list", "llmwiki/review/*") == ""
    assert run(repo, "check").returncode == 0
    if not prefix:
        assert (repo.root / "index.md").read_text().startswith("# My vault")


def test_one_page_that_moved_on_refuses_the_whole_run(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    staged = stage(repo, the_run(prefix))
    repo.write(
        f"{prefix}concepts/beta.md",
        page("Beta", "Beta, edited by a human meanwhile. See [[alpha]]."),
    )
    human = repo.commit("human edit")
    proc = run(repo, "review", "approve", staged.candidate_id)
    assert proc.returncode == 1 and "concepts/beta.md changed since" in proc.stderr, proc.stderr
    assert repo.git("rev-parse", "HEAD").strip() == human
    assert not (
        repo.root / f"{prefix}concepts/gamma.md"
    ).exists()  # not one page of the run was written
    assert repo.git("rev-parse", staged.branch).strip() == staged.commit  # the candidate is kept


def test_an_unrelated_commit_meanwhile_replays_the_run_with_its_trailers(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    staged = stage(repo, the_run(prefix))
    repo.write("notes.txt", "unrelated\n")
    repo.commit("unrelated")
    proc = run(repo, "review", "approve", staged.candidate_id, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["replayed"] is True
    lines = trailer_lines(repo, out["commit"])
    assert f"Llmwiki-Replayed-From: {staged.commit}" in lines and "Llmwiki-Kind: compile/1" in lines
    assert f"Llmwiki-Source: sources/notes.md {SOURCE_BLOB}" in lines


def test_a_run_page_that_breaks_a_link_refuses_the_run(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    staged = stage(
        repo, [FileWrite(f"{prefix}concepts/gamma.md", page("Gamma", "See [[nowhere-at-all]]."))]
    )
    proc = run(repo, "review", "approve", staged.candidate_id)
    assert proc.returncode == 1 and "breaks 1 link" in proc.stderr, proc.stderr


def test_pages_that_cannot_be_checked_are_refused_at_staging_and_approval(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    assert acceptance_problem("fine\n", 1024) is None
    assert "control character" in (acceptance_problem("bad \x1b[31m\n", 1024) or "")
    assert "NUL" in (acceptance_problem(b"bad \0\n", 1024) or "")
    assert "limit" in (acceptance_problem("x" * 2048, 1024) or "")
    with pytest.raises(UsageError, match="control character"):
        stage(
            repo,
            [
                FileWrite(f"{prefix}concepts/gamma.md", page("Gamma", "ok")),
                FileWrite(f"{prefix}concepts/bad.md", page("Bad", "\x1b]0;pwned\x07")),
            ],
        )
    assert repo.git("branch", "--list", "llmwiki/review/*") == ""  # one bad page stages nothing


@pytest.mark.parametrize("case", ["unlisted", "executable", "source", "index"])
def test_a_hostile_run_is_refused_and_never_breaks_the_listing(
    wiki: tuple[Repo, str], case: str
) -> None:
    repo, prefix = wiki
    gamma = f"{prefix}concepts/gamma.md"
    if case in ("source", "index"):
        target = "sources/notes.md" if case == "source" else f"{prefix}index.md"
        with pytest.raises(UsageError):
            stage(repo, [FileWrite(target, page("X", "x"))])
        return
    staged = stage(repo, [FileWrite(gamma, page("Gamma", "See [[alpha]]."))])
    # tamper with the staged commit: same trailers, a different tree
    repo.git("checkout", "-q", "--detach", staged.commit)
    if case == "unlisted":
        repo.write(f"{prefix}concepts/extra.md", page("Extra", "x"))
        repo.git("add", "-A")
    else:
        os.chmod(repo.root / gamma, 0o755)
        repo.git("add", gamma)
    repo.git("commit", "-q", "--amend", "--no-edit")
    forged = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "main")
    repo.git("update-ref", f"refs/heads/{staged.branch}", forged)
    listed = json.loads(run(repo, "review", "list", "--json").stdout)["candidates"]
    assert listed[0]["citationStatus"] == "malformed"
    proc = run(repo, "review", "approve", staged.candidate_id)
    code = {"unlisted": "exactly the 1 file(s)", "executable": "executable"}[case]
    assert proc.returncode == 1 and code in proc.stderr, proc.stderr
    assert not (repo.root / gamma).exists()


@pytest.mark.parametrize(
    "name,shown",
    [("concepts/\u202egpj.md", "\\u202e"), ("concepts/a\u009b31mred.md", "\\x9b")],
)
@pytest.mark.parametrize("kind", ["page/1", "compile/1"])
def test_approval_refuses_a_file_named_with_a_control_or_bidi_character(
    wiki: tuple[Repo, str], name: str, shown: str, kind: str
) -> None:
    """Issue 34, item 7: the one name rule (controls.py) holds at approval for every kind;
    the candidate is kept, nothing reaches the branch."""
    from llmwiki_git.review.stagepage import PageEdit, stage_pages

    repo, prefix = wiki
    head = repo.git("rev-parse", "HEAD").strip()
    target = prefix + name
    if kind == "page/1":
        (staged,) = stage_pages(
            Workspace.open(repo.root), [PageEdit(target, page("Gpj", "See [[alpha]]."))]
        )
        cid = staged.candidate_id
    else:
        cid = stage(repo, [FileWrite(target, page("Gpj", "See [[alpha]]."))]).candidate_id
    shown_json = run(repo, "review", "show", cid, "--json")
    assert shown_json.returncode == 0, shown_json.stderr
    verdict = json.loads(shown_json.stdout)["verdict"]
    assert verdict["ok"] is False and verdict["code"] == "control-character-name", verdict
    approved = run(repo, "review", "approve", cid)
    assert approved.returncode == 1, approved.stderr
    assert "control or bidi character" in approved.stderr and shown in approved.stderr
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert cid in repo.git("for-each-ref", "--format=%(refname)", "refs/heads/llmwiki/review/")
