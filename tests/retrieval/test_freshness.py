"""`context --json` and MCP `get_context_pack` give each page's freshness against the sources
committed at HEAD (``sourceFreshness``): fresh, stale with the source and why, or unknown
without provenance -- by the same rule as `llmwiki check`."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ..checks.test_stale_check import fed
from ..conftest import REPO_ROOT, Repo, page
from ..mcptools.test_mcp import FAST, ok, run, session

SCHEMA = json.loads(
    (REPO_ROOT / "llmwiki_git" / "retrieval" / "context-pack.schema.json").read_text()
)


@pytest.mark.slow
def test_context_and_mcp_carry_each_pages_freshness(repo: Repo, tmp_path: Path) -> None:
    repo.write("sources/a.md", "# A\n\nAlpha facts about walruses.\n")
    repo.write("sources/b.md", "# B\n\nBeta facts about walruses.\nmore\n")
    blob = {s: repo.git("hash-object", f"sources/{s}.md").strip() for s in "ab"}
    repo.write(
        "wiki/concepts/fresh.md",
        fed("Fresh walruses", "Walruses are fresh ^[a.md:3-3].", {"sources/a.md": blob["a"]}),
    )
    repo.write(
        "wiki/concepts/later.md",
        fed("Later walruses", "Walruses changed ^[b.md:3-4].", {"sources/b.md": blob["b"]}),
    )
    repo.write("wiki/concepts/plain.md", page("Plain walruses", "Walruses, written by hand."))
    repo.write(
        "wiki/concepts/hand.md",
        fed("Hand walruses", "Walruses from a, no blob recorded.", {"sources/a.md": None}),
    )
    repo.commit("wiki")
    repo.write("sources/b.md", "# B\n\nBeta facts, revised.\n")
    repo.commit("b revised")
    new_b = repo.git("rev-parse", "HEAD:sources/b.md").strip()
    pack = json.loads(
        repo.llmwiki("context", "walruses", "--json", "--top-pages", "8", env=FAST).stdout
    )
    jsonschema.validate(pack, SCHEMA)
    got = {item["id"]: item["sourceFreshness"] for item in pack["primary"]}
    assert got["concepts/fresh"] == {"status": "fresh"}
    assert got["concepts/plain"] == {"status": "unknown"} and got["concepts/hand"] == {
        "status": "unknown"
    }
    assert got["concepts/later"] == {
        "status": "stale",
        "stale": [
            {"path": "sources/b.md", "reason": "changed", "recordedBlob": blob["b"], "blob": new_b},
            {"path": "sources/b.md", "reason": "past-end", "citation": "^[b.md:3-4]"},
        ],
    }
    later = next(item for item in pack["primary"] if item["id"] == "concepts/later")
    assert later["sources"] == [{"path": "sources/b.md", "blob": new_b, "recordedBlob": blob["b"]}]
    check = json.loads(repo.llmwiki("check", "--json").stdout)["problems"]
    assert {(p["path"], p["code"]) for p in check} == {("wiki/concepts/later.md", "stale-page")}

    async def body() -> None:
        async with session(repo.root, tmp_path / "server.log") as s:
            served = await ok(s, "get_context_pack", {"prompt": "walruses", "topPages": 8})
            assert {item["id"]: item["sourceFreshness"] for item in served["primary"]} == got

    run(body)
