"""Progress of long operations on standard error (issue 39; docs/json.md, "Progress lines"):
JSON lines with ``--json`` (standard output still the one JSON document), a bar on a
terminal, nothing on a pipe without ``--json``. The real CLI in fresh processes, a real
OpenAI-compatible embedding server on 127.0.0.1, both layouts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conftest import Repo, layout_prefix, page
from ..servers import json_response, serve

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


def embeddings_handler(path: str, body: dict[str, Any], headers: Any) -> Any:
    """An OpenAI-compatible embeddings endpoint: a 4-d vector from each text's length."""
    assert path == "/v1/embeddings", path
    data = [
        {"object": "embedding", "index": i, "embedding": [1.0, len(t) % 7 + 1.0, 0.5, 0.25]}
        for i, t in enumerate(body["input"])
    ]
    return json_response({"object": "list", "data": data, "model": body["model"]})


def progress_lines(stderr: str) -> list[dict[str, Any]]:
    """The progress records on ``stderr``; every line that starts with "{" must be one."""
    records = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert all(set(r) <= {"progress", "done", "total", "item"} for r in records), records
    return records


def on_a_terminal(cwd: Path, args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run the CLI with standard error on a pseudo-terminal: its exit code and what the
    terminal showed."""
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llmwiki_git", *args],
            cwd=cwd,
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=follower,
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        return proc.wait(timeout=120), shown.decode(errors="replace")
    finally:
        os.close(leader)


@pytest.fixture(params=["wiki", "vault"])
def pages(request: pytest.FixtureRequest, repo: Repo) -> Repo:
    """A committed wiki of 12 pages on one of the two layouts."""
    prefix = layout_prefix(repo, request.param)
    for i in range(12):
        body = f"Page {i} talks about topic {i} at length. " * 20
        repo.write(f"{prefix}concepts/page-{i}.md", page(f"Page {i}", body))
    repo.commit("pages")
    return repo


def test_index_json_prints_embedding_progress_lines_on_stderr(pages: Repo) -> None:
    with serve(embeddings_handler) as (url, _):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "k",
            "LLMWIKI_EMBEDDING_MODEL": "tiny",
        }
        proc = pages.llmwiki_process("index", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # standard output: the one JSON document
    assert summary["embedded"] > 0
    records = progress_lines(proc.stderr)
    assert records, proc.stderr
    assert {r["progress"] for r in records} == {"embed"}
    assert records[-1]["done"] == records[-1]["total"] == summary["embedded"]
    assert [r["done"] for r in records] == sorted(r["done"] for r in records)


def test_index_json_with_nothing_to_embed_prints_no_progress(pages: Repo) -> None:
    proc = pages.llmwiki_process("index", "--fast", "--json")
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
    assert progress_lines(proc.stderr) == []


def three_notes_in_an_inbox(repo: Repo, layout: str) -> None:
    """``layout``'s folders, and three notes committed in ``inbox/`` to ingest."""
    layout_prefix(repo, layout)
    for i in range(3):
        repo.write(f"inbox/note-{i}.md", f"# Note {i}\n\nSome text of note {i}.\n")
    repo.commit("inbox")


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_ingest_json_prints_a_progress_line_per_file_read(repo: Repo, layout: str) -> None:
    three_notes_in_an_inbox(repo, layout)
    proc = repo.llmwiki_process("ingest", "inbox", "--json", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["sources"]) == 3
    records = progress_lines(proc.stderr)
    assert records[0]["progress"] == "ingest" and records[0]["done"] == 1
    assert records[-1] == {
        "progress": "ingest",
        "done": 3,
        "total": 3,
        "item": records[-1]["item"],
    }
    assert records[-1]["item"].endswith("note-2.md")
    plain = repo.llmwiki_process("ingest", "inbox", env=FAST)  # a pipe, no --json: no progress
    assert plain.returncode == 0, plain.stderr
    assert progress_lines(plain.stderr) == [] and "Reading" not in plain.stderr


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_ingest_on_a_terminal_draws_a_bar(repo: Repo, layout: str) -> None:
    three_notes_in_an_inbox(repo, layout)
    code, shown = on_a_terminal(repo.root, ["ingest", "inbox"], FAST)
    assert code == 0, shown
    assert "Reading" in shown and "3/3" in shown, shown


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_compile_json_prints_progress_lines(repo: Repo, layout: str) -> None:
    layout_prefix(repo, layout)
    for i in range(2):
        repo.write(f"inbox/paper-{i}.md", f"# Paper {i}\n\nA paper about subject {i}, at length.\n")
    repo.commit("inbox")
    assert repo.llmwiki_process("ingest", "inbox", env=FAST).returncode == 0
    proc = repo.llmwiki_process("compile", "--json", env=FAST)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    records = progress_lines(proc.stderr)
    assert records and {r["progress"] for r in records} == {"compile"}, proc.stderr
    assert records[-1]["done"] == records[-1]["total"] == 2, (records, result)
