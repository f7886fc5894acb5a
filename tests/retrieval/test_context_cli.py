"""`llmwiki index` and `llmwiki context` end to end (lexical-only index: fast and model-free;
the local model is exercised in test_local_model.py)."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from ..conftest import REPO_ROOT, Repo, copy_demo

SCHEMA = json.loads(
    (REPO_ROOT / "llmwiki_git" / "retrieval" / "context-pack.schema.json").read_text()
)
FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


@pytest.fixture
def demo(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.commit("demo wiki")
    return repo


def context(repo: Repo, prompt: str, *args: str) -> dict:
    proc = repo.llmwiki("context", prompt, "--json", *args, env=FAST)
    assert proc.returncode == 0, proc.stderr
    pack = json.loads(proc.stdout)
    jsonschema.validate(pack, SCHEMA)
    return pack


def test_index_then_context_ranks_and_expands_graph(demo: Repo) -> None:
    proc = demo.llmwiki_process("index", "--json", env=FAST)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["pages"] == 8 and summary["backend"] == "none" and summary["embedded"] == 0
    assert demo.git("status", "--porcelain") == ""  # index.md unchanged, store ignored by git
    pack = context(demo, "update-ref compare and swap race")
    assert pack["primary"][0]["id"] == "concepts/compare-and-swap"
    assert pack["primary"][0]["reasons"] == ["body-match", "title-match"]
    assert pack["primary"][0]["chunks"][0]["text"].startswith("# Compare-and-swap ref updates")
    assert pack["primary"][0]["freshnessStatus"] == "fresh"
    neighbors = {(n["from"], n["to"], n["direction"]) for n in pack["neighbors"]}
    assert (
        ("concepts/compare-and-swap", "concepts/review-candidates", "outgoing") in neighbors
        or any(n["to"] == "concepts/review-candidates" for n in pack["neighbors"])
        or "concepts/review-candidates" in [p["id"] for p in pack["primary"]]
    )
    assert pack["project"] == {
        "root": str(demo.root / "examples" / "demo") if False else pack["project"]["root"],
        "pages": 8,
        "pendingCandidates": 0,
        "lint": None,
    }
    assert context(demo, "x y z", "--omit-root")["project"]["root"] is None


def test_context_without_index_degrades_lexically(demo: Repo) -> None:
    pack = context(demo, "what does a blob store")
    assert pack["warnings"][0]["code"] == "embedding-store-missing"
    assert pack["primary"][0]["id"] == "concepts/blobs"
    assert pack["suggestedActions"][0]["command"] == "llmwiki index"


def test_dangling_links_become_gaps_and_edits_since_index_are_followed(demo: Repo) -> None:
    demo.write(
        "wiki/concepts/blobs.md",
        "---\ntitle: Blobs\n---\n# Blobs\n\nA blob links to [[nowhere-page]].\n",
    )
    assert demo.llmwiki("index", env=FAST).returncode == 0
    pack = context(demo, "blob links nowhere")
    blobs = next(p for p in pack["primary"] if p["id"] == "concepts/blobs")
    assert {
        "code": "dangling-link",
        "message": "Page links to [[nowhere-page]], but no page exists.",
        "pageId": "concepts/blobs",
    } in pack["gaps"]
    demo.write(
        "wiki/concepts/blobs.md",
        "---\ntitle: Blobs\n---\n# Blobs\n\nRewritten since indexing: blob links.\n",
    )
    pack = context(demo, "blob links nowhere")
    blobs = next(p for p in pack["primary"] if p["id"] == "concepts/blobs")
    # The edit (uncommitted) is indexed by this call: fresh chunks, no stale gap, no warning.
    assert (
        blobs["freshnessStatus"] == "fresh" and blobs["warnings"] == [] and pack["warnings"] == []
    )
    assert [c["text"] for c in blobs["chunks"]] == [
        "# Blobs\n\nRewritten since indexing: blob links."
    ]
    assert not any(g["pageId"] == "concepts/blobs" for g in pack["gaps"])


def test_budget_trims_in_order(demo: Repo) -> None:
    assert demo.llmwiki("index", env=FAST).returncode == 0
    full = context(demo, "git commit tree blob", "--depth", "2")
    assert full["budget"]["truncated"] is False and full["neighbors"]
    small = context(demo, "git commit tree blob", "--depth", "2", "--budget", "600")
    assert small["budget"]["truncated"] is True
    assert small["budget"]["trimmedSections"][0] == "neighbors"
    assert small["neighbors"] == []
    assert small["budget"]["estimatedTokens"] <= 600 or small["primary"] == []
    assert (
        len(json.dumps(small, ensure_ascii=False, separators=(",", ":"))) // 4
        <= small["budget"]["estimatedTokens"] + 1
    )


def test_include_sources_is_confined_to_sources_folder(demo: Repo, tmp_path: Path) -> None:
    base = demo.root / "examples" / "demo" if (demo.root / "examples").exists() else demo.root
    (base / "sources").mkdir()
    (base / "sources" / "paper.md").write_text("\n".join(f"line {i}" for i in range(1, 61)))
    (tmp_path / "secret.md").write_text("top secret\n")
    os.symlink(tmp_path / "secret.md", base / "sources" / "escape.md")
    demo.write(
        "wiki/concepts/blobs.md",
        "---\ntitle: Blobs\n---\nBlob facts ^[paper.md:3-5] and ^[paper.md:10-99] "
        "^[../outside.md:1-2] ^[/etc/passwd:1-2] ^[escape.md:1-1] ^[paper.md].\n",
    )
    assert demo.llmwiki("index", env=FAST).returncode == 0
    pack = context(demo, "blob facts", "--include-sources")
    blobs = next(p for p in pack["primary"] if p["id"] == "concepts/blobs")
    assert blobs["sourceWindows"] == [
        {"file": "paper.md", "start": 3, "end": 5, "text": "line 3\nline 4\nline 5"},
        {
            "file": "paper.md",
            "start": 10,
            "end": 39,
            "text": "\n".join(f"line {i}" for i in range(10, 40)),
        },
    ]
    refused = [w["message"] for w in blobs["warnings"] if w["code"] == "source-window-unavailable"]
    assert (
        len(refused) == 3
        and "'..' segment" in refused[0]
        and "absolute" in refused[1]
        and "leaves sources/" in refused[2]
    )
    assert "top secret" not in json.dumps(pack)
    assert {"file": "paper.md"} in blobs["citations"]
    plain = context(demo, "blob facts")
    assert all(p["sourceWindows"] == [] for p in plain["primary"])
    markdown = demo.llmwiki("context", "blob facts", "--include-sources", env=FAST).stdout
    section = markdown.split("### Blobs (`concepts/blobs`)")[1].split("\n### ")[0]
    assert section.count("- warning: source-window-unavailable: ") == 3, (
        section
    )  # per-page warnings shown


def test_markdown_output_and_bad_options(demo: Repo) -> None:
    proc = demo.llmwiki("context", "trailers", env=FAST)
    assert proc.returncode == 0 and proc.stdout.startswith("# Context Pack\n")
    assert "### Commit trailers (`concepts/commit-trailers`)" in proc.stdout
    assert demo.llmwiki("context", "x", "--budget", "abc").returncode == 2


def test_schema_ships_in_package() -> None:
    text = resources.files("llmwiki_git.retrieval").joinpath("context-pack.schema.json").read_text()
    assert json.loads(text)["title"].startswith("llmwiki context pack")


def test_state_dir_is_created_ignored_by_git(repo: Repo) -> None:
    """A wiki that never had .llmwiki/: indexing and asking leave `git status` clean."""
    repo.write("wiki/concepts/alpha.md", "# Alpha\nAlpha is the first letter.\n")
    repo.commit("wiki")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    # the generated table of contents is the only new file the user sees
    assert repo.git("status", "--porcelain", "--untracked-files=all") == "?? wiki/index.md\n"
    repo.commit("generated index")
    assert repo.llmwiki("query", "what is alpha?", env=FAST).returncode == 0
    assert (repo.root / ".llmwiki" / "embeddings.json").is_file()
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    repo.write(".llmwiki/config.toml", 'wiki_dir = "wiki"\n')
    assert repo.git("status", "--porcelain", "--untracked-files=all") == "?? .llmwiki/config.toml\n"
