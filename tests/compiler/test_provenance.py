"""Provenance: a page names its sources in its frontmatter, the blobs are in the trailers of
the commit that wrote it; the one lookup answers "which pages does a source feed, with what
blob"; `review show`, `context --json` and MCP `propose_page` expose and record it."""

from __future__ import annotations

import json
from pathlib import Path

from llmwiki_git.gitstore.git import Git
from llmwiki_git.wiki.provenance import provenance, set_keys, source_paths, stamp

from ..conftest import Repo, page
from ..mcptools.test_mcp import FAST, ok, run, session

BLOB = "0123456789abcdef0123456789abcdef01234567"


def test_source_paths_read_both_forms_and_refuse_escapes() -> None:
    assert source_paths(
        ["sources/a.md", "b.md", "../x.md", "/etc/passwd", 3, "sources/a.md"], ""
    ) == ["sources/a.md", "sources/b.md"]
    assert source_paths("a.md", "docs") == ["docs/sources/a.md"]


def test_stamping_keeps_every_other_line_of_the_frontmatter() -> None:
    text = "---\ntitle: A  # mine\nzeta: [1, 2]\n# a comment\nsources: [old.md]\n---\nBody [[x]]\n"
    stamped = stamp(text, [("sources/a.md", BLOB)], "")
    assert stamped.startswith(
        "---\ntitle: A  # mine\nzeta: [1, 2]\n# a comment\nsources:\n- sources/a.md\n"
    )
    assert f"sourceBlobs:\n  sources/a.md: {BLOB}\n---\nBody [[x]]\n" in stamped
    assert (
        set_keys("Body\n", {"sources": ["sources/a.md"]})
        == "---\nsources:\n- sources/a.md\n---\n\nBody\n"
    )


def test_the_lookup_finds_the_blob_of_the_commit_that_wrote_the_page_from_the_source(
    repo: Repo,
) -> None:
    repo.write("wiki/concepts/a.md", "---\ntitle: A\nsources: [sources/s.md, t.md]\n---\nA.\n")
    repo.write("wiki/concepts/b.md", page("B", "No sources."))
    repo.git("add", "-A")
    repo.git(
        "commit",
        "-q",
        "-m",
        f"write a\n\nLlmwiki-Source: sources/s.md {BLOB}\nLlmwiki-Source: sources/t.md {'f' * 40}",
    )
    repo.write(
        "wiki/concepts/a.md",
        "---\ntitle: A\nsources: [sources/s.md, t.md]\n---\nA, edited by hand.\n",
    )
    repo.commit("a human edit records no source")
    git = Git(repo.root)
    texts = {p: (repo.root / p).read_text() for p in ("wiki/concepts/a.md", "wiki/concepts/b.md")}
    found = provenance(git, texts, "HEAD", "", "wiki")
    assert [(f.page, f.recorded) for f in found.feeds("sources/s.md")] == [
        ("wiki/concepts/a.md", BLOB)
    ]
    assert [(f.source, f.recorded) for f in found.of_page("wiki/concepts/a.md")] == [
        ("sources/s.md", BLOB),
        ("sources/t.md", "f" * 40),
    ]
    assert found.feeds("sources/other.md") == [] and found.of_page("wiki/concepts/b.md") == []


def test_propose_page_with_sources_records_them_as_compile_does(repo: Repo, tmp_path: Path) -> None:
    repo.write("wiki/concepts/blobs.md", page("Blobs", "A blob stores file contents."))
    repo.write(
        "sources/paper.md",
        "# Paper\n\nBlobs are content-addressed: their id is the hash of their bytes.\n",
    )
    repo.commit("wiki and a source")
    source_blob = repo.git("rev-parse", "HEAD:sources/paper.md").strip()
    path = "wiki/concepts/blobs.md"
    content = page(
        "Blobs", "A blob's id is the hash of its bytes ^[paper.md:3-3]. Quite so.", owner="me"
    )

    async def body() -> None:
        async with session(repo.root, tmp_path / "server.log") as s:
            read = await ok(s, "read_page", {"path": path})
            staged = await ok(
                s,
                "propose_page",
                {
                    "path": path,
                    "basedOn": read["blobId"],
                    "content": content,
                    "sources": ["sources/paper.md"],
                },
            )
            trailers = repo.git("log", "-1", "--format=%(trailers:only,unfold)", staged["branch"])
            assert f"Llmwiki-Source: sources/paper.md {source_blob}" in trailers
            proposed = repo.git("show", f"{staged['branch']}:{path}")
            assert "owner: me\nsources:\n- sources/paper.md\nsourceBlobs:\n" in proposed
            refused = await s.call_tool(
                "propose_page",
                {
                    "path": path,
                    "basedOn": read["blobId"],
                    "content": content,
                    "sources": ["sources/missing.md"],
                },
            )
            assert (
                refused.is_error
                and "sources/missing.md is not a file in sources/" in refused.content[0].text
            )

            shown = repo.llmwiki("review", "show", staged["candidateId"], env=FAST)
            assert f"source: sources/paper.md (blob {source_blob})" in shown.stdout
            assert (
                repo.llmwiki("review", "approve", staged["candidateId"], env=FAST).returncode == 0
            )
            assert repo.llmwiki("index", "--fast", env=FAST).returncode == 0
            pack = json.loads(
                repo.llmwiki(
                    "context", "content-addressed hash of bytes", "--json", env=FAST
                ).stdout
            )
            item = next(p for p in pack["primary"] if p["id"] == "concepts/blobs")
            assert item["sources"] == [
                {"path": "sources/paper.md", "blob": source_blob, "recordedBlob": source_blob}
            ]

    run(body)
