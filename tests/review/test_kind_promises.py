"""Each candidate kind's promise, checked against its base at approval (issue 34, items 2 and
8): hand-built branches (real git, real commits, forged trailers) that the structural check
lets through are refused by `review approve`, `review show` and the Action's candidate step
alike. Both layouts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from llmwiki_git.gitstore.commits import build_commit
from llmwiki_git.gitstore.git import Git
from llmwiki_git.publication.candidates import body_digest
from llmwiki_git.publication.trailers import (
    ABSENT,
    COMPILE_KIND,
    PAGE_KIND,
    RETRACT_KIND,
    FileTrailer,
    Recorded,
    message,
    with_files,
)

from ..checks.test_stale_check import fed
from ..conftest import Repo, page
from ..test_action import as_pull_request, pr_event, run_action

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
X = "# Paper X\n\nX says the sky is green.\n"
Y = "# Paper Y\n\nY says the sky is blue.\n"


@pytest.fixture(params=["wiki", "vault"])
def wiki(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str]:
    """Sources x and y; `xnote` written from x alone, `sky` from x and y (citing both),
    `start` and `other` from nothing (`other` linked by no page, `start` by `other`)."""
    prefix = "wiki/" if request.param == "wiki" else ""
    if not prefix:
        repo.write("index.md", "# My vault\n\nSee [[start]].\n")
        repo.write("log.md", "# My diary\n")
    repo.write("sources/x.md", X)
    repo.write("sources/y.md", Y)
    repo.commit("sources")
    blob = {s: repo.git("rev-parse", f"HEAD:sources/{s}.md").strip() for s in "xy"}
    repo.write(
        f"{prefix}concepts/xnote.md", fed("X note", "X says green.", {"sources/x.md": blob["x"]})
    )
    repo.write(
        f"{prefix}concepts/sky.md",
        fed(
            "Sky",
            "Green ^[x.md:3-3]; blue ^[y.md:3-3]. See [[xnote]].",
            {"sources/x.md": blob["x"], "sources/y.md": blob["y"]},
        ),
    )
    repo.write(f"{prefix}concepts/start.md", page("Start", "The wiki. See [[sky]]."))
    repo.write(f"{prefix}concepts/other.md", page("Other", "Back to [[start]]."))
    repo.commit("pages")
    return repo, prefix


def forge(
    repo: Repo,
    kind: str,
    writes: dict[str, str | None],
    recorded: Recorded = Recorded(),
    slug: str = "forged",
) -> str:
    """A candidate branch built by hand: one commit on HEAD writing ``writes`` (None:
    deleted), its trailers listing each file with the precondition HEAD gives and the
    digest of what it writes -- everything the structural check asks for."""
    git = Git(repo.root)
    tip = repo.git("rev-parse", "HEAD").strip()
    files = []
    for path, text in writes.items():
        at_base = git.blob_at(tip, path)
        files.append(
            FileTrailer(
                path,
                ABSENT if at_base is None else f"blob {at_base}",
                ABSENT if text is None else body_digest(text),
            )
        )
    cid = f"{slug}-0000000f"
    text = message(f"llmwiki: {kind} (forged)", "", with_files(cid, kind, files, tip, recorded))
    documents = {p: None if t is None else t.encode() for p, t in writes.items()}
    commit = build_commit(git, tip, documents, text)
    repo.git("update-ref", f"refs/heads/llmwiki/review/{cid}", commit)
    return cid


def forge_retraction(repo: Repo, writes: dict[str, str | None]) -> str:
    """A forged retraction of sources/x.md (deleting it) that also writes ``writes``."""
    return forge(
        repo,
        RETRACT_KIND,
        {"sources/x.md": None, **writes},
        Recorded(retracts="sources/x.md"),
        "retract-x",
    )


def approve(repo: Repo, cid: str, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki("review", "approve", cid, *args, env=FAST)


def verdict(repo: Repo, cid: str) -> dict[str, object]:
    shown = repo.llmwiki("review", "show", cid, "--json", env=FAST)
    assert shown.returncode == 0, shown.stderr
    found = json.loads(shown.stdout)["verdict"]
    assert isinstance(found, dict)
    return found


def refused(repo: Repo, cid: str, code: str, words: str, *args: str) -> None:
    """``cid`` is refused with ``code`` by show and approve, and main did not move."""
    head = repo.git("rev-parse", "HEAD").strip()
    shown = verdict(repo, cid)
    assert shown["ok"] is False and shown["code"] == code, shown
    assert words in str(shown["message"]), shown
    done = approve(repo, cid, *args)
    assert done.returncode == 1 and words in done.stderr, done.stderr
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("rev-parse", "--verify", "-q", f"refs/heads/llmwiki/review/{cid}").strip()


def test_a_retraction_deleting_an_unrelated_page_is_refused(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    other = f"{prefix}concepts/other.md"
    cid = forge_retraction(repo, {other: None})
    refused(repo, cid, "broken-promise", f"deletes {other}, whose recorded sources")
    refused(repo, cid, "broken-promise", f"deletes {other}", "--allow-broken")


def test_a_retraction_deleting_a_linked_unrelated_page_with_allow_broken_is_refused(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    start = f"{prefix}concepts/start.md"
    cid = forge_retraction(repo, {start: None})
    refused(repo, cid, "broken-promise", f"deletes {start}", "--allow-broken")


def test_a_retraction_deleting_a_page_that_drew_on_another_source_too_is_refused(
    wiki: tuple[Repo, str],
) -> None:
    """sky names x and y: a retraction of x may rewrite it, never delete it."""
    repo, prefix = wiki
    sky = f"{prefix}concepts/sky.md"
    cid = forge_retraction(repo, {sky: None})
    refused(repo, cid, "broken-promise", "not exactly sources/x.md", "--allow-broken")


def test_a_retraction_rewriting_a_page_that_never_named_the_source_is_refused(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    start = f"{prefix}concepts/start.md"
    cid = forge_retraction(repo, {start: page("Start", "Rewritten by a forger.")})
    refused(repo, cid, "broken-promise", f"rewrites {start}, which neither named nor cited")


def test_a_retraction_adding_a_made_up_link_is_refused_even_with_allow_broken(
    wiki: tuple[Repo, str],
) -> None:
    """--allow-broken breaks only links to the pages the retraction deletes: xnote's (deleted,
    it drew on x alone) are allowed, a new [[totally-made-up-page]] in sky is not."""
    repo, prefix = wiki
    sky, xnote = f"{prefix}concepts/sky.md", f"{prefix}concepts/xnote.md"
    text = fed("Sky", "Blue ^[y.md:3-3]. See [[xnote]] and [[totally-made-up-page]].", {})
    cid = forge_retraction(repo, {xnote: None, sky: text})
    head = repo.git("rev-parse", "HEAD").strip()
    done = approve(repo, cid, "--allow-broken")
    assert done.returncode == 1, done.stdout
    assert "totally-made-up-page" in done.stderr and "only links to the pages" in done.stderr
    assert repo.git("rev-parse", "HEAD").strip() == head
    # the same retraction without the made-up link: its broken link to xnote is allowed
    repo.git("branch", "-D", f"llmwiki/review/{cid}")
    fair = forge_retraction(
        repo, {xnote: None, sky: text.replace(" and [[totally-made-up-page]]", "")}
    )
    assert approve(repo, fair).returncode == 1  # it breaks sky's link to xnote
    done = approve(repo, fair, "--allow-broken")
    assert done.returncode == 0, done.stderr
    assert not (repo.root / xnote).exists() and not (repo.root / "sources/x.md").exists()


def test_a_compile_run_whose_only_change_deletes_a_page_is_refused(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    other = f"{prefix}concepts/other.md"
    cid = forge(repo, COMPILE_KIND, {other: None}, slug="compile")
    refused(repo, cid, "broken-promise", "a compile run never deletes a file")
    assert (repo.root / other).exists()


@pytest.mark.parametrize("kind", [COMPILE_KIND, PAGE_KIND])
@pytest.mark.parametrize("lie", ["dotdot", "wrong-blob", "no-file", "outside"])
def test_a_lying_source_trailer_is_refused(wiki: tuple[Repo, str], kind: str, lie: str) -> None:
    """Every Llmwiki-Source names a file of sources/ at the base with exactly that blob."""
    repo, prefix = wiki
    real = repo.git("rev-parse", "HEAD:sources/y.md").strip()
    path, blob = {
        "dotdot": ("sources/../.git/config", "0" * 40),
        "wrong-blob": ("sources/y.md", "1" * 40),
        "no-file": ("sources/z.md", real),
        "outside": (f"{prefix}concepts/start.md", repo.git("rev-parse", "HEAD:sources/x.md")),
    }[lie]
    blob = blob.strip()
    gamma = f"{prefix}concepts/gamma.md"
    text = fed("Gamma", "Gamma is new. See [[start]].", {path: blob})
    cid = forge(repo, kind, {gamma: text}, Recorded(sources=((path, blob),)), slug="gamma")
    shown = repo.llmwiki("review", "show", cid, env=FAST)
    assert path in shown.stdout  # show prints the record, and why it is refused
    assert path in str(verdict(repo, cid)["message"])
    refused(repo, cid, "broken-promise", "records the source")
    assert not (repo.root / gamma).exists()


def test_a_true_source_trailer_passes(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    real = repo.git("rev-parse", "HEAD:sources/y.md").strip()
    gamma = f"{prefix}concepts/gamma.md"
    text = fed("Gamma", "Gamma is blue. See [[start]].", {"sources/y.md": real})
    cid = forge(
        repo, COMPILE_KIND, {gamma: text}, Recorded(sources=(("sources/y.md", real),)), "gamma"
    )
    assert verdict(repo, cid)["ok"] is True
    assert approve(repo, cid).returncode == 0


def test_the_action_says_a_forged_retraction_would_be_refused(repo: Repo, tmp_path: Path) -> None:
    """The Action's candidate step judges as approval does: the forged retraction deleting a
    page that never drew on the source (which breaks no link) is refused there too."""
    repo.write("sources/x.md", X)
    repo.write("wiki/concepts/start.md", page("Start", "The wiki."))
    repo.write("wiki/concepts/other.md", page("Other", "Nothing links here."))
    base = repo.commit("seed")
    cid = forge_retraction(repo, {"wiki/concepts/other.md": None})
    branch = f"llmwiki/review/{cid}"
    commit = repo.git("rev-parse", branch).strip()
    as_pull_request(repo, branch, commit, base)
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, commit, branch))
    assert run.outcomes["candidate"] == "failure", run.stdout + run.stderr
    assert any(
        "approval would be refused" in line and "whose recorded sources" in line
        for line in run.commands
    ), run.commands
    # the summary names the kind as its row shows it, and what approval holds it to
    assert "A retraction (<code>retraction/1</code>): deletes the retracted source" in run.summary
