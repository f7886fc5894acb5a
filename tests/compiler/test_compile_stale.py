"""`llmwiki compile --stale`: only the pages whose sources changed under them are rewritten,
on one candidate (source notes offline; other pages by a model, from every source they name,
with no extraction request); `--dry-run` lists them."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from llmwiki_git.compiler.concepts import PAGE_SYSTEM

from ..checks.test_stale_check import fed
from ..conftest import Repo
from ..servers import json_response, serve

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
A = "# Packfiles\n\nGit packs loose objects into a packfile with an index beside it.\nDeltas keep history small.\n"
B = "# Blobs\n\nA blob holds the bytes of one file; its id is the hash of those bytes.\n"


def stale_pages(repo: Repo) -> list[tuple[str, str]]:
    found = json.loads(repo.llmwiki("check", "--json", env=FAST).stdout)["problems"]
    return sorted((p["path"], p["target"]) for p in found if p["code"] == "stale-page")


@pytest.fixture(params=["wiki", "root"])
def compiled(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str]:
    """Two sources compiled to notes, and a page written (as by a model) from both."""
    prefix = "wiki/" if request.param == "wiki" else ""
    repo.write(f"{prefix}concepts/start.md", "---\ntitle: Start\n---\nThe wiki.\n")
    if not prefix:
        repo.write("index.md", "# My vault\n")
    repo.write("sources/packs.md", A)
    repo.write("sources/blobs.md", B)
    repo.commit("sources")
    done = repo.llmwiki("compile", "--publish", env=FAST)
    assert done.returncode == 0, done.stderr
    blobs = {s: repo.git("rev-parse", f"HEAD:sources/{s}.md").strip() for s in ("packs", "blobs")}
    repo.write(
        f"{prefix}concepts/storage.md",
        fed(
            "Storage",
            "Packs ^[packs.md:3-3] hold blobs ^[blobs.md:3-3].",
            {"sources/packs.md": blobs["packs"], "sources/blobs.md": blobs["blobs"]},
            summary="How git stores things.",
        ),
    )
    repo.commit("a page from both")
    assert stale_pages(repo) == []
    repo.write(
        "sources/packs.md",
        A.replace("Deltas keep history small.", "Deltas keep a long history small."),
    )
    repo.commit("packs revised")
    return repo, prefix


def test_offline_stale_rewrites_only_the_note_and_lists_what_needs_a_model(
    compiled: tuple[Repo, str],
) -> None:
    repo, prefix = compiled
    note, storage = f"{prefix}concepts/packs.md", f"{prefix}concepts/storage.md"
    assert stale_pages(repo) == [(note, "sources/packs.md"), (storage, "sources/packs.md")]
    old = repo.git("rev-parse", "HEAD~1:sources/packs.md").strip()
    new = repo.git("rev-parse", "HEAD:sources/packs.md").strip()
    dry = json.loads(repo.llmwiki("compile", "--stale", "--dry-run", "--json", env=FAST).stdout)
    assert dry["dryRun"] and dry["candidate"] is None and dry["compiled"] == ["sources/packs.md"]
    assert dry["stale"] == [
        {"page": note, "sources": [{"path": "sources/packs.md", "recordedBlob": old, "blob": new}]},
        {
            "page": storage,
            "sources": [{"path": "sources/packs.md", "recordedBlob": old, "blob": new}],
        },
    ]
    text = repo.llmwiki("compile", "--stale", "--dry-run", env=FAST)
    assert (
        text.stdout.startswith("Stale: 2 pages from 1 changed source:\n")
        and f"  {note}  sources/packs.md  blob {old[:12]} -> {new[:12]}" in text.stdout
    )
    assert repo.git("branch", "--list", "llmwiki/review/*") == ""

    run = json.loads(repo.llmwiki("compile", "--stale", "--json", env=FAST).stdout)
    assert [p["target"] for p in run["candidate"]["pages"]] == [note] and run["needsModel"] == [
        storage
    ]
    assert [{k: p[k] for k in ("target", "sources", "change")} for p in run["pages"]] == [
        {"target": note, "sources": ["sources/packs.md"], "change": "replace"}
    ]
    trailers = repo.git("log", "-1", "--format=%(trailers:only,unfold)", run["candidate"]["branch"])
    assert f"Llmwiki-Source: sources/packs.md {new}" in trailers and "blobs.md" not in trailers
    assert repo.llmwiki("review", "approve", run["candidate"]["id"], env=FAST).returncode == 0
    assert stale_pages(repo) == [(storage, "sources/packs.md")]
    again = repo.llmwiki("compile", "--stale", env=FAST)
    assert (
        again.stdout.startswith("Nothing staged: 1 stale page needs a model")
        and storage in again.stderr
    )


def test_with_a_model_each_stale_page_is_rewritten_from_all_its_sources(
    compiled: tuple[Repo, str],
) -> None:
    repo, prefix = compiled
    requests: list[str] = []

    def model(
        path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        assert system == PAGE_SYSTEM  # no concept extraction: the page is the concept
        requests.append(user)
        concept = re.search(r"^Concept: (.+)$", user, re.MULTILINE).group(1)  # type: ignore[union-attr]
        reply = {
            "title": concept,
            "summary": "Rewritten.",
            "body": "Packs hold a long history ^[packs.md:4-4]; blobs are hashed ^[blobs.md:3-3].",
        }
        return json_response(
            {
                "id": "c",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(reply)},
                        "finish_reason": "stop",
                    }
                ],
            }
        )

    with serve(model) as (url, _):
        env = {**FAST, "OPENAI_BASE_URL": f"{url}/v1", "LLMWIKI_MODEL": "m"}
        run = json.loads(repo.llmwiki("compile", "--stale", "--json", env=env).stdout)
    storage = f"{prefix}concepts/storage.md"
    assert sorted(p["target"] for p in run["candidate"]["pages"]) == [
        f"{prefix}concepts/packs.md",
        storage,
    ]
    assert len(requests) == 1 and "Concept: Storage" in requests[0]
    assert "Source file: packs.md" in requests[0] and "Source file: blobs.md" in requests[0]
    branch = run["candidate"]["branch"]
    written = repo.git("show", f"{branch}:{storage}")
    assert "summary: Rewritten." in written and "^[packs.md:4-4]" in written
    for source in ("packs", "blobs"):
        assert (
            f"sources/{source}.md: {repo.git('rev-parse', f'HEAD:sources/{source}.md').strip()}"
            in written
        )
    assert repo.llmwiki("review", "approve", run["candidate"]["id"], env=FAST).returncode == 0
    assert stale_pages(repo) == []
    assert repo.llmwiki("compile", "--stale", env=FAST).stdout.startswith("Nothing is stale")


def test_a_source_without_frontmatter_is_cited_from_its_own_lines(repo: Repo) -> None:
    """A source committed by hand (no frontmatter) was read from line "0" -- its last line --
    first, giving notes a citation ^[x.md:0-0] that no reader can follow."""
    repo.write("sources/x.md", "# Paper X\n\nX says the sky is green.\nMore about x.\n")
    repo.commit("a source of mine")
    run = json.loads(repo.llmwiki("compile", "--json", env=FAST).stdout)
    note = repo.git("show", f"{run['candidate']['branch']}:concepts/x.md")
    assert "^[x.md:3-4]" in note and ":0-" not in note
