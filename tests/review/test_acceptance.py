"""Issue 22, item 1: one acceptance rule for every candidate kind. A page a candidate writes
must be fully checkable -- within the size limit, UTF-8, no NUL, no control or bidi
characters beyond tab, newline and carriage return -- whether it was staged by llmwiki or
forged with git plumbing, at approval, in `review show`/`list`, in the Action's candidate
step and in MCP `propose_page`. Real repositories, both layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmwiki_git.publication.candidates import body_digest
from llmwiki_git.wiki.pages import acceptance_problem

from ..conftest import Repo, layout_prefix, page
from ..test_security import forge

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
FRONT = b"---\ntitle: Evil\ntype: query\n---\n"
#: What a hostile branch can hold, each refused by the one rule.
HOSTILE = {
    "nul": FRONT + b"See [[alpha]].\x00\x00\n",
    "oversize": FRONT + b"See [[alpha]].\n" + b"A" * (8 * 1024 * 1024 + 16),
    "latin1": FRONT + "See [[alpha]], caf\xe9.\n".encode("latin-1"),
    "esc": FRONT + b"See [[alpha]].\x1b]8;;https://e.vil\x1b\\here\x1b[2J\n",
    "csi8bit": FRONT + "See [[alpha]].\u009b31m red\n".encode(),
    "bidi": FRONT + "See [[alpha]]. \u202etxt.exe\n".encode(),
}
WHY = {
    "nul": "NUL",
    "oversize": "MB page limit",
    "latin1": "UTF-8",
    "esc": "\\x1b",
    "csi8bit": "\\x9b",
    "bidi": "\\u202e",
}


@pytest.fixture(params=["wiki", "vault"])
def wiki(repo: Repo, request: pytest.FixtureRequest) -> tuple[Repo, str]:
    prefix = layout_prefix(repo, request.param, "# My vault\n\nMy own start page.\n")
    repo.write(f"{prefix}concepts/alpha.md", page("Alpha", "Alpha is the first letter."))
    repo.commit("wiki")
    return repo, prefix


@pytest.mark.parametrize("kind", ["validated-answer/1", "page/1"])
def test_forged_candidates_that_are_not_fully_checkable_are_refused(
    wiki: tuple[Repo, str], kind: str
) -> None:
    repo, prefix = wiki
    tip = repo.git("rev-parse", "HEAD").strip()
    folder = "queries" if kind == "validated-answer/1" else "concepts"
    ids = {name: f"evil{name}-{index:08x}" for index, name in enumerate(sorted(HOSTILE))}
    for name, cid in ids.items():
        forge(repo, cid, f"{prefix}{folder}/evil{name}.md", content=HOSTILE[name], kind=kind)
    rows = {
        r["id"]: r
        for r in json.loads(repo.llmwiki("review", "list", "--json", env=FAST).stdout)["candidates"]
    }
    for name, cid in ids.items():
        verdict = json.loads(repo.llmwiki("review", "show", cid, "--json", env=FAST).stdout)[
            "verdict"
        ]
        assert verdict["ok"] is False and verdict["code"] == "unchecked-page", (name, verdict)
        assert WHY[name] in verdict["message"], (name, verdict["message"])
        assert rows[cid]["citationStatus"] == "malformed" and rows[cid]["notes"], rows[cid]
        if name == "oversize":  # not printed whole
            shown = repo.llmwiki("review", "show", cid, env=FAST)
            assert len(shown.stdout) < 100_000 and "over the 8 MB page limit" in shown.stdout, (
                shown.stdout[:500]
            )
        approved = repo.llmwiki("review", "approve", cid, env=FAST)
        assert approved.returncode == 1 and "fully checkable" in approved.stderr, (
            name,
            approved.stderr,
        )
        assert "\x1b" not in approved.stderr and "\u202e" not in approved.stderr
    assert repo.git("rev-parse", "HEAD").strip() == tip
    assert repo.git("status", "--porcelain") == ""
    assert not (repo.root / prefix / folder / "evilnul.md").exists()


def test_the_rule_names_what_it_refuses_and_allows_what_pages_hold() -> None:
    assert acceptance_problem("tab\there\r\nand a newline\n\u00e9\u4e2d \u200f rtl mark\n") is None
    assert acceptance_problem(b"\xef\xbb\xbf---\ntitle: BOM\n---\n") is None
    for text, shown in (
        ("a\x1bb", "\\x1b"),
        ("a\u009bb", "\\x9b"),
        ("a\u202eb", "\\u202e"),
        ("a\u2066b", "\\u2066"),
        ("a\x7fb", "\\x7f"),
        ("a\x0bb", "\\x0b"),
        ("line\nsecond \x85", "\\x85"),
    ):
        why = acceptance_problem(text)
        assert why is not None and shown in why, (text, why)
    assert "line 2" in (acceptance_problem("one\ntwo\x1b\n") or "")
    assert "limit" in (acceptance_problem(b"x" * 2048, max_bytes=1024) or "")


def test_the_action_refuses_a_candidate_pull_request_with_escape_sequences(
    repo: Repo, tmp_path: Path
) -> None:
    """The check step passes (the gate does not judge characters), the candidate step refuses."""
    from ..test_action import pr_event, run_action, seed

    base = seed(repo)
    cid = "evil-0000000e"
    commit = forge(repo, cid, "wiki/queries/evil.md", content=HOSTILE["esc"])
    repo.git("update-ref", f"refs/remotes/origin/llmwiki/review/{cid}", commit)
    repo.git("update-ref", "-d", f"refs/heads/llmwiki/review/{cid}")
    repo.git("update-ref", "refs/remotes/origin/main", base)
    repo.git("checkout", "-q", "--detach", commit)
    run = run_action(repo, tmp_path / "gh", event=pr_event(base, commit, f"llmwiki/review/{cid}"))
    assert run.outcomes["candidate"] == "failure", run.stdout + run.stderr
    refused = [c for c in run.commands if c.startswith("::error title=llmwiki review::")]
    assert len(refused) == 1 and "fully checkable" in refused[0] and "\x1b" not in refused[0], (
        refused
    )


@pytest.mark.parametrize("bad", ["\u009b31m", "\u202e", "\x1b[2J", "\x85"])
def test_review_stage_refuses_c1_and_bidi_controls(wiki: tuple[Repo, str], bad: str) -> None:
    """The path MCP propose_page and `review stage` share (tests/mcptools/test_mcp_propose.py drives the
    MCP tool itself)."""
    from llmwiki_git.errors import UsageError
    from llmwiki_git.review.stagepage import PageEdit, stage_pages
    from llmwiki_git.workspace import Workspace

    repo, prefix = wiki
    with pytest.raises(UsageError, match="control character"):
        stage_pages(
            Workspace.open(repo.root),
            [PageEdit(f"{prefix}concepts/alpha.md", page("Alpha", f"A {bad} b."))],
        )
    assert repo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""


@pytest.mark.parametrize("review", [False, True], ids=["save", "save-review"])
def test_an_answer_with_a_bidi_override_is_neither_saved_nor_staged(
    wiki: tuple[Repo, str], review: bool
) -> None:
    from ..answer.test_query_cli import openai_env, sse_answer
    from ..servers import serve

    repo, prefix = wiki
    before = repo.git("rev-parse", "HEAD").strip()
    streamed = sse_answer("Alpha is the first letter [[alpha]] \u202eexe.txt")

    def handler(path: str, body: dict, headers: dict) -> tuple[int, dict, bytes]:
        if body.get("stream"):
            return streamed(path, body, headers)
        answer = {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "concepts/alpha"}}]
        }
        return (
            200,
            {"content-type": "application/json"},
            json.dumps(answer).encode(),
        )  # the page selection

    with serve(handler) as (url, _):
        proc = repo.llmwiki(
            "query",
            "what is alpha?",
            "--save",
            *(["--review"] if review else []),
            env={**openai_env(url), **FAST},
        )
    assert proc.returncode == 1 and "control character \\u202e" in proc.stderr, proc.stderr
    assert repo.git("rev-parse", "HEAD").strip() == before
    assert repo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""
    assert not (repo.root / prefix / "queries").exists()


def test_a_forged_compile_run_with_a_bidi_page_is_refused(wiki: tuple[Repo, str]) -> None:
    """compile/1 (several pages, each listed in the trailers) under the same rule: a run whose
    digests all match but one page holds a bidi override is refused as a whole."""
    from llmwiki_git.gitstore.commits import build_commit
    from llmwiki_git.gitstore.git import Git
    from llmwiki_git.publication.trailers import COMPILE_KIND, FileTrailer, message, with_files

    repo, prefix = wiki
    tip = repo.git("rev-parse", "HEAD").strip()
    pages = {
        f"{prefix}concepts/gamma.md": page("Gamma", "Gamma follows [[alpha]]."),
        f"{prefix}concepts/delta.md": page("Delta", "Delta \u202etxt.exe follows [[gamma]]."),
    }
    cid = "compile-0000000f"
    files = [FileTrailer(path, "absent", body_digest(text)) for path, text in pages.items()]
    text = message("llmwiki: compile (forged)", "", with_files(cid, COMPILE_KIND, files, tip))
    commit = build_commit(Git(repo.root), tip, {p: t.encode() for p, t in pages.items()}, text)
    repo.git("update-ref", f"refs/heads/llmwiki/review/{cid}", commit)
    verdict = json.loads(repo.llmwiki("review", "show", cid, "--json", env=FAST).stdout)["verdict"]
    assert verdict["code"] == "unchecked-page" and "delta.md" in verdict["message"], verdict
    approved = repo.llmwiki("review", "approve", cid, env=FAST)
    assert approved.returncode == 1 and "\\u202e" in approved.stderr, approved.stderr
    assert repo.git("rev-parse", "HEAD").strip() == tip
