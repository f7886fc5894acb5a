"""Issue 22, item 6: the state folder's files are read with bounded depth and non-blocking
opens. A deeply nested `.llmwiki/embeddings.json` is a clear "corrupt" warning (never
"Internal error: RecursionError") in query, context, the MCP tools and `llmwiki index`, which
rebuilds it; a FIFO where a state file belongs never blocks a command, and `index` replaces
it. Real repositories, the real CLI (a hang is caught by a subprocess timeout, not timed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ..conftest import Repo
from ..test_security import demo_in

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
LOCAL = {"LLMWIKI_EMBEDDING_PROVIDER": "local"}
NESTED = "[" * 200_000 + "]" * 200_000


def run(repo: Repo, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The real CLI; a command that blocks fails the test instead of hanging it."""
    try:
        return subprocess.run(
            [*repo.llmwiki_cmd(), *args],
            cwd=repo.root,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"llmwiki {' '.join(args)} blocked on a state file")


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_a_deeply_nested_store_is_corrupt_not_a_crash_and_index_rebuilds_it(
    repo: Repo, layout: str, tmp_path: Path
) -> None:
    from ..mcptools.test_mcp import run as run_async
    from ..mcptools.test_mcp import session

    demo_in(repo, layout)
    assert repo.llmwiki("index", env=FAST).returncode == 0
    store = repo.root / ".llmwiki" / "embeddings.json"
    for name in ("embeddings.json", "embeddings.pages"):
        (repo.root / ".llmwiki" / name).unlink(missing_ok=True)
    store.write_text(NESTED)
    for args in (["query", "what is a blob?"], ["context", "what is a blob?", "--json"]):
        proc = repo.llmwiki(*args, env=FAST)
        assert proc.returncode == 0, proc.stderr
        assert "RecursionError" not in proc.stdout + proc.stderr
        assert (
            "embeddings.json is corrupt" in proc.stdout + proc.stderr
            and "nested" in proc.stdout + proc.stderr
        )

    async def body() -> None:
        async with session(repo.root, tmp_path / "server.log") as s:
            for tool, args in (
                ("wiki_status", {}),
                ("get_context_pack", {"prompt": "what is a blob?"}),
            ):
                result = await s.call_tool(tool, args)
                assert not result.is_error, result.content[0].text
                assert "RecursionError" not in result.content[0].text

    run_async(body)
    rebuilt = repo.llmwiki("index", "--json", env=FAST)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(store.read_text())["version"]
    assert "corrupt" not in repo.llmwiki("context", "what is a blob?", env=FAST).stderr


@pytest.mark.parametrize(
    "name,env", [("embeddings.bin", LOCAL), ("bm25/meta.json", FAST), ("ownership-notice", FAST)]
)
def test_a_fifo_where_a_state_file_belongs_never_blocks(
    repo: Repo, name: str, env: dict[str, str]
) -> None:
    if env is LOCAL:
        pytest.importorskip("onnxruntime")
    demo_in(repo, "vault")  # the user's own index.md: llmwiki keeps notices in its state folder
    assert run(repo, "index", env=env).returncode == 0
    fifo = repo.root / ".llmwiki" / name
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    context = run(repo, "context", "what is a blob?", "--json", env=env)
    assert context.returncode == 0, context.stderr
    assert "Traceback" not in context.stderr
    rebuilt = run(repo, "index", env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert run(repo, "context", "what is a blob?", env=env).returncode == 0
    assert not fifo.exists() or fifo.is_file() or name == "ownership-notice"


def test_other_state_files_nested_too_deeply_are_refused_clearly(repo: Repo) -> None:
    """The write journal and a committed `.llmwiki/config.toml` (a vault from elsewhere)."""
    demo_in(repo, "wiki")
    journal = repo.root / ".llmwiki" / "transaction.json"
    journal.write_text(NESTED)
    proc = repo.llmwiki("check", env=FAST)
    assert (
        proc.returncode == 0
        and "dropped an unreadable record of an interrupted write" in proc.stderr
    ), proc.stderr
    assert not journal.exists()
    (repo.root / ".llmwiki" / "config.toml").write_text(
        "wiki_dir = " + "[" * 100_000 + "]" * 100_000 + "\n"
    )
    proc = repo.llmwiki("check", env=FAST)
    assert proc.returncode == 2 and "config.toml: nested too deeply" in proc.stderr, proc.stderr


def test_a_store_longer_than_its_header_says_is_not_called_truncated(repo: Repo) -> None:
    pytest.importorskip("onnxruntime")
    demo_in(repo, "wiki")
    assert repo.llmwiki("index", env=LOCAL).returncode == 0
    vectors = repo.root / ".llmwiki" / "embeddings.bin"
    size = vectors.stat().st_size
    with open(vectors, "ab") as handle:
        handle.write(b"\0" * 4096)
    proc = repo.llmwiki("context", "what is a blob?", env=LOCAL)
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr  # the pack's warnings
    assert f"longer than its header says ({size + 4096} bytes, {size} expected)" in said, said
    assert "truncated" not in said
