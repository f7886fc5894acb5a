"""`llmwiki serve`: the MCP server in a real subprocess, driven by the SDK's own stdio client
(plus one in-process check that an unexpected exception is a tool error, not a dead server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import mcp  # the test extra installs the MCP SDK (pip install -e '.[test]')
import pytest

if int(version("mcp").split(".")[0]) != 2:
    raise ImportError(
        f"llmwiki serve targets mcp 2.x, found {version('mcp')}: pip install -e '.[test]'"
    )

import anyio  # noqa: E402
import jsonschema  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from ..conftest import REPO_ROOT, Repo, copy_demo  # noqa: E402

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
TOOLS = {
    "get_context_pack",
    "query_wiki",
    "search_pages",
    "read_page",
    "check_links",
    "review_list",
    "wiki_status",
    "propose_page",
}
PACK_SCHEMA = json.loads(
    (REPO_ROOT / "llmwiki_git" / "retrieval" / "context-pack.schema.json").read_text()
)


@pytest.fixture
def demo(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.commit("demo wiki")
    proc = repo.llmwiki("index", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert repo.git("status", "--porcelain") == ""
    return repo


@asynccontextmanager
async def session(root: Path, log: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "llmwiki_git", "serve", "--root", str(root)],
        env={**os.environ, **FAST},
        cwd=str(root),
    )
    with open(log, "w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


async def ok(s: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await s.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def refused(s: ClientSession, tool: str, args: dict[str, Any]) -> str:
    result = await s.call_tool(tool, args)
    assert result.is_error, result
    return result.content[0].text


def run(fn: Any) -> None:
    """anyio.run, re-raising a lone failure out of the task groups that wrap it."""
    try:
        anyio.run(fn)
    except BaseException as exc:  # noqa: BLE001
        leaf = exc
        while len(getattr(leaf, "exceptions", ())) == 1:
            leaf = leaf.exceptions[0]
        if leaf is exc:
            raise
        raise leaf from None


def test_tools_resources_and_confinement(demo: Repo, tmp_path: Path) -> None:
    root = demo.root
    (root / "notes.md").write_text("# Outside the wiki root\n")
    (root / "wiki" / "concepts" / "leak.md").symlink_to(
        "../../notes.md"
    )  # in the repo, out of the wiki
    (root / "wiki" / "concepts" / "escape.md").symlink_to("/etc/hostname")  # out of the repo
    (root / "wiki" / "diagram.txt").write_text("not a page\n")

    async def body() -> None:
        async with session(root, tmp_path / "server.log") as s:
            listed = (await s.list_tools()).tools
            assert {t.name for t in listed} == TOOLS
            for t in listed:
                assert t.input_schema["type"] == "object" and t.description and t.output_schema

            status = await ok(s, "wiki_status", {})
            assert status["root"] == str(root) and status["wikiRoot"] == "wiki"
            assert (
                status["concepts"] == 8
            )  # leak.md leaves the wiki, escape.md the repo: neither is a page and status["queries"] == 0 and status["indexed"] is True
            assert status["pendingCandidates"] == 0 and status["brokenLinks"] == 0

            pack = await ok(
                s,
                "get_context_pack",
                {"prompt": "how are review candidates approved?", "budget": 4000, "topPages": 3},
            )
            jsonschema.validate(pack, PACK_SCHEMA)
            assert (
                pack["version"] == 1
                and pack["primary"]
                and pack["budget"]["requestedTokens"] == 4000
            )

            found = await ok(
                s, "search_pages", {"query": "blob id hash of the content", "limit": 3}
            )
            assert 0 < len(found["pages"]) <= 3
            assert {"pageId", "title", "summary", "score", "path"} <= set(found["pages"][0])
            assert "concepts/blobs" in [p["pageId"] for p in found["pages"]]

            page = await ok(s, "read_page", {"pageId": "concepts/blobs"})
            assert page["path"] == "wiki/concepts/blobs.md" and page["title"] == "Blobs"
            assert page["frontmatter"]["aliases"] == ["blob", "blob id"] and page[
                "body"
            ].startswith("# Blobs")
            assert (await ok(s, "read_page", {"pageId": "blob id"}))[
                "pageId"
            ] == "concepts/blobs"  # an alias
            assert (await ok(s, "read_page", {"path": "wiki/concepts/trees.md"}))[
                "pageId"
            ] == "concepts/trees"
            assert (await ok(s, "read_page", {"path": "concepts/trees.md"}))[
                "pageId"
            ] == "concepts/trees"

            assert "'..'" in await refused(s, "read_page", {"path": "../../etc/passwd"})
            assert "'..'" in await refused(s, "read_page", {"pageId": "../../etc/passwd"})
            assert "absolute path" in await refused(s, "read_page", {"path": "/etc/passwd"})
            assert "absolute path" in await refused(s, "read_page", {"pageId": "/etc/passwd"})
            assert "outside the wiki root" in await refused(s, "read_page", {"path": "notes.md"})
            assert "page not found" in await refused(s, "read_page", {"pageId": "concepts/leak"})
            assert "no page at" in await refused(
                s, "read_page", {"path": "wiki/concepts/escape.md"}
            )
            assert "not a markdown page" in await refused(
                s, "read_page", {"path": "wiki/diagram.txt"}
            )
            assert "not a markdown page" in await refused(
                s, "read_page", {"path": ".llmwiki/config.toml"}
            )
            assert "page not found" in await refused(s, "read_page", {"pageId": "no-such-page"})
            assert "exactly one of pageId or path" in await refused(s, "read_page", {})

            links = await ok(
                s, "check_links", {"text": "See [[blobs]], [[Trees|the trees]] and [[missing]]."}
            )
            assert links == {
                "version": 1,
                "citations": [
                    {"target": "blobs", "status": "resolved", "pageId": "concepts/blobs"},
                    {"target": "trees", "status": "resolved", "pageId": "concepts/trees"},
                    {"target": "missing", "status": "broken"},
                ],
            }
            assert await ok(s, "review_list", {}) == {"version": 1, "candidates": []}

            # Bad arguments are tool errors, and the server answers the next call.
            assert "'budget': -5 is less than the minimum of 100" in await refused(
                s, "get_context_pack", {"prompt": "blobs", "budget": -5}
            )
            assert "missing required argument 'prompt'" in await refused(
                s, "get_context_pack", {"budget": 2000}
            )
            assert "'depth'" in await refused(
                s, "get_context_pack", {"prompt": "blobs", "depth": "deep"}
            )
            assert "unknown argument 'top_pages'" in await refused(
                s, "get_context_pack", {"prompt": "x", "top_pages": 2}
            )
            assert "'limit'" in await refused(s, "search_pages", {"query": "x", "limit": 0})
            assert "'provider'" in await refused(
                s, "query_wiki", {"question": "x", "provider": "bogus"}
            )
            assert "unknown tool" in await refused(s, "drop_tables", {})
            assert (await ok(s, "check_links", {"text": "[[commits]]"}))["citations"][0][
                "status"
            ] == "resolved"

            resources = (await s.list_resources()).resources
            uris = [str(r.uri) for r in resources]
            assert uris[0] == "llmwiki://index" and "llmwiki://page/concepts/blobs" in uris
            templates = (await s.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["llmwiki://page/{+pageId}"]
            index = (await s.read_resource("llmwiki://index")).contents[0]
            assert index.text.startswith("# Knowledge Wiki") and index.mime_type == "text/markdown"
            blob = (await s.read_resource("llmwiki://page/concepts/blobs")).contents[0]
            assert blob.text == (root / "wiki" / "concepts" / "blobs.md").read_text()
            with pytest.raises(mcp.MCPError, match="'..' segment"):
                await s.read_resource("llmwiki://page/../../etc/passwd")
            with pytest.raises(mcp.MCPError, match="page not found"):
                await s.read_resource("llmwiki://page/concepts/leak")
            assert (await ok(s, "wiki_status", {}))["pages"] == status["pages"]  # still serving

    run(body)


def test_query_wiki_answers_saves_and_stages(demo: Repo, tmp_path: Path) -> None:
    root = demo.root
    before = demo.git("rev-parse", "HEAD").strip()

    async def body() -> None:
        async with session(root, tmp_path / "server.log") as s:
            answer = await ok(s, "query_wiki", {"question": "what does a blob store?"})
            assert answer["version"] == 1 and answer["provider"] == {
                "name": "extractive",
                "model": "offline",
            }
            assert "[[blobs]]" in answer["answer"]
            cited = answer["answerCitations"]["citations"]
            assert {"target": "blobs", "status": "resolved", "pageId": "concepts/blobs"} in cited
            assert all(c["status"] == "resolved" for c in cited)
            assert answer["saved"] is None and answer["publicationRefusal"] is None
            assert (
                demo.git("rev-parse", "HEAD").strip() == before
                and demo.git("status", "--porcelain") == ""
            )

            assert "review=true requires save=true" in await refused(
                s, "query_wiki", {"question": "what does a blob store?", "review": True}
            )

            saved = await ok(s, "query_wiki", {"question": "what does a blob store?", "save": True})
            assert (
                saved["saved"] == "wiki/queries/what-does-a-blob-store.md"
                and saved["publicationRefusal"] is None
            )
            assert demo.git("rev-list", "--count", f"{before}..HEAD").strip() == "1"
            changed = demo.git("show", "--name-only", "--format=", "HEAD").split()
            assert saved["saved"] in changed and set(changed) <= {
                saved["saved"],
                "wiki/index.md",
                "log.md",
            }
            assert (await ok(s, "read_page", {"pageId": "what-does-a-blob-store"}))["frontmatter"][
                "type"
            ] == "query"

            staged = await ok(
                s, "query_wiki", {"question": "what is a tree?", "save": True, "review": True}
            )
            assert staged["candidateId"] and staged["saved"] is None
            rows = (await ok(s, "review_list", {}))["candidates"]
            assert [r["id"] for r in rows] == [staged["candidateId"]]
            assert rows[0]["target"] == "wiki/queries/what-is-a-tree.md"
            assert (await ok(s, "wiki_status", {}))["pendingCandidates"] == 1
            assert (
                demo.git("rev-list", "--count", f"{before}..HEAD").strip() == "1"
            )  # staging leaves HEAD alone

    run(body)


def test_unexpected_exception_is_a_tool_error(demo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmwiki_git import mcp_server
    from llmwiki_git.mcptools.evidence import SEARCH_PAGES

    def boom(ws: Any, args: dict[str, Any]) -> dict[str, Any]:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(SEARCH_PAGES, "handler", boom)
    monkeypatch.setenv("LLMWIKI_EMBEDDING_PROVIDER", "none")
    server = mcp_server.build_server(demo.root)

    async def body() -> None:
        async with mcp.Client(server) as client:
            result = await client.call_tool("search_pages", {"query": "blobs"})
            assert (
                result.is_error
                and result.content[0].text == "internal error: ZeroDivisionError: division by zero"
            )
            again = await client.call_tool("check_links", {"text": "[[blobs]]"})
            assert (
                not again.is_error
                and again.structured_content["citations"][0]["status"] == "resolved"
            )

    run(body)


def test_missing_sdk_is_a_clear_error(demo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmwiki_git import mcp_server
    from llmwiki_git.errors import LlmwikiError

    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` now raises ImportError
    with pytest.raises(
        LlmwikiError,
        match=r"llmwiki serve needs the MCP SDK: in your clone of llmwiki-git: pip install '\.\[local,mcp\]'",
    ):
        mcp_server.build_server(demo.root)


def test_search_and_context_pack_follow_the_wiki(demo: Repo, tmp_path: Path) -> None:
    """A page committed after `index` is found, a deleted one is gone, topPages is exact."""
    demo.write(
        "wiki/concepts/medlar.md", "---\ntitle: Medlar\n---\nA medlar is bletted until soft.\n"
    )
    demo.git("rm", "-q", "wiki/concepts/trees.md")
    demo.commit("after index")

    async def main() -> None:
        async with session(demo.root, tmp_path / "server.log") as s:
            found = await ok(s, "search_pages", {"query": "medlar bletted", "limit": 3})
            assert found["pages"][0]["pageId"] == "concepts/medlar" and found["warnings"] == []
            pack = await ok(
                s, "get_context_pack", {"prompt": "tree names modes blobs", "topPages": 2}
            )
            assert len(pack["primary"]) == 2 and pack["warnings"] == []
            assert "concepts/trees" not in [p["id"] for p in pack["primary"]]
            # The server reuses its page listing while no file changes, and notices when one does.
            demo.write(
                "wiki/concepts/quince.md",
                "---\ntitle: Quince\n---\nA quince is poached in syrup.\n",
            )
            found = await ok(s, "search_pages", {"query": "quince poached syrup", "limit": 3})
            assert found["pages"][0]["pageId"] == "concepts/quince"
            demo.commit("quince")
            (demo.root / "wiki" / "concepts" / "quince.md").unlink()
            found = await ok(s, "search_pages", {"query": "quince poached syrup", "limit": 3})
            assert (
                "concepts/quince" not in [p["pageId"] for p in found["pages"]]
                and found["warnings"] == []
            )

    run(main)


def test_hostile_vault_and_candidates_over_mcp(demo: Repo, tmp_path: Path) -> None:
    """Issue 12 over MCP: a symlink into .git never reaches an agent, a YAML alias bomb is
    refused at once, and one gitlink candidate does not break review_list."""
    from ..test_security import BOMB, TOKEN, forge

    root = demo.root
    demo.git("config", "remote.origin.url", f"https://user:{TOKEN}@example.com/r.git")
    (root / "wiki" / "concepts" / "gitcfg.md").symlink_to("../../.git/config")
    (root / "wiki" / "concepts" / "bomb.md").write_text(BOMB)
    tip = demo.git("rev-parse", "HEAD").strip()
    forge(demo, "sub-00000003", "wiki/queries/sub.md", "160000", sha=tip)
    forge(demo, "good-0000000a", "wiki/queries/good.md", content=b"A blob [[blobs]].\n")

    async def body() -> None:
        async with session(root, tmp_path / "server.log") as s:
            for tool, args in (
                ("get_context_pack", {"prompt": "remote origin url"}),
                ("query_wiki", {"question": "remote origin url"}),
                ("search_pages", {"query": "remote origin url"}),
            ):
                result = await s.call_tool(tool, args)
                assert TOKEN not in result.content[0].text
            assert "page not found" in await refused(s, "read_page", {"pageId": "concepts/gitcfg"})
            with anyio.fail_after(20):
                page = await ok(s, "read_page", {"pageId": "concepts/bomb"})
            assert (
                page["frontmatter"] == {} and page["warnings"][0]["code"] == "malformed-frontmatter"
            )
            listed = {c["id"]: c for c in (await ok(s, "review_list", {}))["candidates"]}
            assert listed["good-0000000a"]["citationStatus"] == "1 resolved, 0 pending, 0 broken"
            assert listed["sub-00000003"]["citationStatus"] == "malformed"

    run(body)


# --- frames that are not JSON-RPC requests (issue 22) ---------------------------------------

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
BAD_FRAMES = [
    ('{"jsonrpc":"2.0","id":5,"params":{}}', 5, -32600),  # no method
    ('{"jsonrpc":"2.0","id":6,"method":"tools/list","params":"x"}', 6, -32600),  # params a string
    ('{"jsonrpc":"1.0","id":7,"method":"tools/list"}', 7, -32600),  # not JSON-RPC 2.0
    (
        '{"jsonrpc":"2.0","method":"notifications/x","params":"s"}',
        None,
        -32600,
    ),  # no id to answer to
    ("[1, 2]", None, -32600),
    ("not json at all", None, -32700),
]


def test_frames_that_are_not_requests_get_a_json_rpc_error_and_the_server_goes_on(
    demo: Repo,
) -> None:
    """Each answered with Invalid Request (or Parse error) naming its id (null when it has
    none), in order; a valid request after them is still served."""
    import select

    proc = subprocess.Popen(
        [sys.executable, "-m", "llmwiki_git", "serve", "--root", str(demo.root)],
        cwd=demo.root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **FAST},
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(line: str) -> None:
        proc.stdin.write((line + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def reply() -> dict[str, Any]:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        if not ready:
            proc.kill()
            pytest.fail("no reply from the server")
        return json.loads(proc.stdout.readline())  # type: ignore[union-attr]

    try:
        send(json.dumps(INIT))
        assert reply()["id"] == 1
        send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for frame, frame_id, code in BAD_FRAMES:
            send(frame)
            answer = reply()
            assert answer["jsonrpc"] == "2.0" and answer["id"] == frame_id, (frame, answer)
            assert answer["error"]["code"] == code, (frame, answer)
        send('{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
        listed = reply()
        assert listed["id"] == 9 and {t["name"] for t in listed["result"]["tools"]} == TOOLS
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()


def test_every_tool_is_declared_once_and_documented() -> None:
    """Each tool of mcptools.TOOLS has a unique name, schemas that are JSON Schemas, a
    handler, and a section in docs/mcp.md naming every one of its arguments."""
    from jsonschema import Draft202012Validator

    from llmwiki_git.mcptools import TOOLS

    from ..conftest import REPO_ROOT

    docs = (REPO_ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert len({t.name for t in TOOLS}) == len(TOOLS)
    for tool in TOOLS:
        Draft202012Validator.check_schema(tool.input_schema)
        Draft202012Validator.check_schema(tool.output_schema)
        assert callable(tool.handler) and tool.description and tool.title
        heading = f"### `{tool.name}`"
        assert heading in docs, f"docs/mcp.md has no section {heading}"
        section = docs.split(heading, 1)[1].split("\n### ", 1)[0]
        for argument in tool.input_schema.get("properties", {}):
            assert f"`{argument}`" in section, (
                f"docs/mcp.md, {tool.name}: argument `{argument}` is not described"
            )
