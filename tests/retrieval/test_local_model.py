"""The default local model end to end: index, reuse, incremental refresh, semantic context."""

from __future__ import annotations

import json

import pytest

from ..conftest import Repo, copy_demo

LOCAL = {"LLMWIKI_EMBEDDING_PROVIDER": "local"}


@pytest.fixture
def demo(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.commit("demo wiki")
    return repo


@pytest.fixture(params=["file", "postgresql"])
def stores(request: pytest.FixtureRequest) -> dict[str, str]:
    """The same tests on both vector stores: the file store, and the shared PostgreSQL store
    (a database of the session's embedded server, tests/conftest.py)."""
    if request.param == "file":
        return dict(LOCAL)
    return {**LOCAL, "LLMWIKI_VECTOR_STORE": request.getfixturevalue("pg_uri")}


def index(repo: Repo, *args: str, env: dict[str, str] = LOCAL) -> dict:
    proc = repo.llmwiki("index", "--json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_unchanged_chunks_are_never_reembedded(demo: Repo, stores: dict[str, str]) -> None:
    first = index(demo, env=stores)
    assert first["backend"] == "onnx-minilm" and first["embedded"] == first["chunks"] > 0
    again = index(demo, env=stores)
    assert (again["embedded"], again["reused"]) == (0, first["chunks"])
    demo.write(
        "wiki/concepts/trees.md",
        (demo.root / "wiki/concepts/trees.md").read_text() + "\nOne more paragraph about trees.\n",
    )
    edited = index(demo, env=stores)
    assert edited["embedded"] == 1 and edited["reused"] == first["chunks"] - 1
    full = index(demo, "--full", env=stores)
    assert full["embedded"] == full["chunks"]


def test_semantic_context_finds_a_paraphrase(demo: Repo, stores: dict[str, str]) -> None:
    index(demo, env=stores)
    proc = demo.llmwiki(
        "context", "two programs moving the same branch at once: who wins?", "--json", env=stores
    )
    assert proc.returncode == 0, proc.stderr
    pack = json.loads(proc.stdout)
    ids = [p["id"] for p in pack["primary"]]
    assert "concepts/compare-and-swap" in ids[:2]
    assert "semantic-chunk" in pack["primary"][0]["reasons"]
    assert pack["warnings"] == []


def test_store_of_another_model_is_not_mixed(demo: Repo) -> None:
    index(demo)
    store = demo.root / ".llmwiki" / "embeddings.json"
    meta = json.loads(store.read_text())
    meta["fingerprint"] = "someone-else:model:1"
    store.write_text(json.dumps(meta))
    proc = demo.llmwiki("context", "blob", "--json", env=LOCAL)
    pack = json.loads(proc.stdout)
    assert pack["warnings"][0]["code"] == "embedding-model-mismatch"
    assert all("semantic-chunk" not in p["reasons"] for p in pack["primary"])
    again = index(demo)
    assert again["embedded"] == again["chunks"]  # vectors of the other model were not reused


def test_a_fast_index_stays_fast_unless_asked(demo: Repo) -> None:
    """Regression: `index` after `index --fast` re-embedded everything without a word."""
    proc = demo.llmwiki("index", "--fast", "--json")
    assert json.loads(proc.stdout)["backend"] == "none"
    again = json.loads(demo.llmwiki("index", "--json").stdout)
    assert again["backend"] == "none" and "index --full" in again["notes"][0]
    full = json.loads(demo.llmwiki("index", "--full", "--json").stdout)
    assert full["backend"] == "onnx-minilm" and full["embedded"] == full["chunks"]


def test_index_progress_shows_count_rate_and_time_left(demo: Repo) -> None:
    """On a terminal the embedding bar says how many chunks, how far, how fast and how long
    is left (issue 15): run under a real pseudo-terminal, as a user would see it."""
    import os
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "llmwiki_git", "index"],
            cwd=demo.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
            env={**os.environ, **LOCAL},
            timeout=300,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            shown += data
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0, shown
    text = shown.decode("utf-8", "replace")
    chunks = json.loads(demo.llmwiki("index", "--json", "--full", env=LOCAL).stdout)["chunks"]
    assert f"Embedding {chunks} chunks" in text
    assert f"{chunks}/{chunks}" in text and "chunks/s" in text
    # The bar redraws itself in place: real carriage returns and cursor codes reach the
    # terminal, never their escaped text (issue 23: "\x0d\x1b[?25lEmbedding 11 chunks ...").
    assert "\\x0d" not in text and "\\x1b" not in text, text
    assert "\r" in text and "\x1b[?25l" in text and "\x1b[?25h" in text
    # Said first, with a time in the unit it takes: seconds for a small wiki, and no advice
    # to avoid a wait that is not one (it said "roughly 1 min" for a 3.7 s job).
    assert f"Embedding {chunks} new chunks, roughly" in text
    estimate = text.split(f"Embedding {chunks} new chunks, roughly ", 1)[1].split(" with", 1)[0]
    assert estimate.endswith(" s") and "`llmwiki index --fast`" not in text, estimate
