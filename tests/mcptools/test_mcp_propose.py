"""MCP `propose_page`: an agent reads a page with its blob id, proposes an edit as a page/1
review candidate, and a human approves it with the CLI. Driven by the SDK's own stdio client
against `llmwiki serve` in a real subprocess, on both layouts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..conftest import Repo, page
from .test_mcp import FAST, ok, refused, run, session

TRANSCRIPT = os.environ.get("LLMWIKI_MCP_TRANSCRIPT")  # write the agent workflow transcript here


@pytest.fixture(params=["wiki", "vault"])
def wiki(repo: Repo, request: pytest.FixtureRequest) -> tuple[Repo, str]:
    prefix = "wiki/" if request.param == "wiki" else ""
    if not prefix:
        repo.write("index.md", "# My vault\n")
    repo.write(
        f"{prefix}concepts/blobs.md", page("Blobs", "A blob stores file contents. See [[trees]].")
    )
    repo.write(f"{prefix}concepts/trees.md", page("Trees", "A tree lists [[blobs]]."))
    repo.commit("wiki")
    return repo, prefix


def test_stale_read_refused_then_reread_and_approved(
    wiki: tuple[Repo, str], tmp_path: Path
) -> None:
    repo, prefix = wiki
    path = f"{prefix}concepts/blobs.md"
    lines: list[str] = []

    def say(text: str) -> None:
        lines.append(text)

    async def body() -> None:
        async with session(repo.root, tmp_path / "server.log") as s:
            read = await ok(s, "read_page", {"path": path})
            assert (
                read["blobId"]
                == read["headBlobId"]
                == repo.git("rev-parse", f"HEAD:{path}").strip()
            )
            say(f"agent: read_page {path} -> blobId {read['blobId']}")
            pack = await ok(s, "get_context_pack", {"prompt": "what is a blob"})
            assert any(
                p["blobId"] == read["blobId"]
                for p in pack["primary"]
                if p["id"] == "concepts/blobs"
            )

            # meanwhile a human commits another version of the page
            repo.write(
                path, page("Blobs", "A blob stores file contents, compressed. See [[trees]].")
            )
            repo.commit("human: blobs are compressed")
            say("human: commits an edit of the same page")

            stale = await ok(
                s,
                "propose_page",
                {
                    "path": path,
                    "basedOn": read["blobId"],
                    "content": page("Blobs", "A blob stores bytes. See [[trees]]."),
                },
            )
            assert stale["precondition"] == f"blob {read['blobId']}"
            say(
                f"agent: propose_page basedOn {read['blobId'][:12]} -> candidate {stale['candidateId']}"
            )
            listed = await ok(s, "review_list", {})
            assert [c["kind"] for c in listed["candidates"]] == ["page/1"]

            proc = repo.llmwiki("review", "approve", stale["candidateId"], env=FAST)
            assert proc.returncode == 1 and "lost update refused" in proc.stderr
            assert (
                "compressed" in proc.stderr and "stores bytes" in proc.stderr
            )  # the three-way view
            say(
                f"human: llmwiki review approve {stale['candidateId']}  (exit {proc.returncode})\n{proc.stderr.rstrip()}"
            )

            again = await ok(s, "read_page", {"path": path})
            assert again["blobId"] != read["blobId"] and "compressed" in again["body"]
            say(f"agent: read_page {path} -> blobId {again['blobId']}")
            fresh = await ok(
                s,
                "propose_page",
                {
                    "path": path,
                    "basedOn": again["blobId"],
                    "content": page(
                        "Blobs",
                        "A blob stores file contents, compressed, and nothing else. See [[trees]].",
                    ),
                },
            )
            say(
                f"agent: propose_page basedOn {again['blobId'][:12]} -> candidate {fresh['candidateId']}"
            )
            proc = repo.llmwiki("review", "approve", fresh["candidateId"], env=FAST)
            assert proc.returncode == 0, proc.stderr
            say(
                f"human: llmwiki review approve {fresh['candidateId']}  (exit 0)\n{proc.stdout.rstrip()}"
            )
            assert "nothing else" in repo.git("show", f"HEAD:{path}")
            assert repo.llmwiki("review", "reject", stale["candidateId"], env=FAST).returncode == 0

    run(body)
    if TRANSCRIPT:
        Path(TRANSCRIPT).write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_propose_page_refusals(wiki: tuple[Repo, str], tmp_path: Path) -> None:
    repo, prefix = wiki
    path = f"{prefix}concepts/blobs.md"
    (repo.root / "outside.md").write_text("# not in the wiki\n")
    link = repo.root / f"{prefix}concepts/link.md"
    link.symlink_to("trees.md")
    folder_link = repo.root / f"{prefix}elsewhere"
    folder_link.symlink_to(tmp_path)
    head = repo.git("rev-parse", "HEAD").strip()
    status = repo.git("status", "--porcelain")

    async def body() -> None:
        async with session(repo.root, tmp_path / "server.log") as s:
            base = (await ok(s, "read_page", {"path": path}))["blobId"]
            content = page("Blobs", "Fine.")
            for bad, why in [
                ({"path": "../escape.md"}, "'..' segment"),
                ({"path": "/etc/passwd.md"}, "absolute path"),
                (
                    {"path": ".git/config.md" if not prefix else "README.md"},
                    "hidden folder" if not prefix else "not a .md page under the wiki root",
                ),
                ({"path": f"{prefix}concepts/link.md"}, "symlink"),
                ({"path": f"{prefix}elsewhere/new.md"}, "symlink"),
                ({"content": "---\ntitle: x\n---\nnul \x00 byte\n"}, "NUL bytes"),
                (
                    {"content": "---\ntitle: x\n---\n\x1b[2J\x1b]0;pwned\x07 escape\n"},
                    "control character",
                ),
                (
                    {"content": "---\ntitle: x\n---\n8-bit CSI \u009b31m red\n"},
                    "control character \\x9b",
                ),
                (
                    {"content": "---\ntitle: x\n---\nbidi \u202etxt.exe\n"},
                    "control character \\u202e",
                ),
                ({"basedOn": "HEAD"}, "basedOn"),
            ]:
                args = {"path": path, "content": content, "basedOn": base, **bad}
                text = await refused(s, "propose_page", args)
                assert why in text, (bad, text)
            if prefix:
                assert "not a .md page under the wiki root" in await refused(
                    s,
                    "propose_page",
                    {"path": "outside.md", "content": content, "basedOn": "absent"},
                )
            stale = await ok(
                s, "propose_page", {"path": path, "content": content, "basedOn": "0" * 40}
            )
            assert stale["precondition"] == "blob " + "0" * 40

    run(body)
    assert (
        repo.git("rev-parse", "HEAD").strip() == head
        and repo.git("status", "--porcelain") == status
    )
    cids = repo.git(
        "for-each-ref", "--format=%(refname:lstrip=4)", "refs/heads/llmwiki/review/"
    ).split()
    assert len(cids) == 1  # only the last, well-formed proposal was staged; nothing was published
    proc = repo.llmwiki("review", "approve", cids[0], env=FAST)
    assert proc.returncode == 1 and "is not in this repository" in proc.stderr


def test_propose_page_refuses_control_names_and_os_errors_cleanly(
    wiki: tuple[Repo, str], tmp_path: Path
) -> None:
    """Issue 34, item 7 and "smaller": a name with a C1 or bidi character is refused with the
    one name rule; a 300-character name (an OS error deep down) is a clean refusal that
    shows no local absolute path."""
    repo, prefix = wiki
    head = repo.git("rev-parse", "HEAD").strip()
    content = page("Blobs", "Fine.")

    async def body() -> None:
        async with session(repo.root, tmp_path / "server.log") as s:
            for name, shown in [
                ("concepts/\u202egpj.md", "\\u202e"),
                ("concepts/a\u009b31mred.md", "\\x9b"),
                ("concepts/mark\u200fed.md", "\\u200f"),
                ("concepts/arabic\u061cmark.md", "\\u061c"),
            ]:
                args = {"path": prefix + name, "content": content, "basedOn": "absent"}
                text = await refused(s, "propose_page", args)
                assert "control or bidi character" in text and shown in text, text
            long = {"path": f"{prefix}concepts/{'x' * 300}.md", "content": content}
            text = await refused(s, "propose_page", {**long, "basedOn": "absent"})
            assert "internal error" not in text and "Traceback" not in text, text
            for root in {str(repo.root), str(repo.root.resolve()), str(tmp_path)}:
                assert root not in text, text
            assert "too long" in text.lower(), text

    run(body)
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""
