"""A long-lived process (the MCP server) keeps what it loaded while it is current (issue 15):
the store, the lexical index and the embedder are reused across calls of its one workspace
(issue 24: on that workspace's retrieval service, not in a module global), and a re-index by
another process is picked up on the next call. Real CLI subprocesses, a real git repository,
a lexical-only index (no model needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmwiki_git.workspace import Workspace

from ..conftest import Repo, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_loaded_state_is_reused_until_another_process_reindexes(
    repo: Repo, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLMWIKI_EMBEDDING_PROVIDER", "none")
    if not prefix:
        repo.write("index.md", "# My own home page\n")
    repo.write(
        f"{prefix}concepts/apple.md", page("Apple", "Apple trees are pruned in late winter.")
    )
    repo.write(f"{prefix}concepts/pear.md", page("Pear", "Pear trees want a warm wall."))
    repo.commit("pages")
    assert repo.llmwiki("index", env=FAST).returncode == 0

    ws = Workspace.open(Path(repo.root), long_lived=True)
    first = ws.retrieval().load()
    second = ws.retrieval().load()
    assert second.store is first.store and second.lexical is first.lexical  # nothing reloaded
    cold = Workspace.open(Path(repo.root)).retrieval().load()  # warm state is the workspace's own:
    assert cold.store is not first.store  # another workspace (another command) starts cold

    repo.write(
        f"{prefix}concepts/quince.md", page("Quince", "Quincewright guild notes on quince jelly.")
    )
    repo.commit("quince")
    assert repo.llmwiki("index", env=FAST).returncode == 0  # another process re-indexes
    third = ws.retrieval().load()
    assert third.store is not first.store
    assert any(p.path.endswith("concepts/quince.md") for p in third.store.pages)
    loaded, result = ws.retrieval().search("quincewright jelly", max_pages=1)
    assert loaded.store is third.store
    assert result.pages and result.pages[0][0] == "concepts/quince"


def test_the_mcp_server_picks_up_a_reindex_by_another_process(repo: Repo, tmp_path: Path) -> None:
    """Through the SDK's stdio client: the warm server answers from what it loaded, and after
    another process commits a page and runs `llmwiki index`, the next call answers from that
    index (loaded from disk, not rebuilt by the server: the store file is the one written)."""
    import json
    import os
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    repo.write("wiki/concepts/apple.md", page("Apple", "Apple trees are pruned in late winter."))
    repo.write("wiki/concepts/pear.md", page("Pear", "Pear trees want a warm wall."))
    repo.commit("pages")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    store = Path(repo.root) / ".llmwiki" / "embeddings.json"

    async def body() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "llmwiki_git", "serve", "--root", str(repo.root)],
            env={**os.environ, **FAST},
            cwd=str(repo.root),
        )
        with open(tmp_path / "server.log", "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()

                    async def pack(prompt: str) -> list[str]:
                        result = await s.call_tool("get_context_pack", {"prompt": prompt})
                        assert not result.is_error, result.content[0].text
                        return [p["id"] for p in json.loads(result.content[0].text)["primary"]]

                    assert (await pack("apple pruning"))[0] == "concepts/apple"
                    assert (await pack("apple pruning"))[0] == "concepts/apple"  # warm
                    repo.write(
                        "wiki/concepts/quince.md",
                        page("Quince", "Quincewright guild notes on quince jelly."),
                    )
                    repo.commit("quince")
                    assert repo.llmwiki("index", env=FAST).returncode == 0  # another process
                    written = store.stat().st_ino
                    assert (await pack("quincewright jelly"))[0] == "concepts/quince"
                    assert store.stat().st_ino == written  # loaded, not refreshed by the server

    anyio.run(body)
