"""A fresh `llmwiki context` process (issue 15): it imports what it needs only, lists the
work tree once (in a thread, while the retrieval modules load) and still reports a listing
that fails. Real git repositories, both layouts, the real CLI in a fresh process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from ..conftest import Repo, page
from .test_follow_wiki import FAST, LAYOUTS, vault  # noqa: F401 - the fixture

NOT_FOR_CONTEXT = (
    "llmwiki_git.checks",
    "llmwiki_git.retrieval.indexer",
    "llmwiki_git.wiki.indexpage",
    "llmwiki_git.retrieval.embedding_onnx",
    "onnxruntime",
    "tempfile",
    "numpy.ma",
)


def test_context_imports_only_what_it_needs(vault: tuple[Repo, str]) -> None:  # noqa: F811
    repo, prefix = vault
    repo.write(
        f"{prefix}orchard/apple-pruning.md",
        page("Apple pruning", "Apple trees are pruned in late winter."),
    )
    repo.commit("a page to find")
    assert repo.llmwiki("index", "--fast", env=FAST).returncode == 0
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "llmwiki_git",
            "context",
            "apple pruning",
            "--json",
        ],
        cwd=repo.root,
        capture_output=True,
        text=True,
        env={**os.environ, **FAST},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["primary"]
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", proc.stderr, re.M))
    assert "llmwiki_git.retrieval.store" in imported  # the parse above read what was imported
    unwanted = sorted(
        m for m in imported if any(m == n or m.startswith(n + ".") for n in NOT_FOR_CONTEXT)
    )
    assert unwanted == []


def test_a_listing_that_fails_is_reported_not_fatal(vault: tuple[Repo, str]) -> None:  # noqa: F811
    """The listing runs in a thread: its error reaches the call, which ranks from the store
    and says that recent edits may be missing."""
    repo, prefix = vault
    repo.write(
        f"{prefix}orchard/apple-pruning.md",
        page("Apple pruning", "Apple trees are pruned in late winter."),
    )
    repo.commit("a page to find")
    assert repo.llmwiki("index", "--fast", env=FAST).returncode == 0
    (repo.root / ".git" / "index").write_bytes(b"DIRC broken")
    result = repo.llmwiki_process("context", "apple pruning", "--json", env=FAST)
    assert result.returncode == 0, result.stderr
    warnings = json.loads(result.stdout)["warnings"]
    assert [w["code"] for w in warnings] == ["index-freshness-unknown"]
    assert "index file" in warnings[0]["message"]


def test_every_kind_of_change_is_seen_by_the_next_fresh_call(vault: tuple[Repo, str]) -> None:  # noqa: F811
    """The one-call listing (index, modified and untracked files from a single `ls-files`)
    sees a committed rename, a staged edit, an unstaged edit, an untracked page and a
    deletion in the work tree; the call after it reads the store through its sidecar."""
    repo, prefix = vault
    repo.write(
        f"{prefix}orchard/apple-pruning.md",
        page("Apple pruning", "Apple trees are pruned in late winter."),
    )
    repo.write(f"{prefix}orchard/quince.md", page("Quince", "Quinces ripen late in the autumn."))
    repo.write(f"{prefix}orchard/medlar.md", page("Medlar", "Medlars are bletted before eating."))
    repo.write(
        f"{prefix}orchard/cherry.md", page("Cherry", "Cherries are netted against the birds.")
    )
    repo.commit("pages to change")
    assert repo.llmwiki("index", "--fast", env=FAST).returncode == 0
    repo.git("mv", f"{prefix}orchard/quince.md", f"{prefix}orchard/cydonia.md")
    repo.commit("a rename")
    repo.write(
        f"{prefix}orchard/medlar.md", page("Medlar", "Medlars are bletted until soft and brown.")
    )
    repo.git("add", f"{prefix}orchard/medlar.md")  # staged, not committed
    repo.write(
        f"{prefix}orchard/apple-pruning.md",
        page("Apple pruning", "Apple trees are pruned when dormant."),
    )
    repo.write(
        f"{prefix}orchard/walnut.md", page("Walnut", "Walnuts are gathered from the ground.")
    )  # untracked
    (repo.root / f"{prefix}orchard/cherry.md").unlink()  # deleted in the work tree only

    def pack(question: str) -> dict:
        result = repo.llmwiki_process("context", question, "--json", env=FAST)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def ids(question: str) -> list[str]:
        return [p["id"] for p in pack(question)["primary"]]

    assert ids("quinces ripen autumn")[:1] == ["orchard/cydonia"]
    assert "orchard/quince" not in ids("quinces ripen autumn")
    assert "soft and brown" in json.dumps(pack("medlars bletted"))
    assert "dormant" in json.dumps(pack("apple trees pruned"))
    assert ids("walnuts gathered ground")[:1] == ["orchard/walnut"]
    assert "orchard/cherry" not in ids("cherries netted birds")
    from llmwiki_git.retrieval import store as S

    state = repo.root / ".llmwiki"
    assert S._read_sidecar(state) is not None  # the refresh saved a store with its sidecar
    paths = S.load(state).path_blobs()
    assert f"{prefix}orchard/walnut.md" in paths and f"{prefix}orchard/cherry.md" not in paths


LOCAL = {"LLMWIKI_EMBEDDING_PROVIDER": "local"}


def test_a_dense_fresh_context_preloads_the_model_and_ranks_the_same(
    vault: tuple[Repo, str],
) -> None:  # noqa: F811
    """With vectors in the store, `context` starts the model in a thread (no graph
    optimizations: one question to embed) while the rest loads. Its pack is the one the
    service gives with the model made and loaded the ordinary way."""
    from llmwiki_git.retrieval.context import ContextOptions
    from llmwiki_git.workspace import Workspace

    repo, prefix = vault
    repo.write(
        f"{prefix}orchard/apple-pruning.md",
        page("Apple pruning", "Apple trees are pruned in late winter."),
    )
    repo.write(
        f"{prefix}orchard/quince.md",
        page("Quince", "Quinces ripen late in the autumn and keep for weeks."),
    )
    repo.commit("pages to find")
    assert repo.llmwiki("index", "--full", env=LOCAL).returncode == 0
    question = "when should I cut back my fruit trees"
    result = repo.llmwiki_process("context", question, "--json", env=LOCAL)
    assert result.returncode == 0, result.stderr
    fresh = json.loads(result.stdout)
    ordinary = (
        Workspace.open(repo.root, environ={**os.environ, **LOCAL})
        .retrieval()
        .context(question, ContextOptions())
    )
    assert fresh["warnings"] == ordinary["warnings"] == []
    assert [p["id"] for p in fresh["primary"]] == [p["id"] for p in ordinary["primary"]]
    assert "Apple pruning" in [p["title"] for p in fresh["primary"]]
    assert [c["text"] for c in fresh["primary"][0]["chunks"]] == [
        c["text"] for c in ordinary["primary"][0]["chunks"]
    ]
    for mine, theirs in zip(fresh["primary"], ordinary["primary"]):
        assert abs(mine["score"] - theirs["score"]) <= 0.01  # page scores are rounded to 2 places


def test_preload_hands_over_the_model_only_for_a_store_with_vectors(
    vault: tuple[Repo, str],
) -> None:  # noqa: F811
    from llmwiki_git.retrieval.embedders import preload_local
    from llmwiki_git.retrieval.store import stored_dimensions

    repo, _ = vault
    state = repo.root / ".llmwiki"
    handed: list[object] = []
    assert stored_dimensions(state) == 0  # the fixture's lexical-only store
    preload_local(state, handed.append)
    assert handed == [None]
    assert repo.llmwiki("index", "--full", env=LOCAL).returncode == 0
    assert stored_dimensions(state) == 384
    preload_local(state, handed.append)
    model = handed[-1]
    assert model is not None and model.optimize is False
    assert model._session is not None  # loaded by the time preload returns
    (state / "embeddings.bin").write_bytes(b"not a vectors file at all, not ours")
    assert stored_dimensions(state) == 0
